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
    /// A request whose body is a stream (`httpBodyStream`) is declared not idempotent, whatever
    /// its method and `allowsNonIdempotentRetries`: a stream is read once, and a request sent
    /// again with it would carry an empty body (see ``Idempotency/http(_:)``).
    ///
    /// - Parameters:
    ///   - request: The request the policy will send.
    ///   - allowsNonIdempotentRetries: Take every request as idempotent. Set it only when the
    ///     server deduplicates, for example by an `Idempotency-Key` header.
    public init(request: URLRequest, allowsNonIdempotentRetries: Bool = false) {
        let idempotency = Idempotency.http(request)
        self.init(
            method: idempotency.method ?? "GET",
            allowsNonIdempotentRetries: allowsNonIdempotentRetries || idempotency.isIdempotent,
            bodyIsReadOnce: request.httpBodyStream != nil)
    }
}
