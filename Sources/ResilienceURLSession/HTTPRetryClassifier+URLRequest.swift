public import Resilience

#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension HTTPRetryClassifier {
    /// Creates a classifier for `request`'s method (GET when it has none) and its `Idempotency-Key`.
    ///
    /// - Parameters:
    ///   - request: The request the policy will send.
    ///   - allowsNonIdempotentRetries: Take every request as idempotent. Set it only when the
    ///     server deduplicates, for example by an `Idempotency-Key` header.
    public init(request: URLRequest, allowsNonIdempotentRetries: Bool = false) {
        let idempotency = Idempotency.http(request)
        self.init(
            method: idempotency.method ?? "GET",
            allowsNonIdempotentRetries: allowsNonIdempotentRetries || idempotency.isIdempotent)
    }
}
