public import Resilience

#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension Idempotency {
    /// The idempotency of `request`: its method (GET when it has none), or an
    /// `Idempotency-Key` header that makes any method safe to repeat.
    public static func http(_ request: URLRequest) -> Idempotency {
        self.http(method: request.httpMethod ?? "GET", headers: request.allHTTPHeaderFields ?? [:])
    }
}
