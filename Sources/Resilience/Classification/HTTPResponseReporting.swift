/// A value that is an HTTP response: its status code and its header fields.
///
/// Apps and SDKs often keep the response a request failed with, rather than an error
/// that reports its status: `enum APIError: Error { case http(HTTPURLResponse, Data) }`,
/// or an `NSError` with the response under a `userInfo` key of the SDK's own. The
/// rules read such a response where they look for errors (among an error's stored
/// values, a few levels deep, and among the values of its `userInfo`), so an HTTP 429
/// held this way is never retried either, and its `Retry-After` or spent `RateLimit`
/// quota is the server's hint, as for an ``HTTPResponseError``.
///
/// `HTTPURLResponse` adopts it: on Apple platforms in this module, and on Linux, where
/// the type lives in FoundationNetworking, in `ResilienceURLSession` (link that module
/// for the rules to see a held `HTTPURLResponse` there). Adopt it for an HTTP client's
/// own response type:
///
/// ```swift
/// struct ClientResponse: HTTPResponseReporting {
///     var statusCode: Int
///     var headers: [String: String]
///
///     func value(forHTTPHeaderField field: String) -> String? {
///         headers.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
///     }
/// }
/// ```
///
/// Only a response whose status says the request failed (400 to 599) is read, as an
/// error that reports that status: a held `200` beside a decoding failure says the request
/// succeeded and the failure lies elsewhere. The values are looked for on failure paths
/// only, within the bounds of the walk through an error's chain.
public protocol HTTPResponseReporting {
    /// The response's status code.
    var statusCode: Int { get }
    /// The value of the header field called `field`, compared case-insensitively, or `nil`.
    func value(forHTTPHeaderField field: String) -> String?
}
