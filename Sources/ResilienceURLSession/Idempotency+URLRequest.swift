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
    ///
    /// A request whose body is a stream (`httpBodyStream`) is not idempotent, whatever
    /// its method and headers: sending it reads the stream to its end, and the same
    /// request sent again would carry an empty body (a `PUT` would store nothing, the
    /// server answering success). So no policy sends it a second time once it may have
    /// reached the server. To have such an upload retried, give each attempt a fresh
    /// stream (or set `httpBody`) inside `RetryPolicy.execute(idempotency:operation:)`.
    public static func http(_ request: URLRequest) -> Idempotency {
        let method = request.httpMethod ?? "GET"
        if request.httpBodyStream != nil { return .notIdempotent(method: method) }
        return self.http(method: method, headers: request.allHTTPHeaderFields ?? [:])
    }
}
