import Foundation

/// An HTTP response that an error holds as a value (``HTTPResponseReporting``), taken into
/// the error's chain as an error that reports the response's status and its server's hint.
///
/// The walk (`ErrorChain`) makes one where it finds such a response among an error's stored
/// values or `userInfo` values, so every rule reads it as it reads an ``HTTPResponseError``.
/// It keeps the facts, not the response, and wraps nothing: reflection passes it over.
struct HeldHTTPResponse: Error, HTTPStatusReporting, RetryAfterProviding, UnderlyingErrorProviding {
    /// The response's status, one that says the request failed (400 to 599).
    let httpStatusCode: Int?
    /// The server's hint: `Retry-After` (a date measured against the `Date` field when the
    /// response has one, else from the moment it was found), or a spent `RateLimit` quota's reset.
    let retryAfter: Duration?

    /// It wraps nothing.
    var underlyingErrors: [any Error] { [] }

    /// The response `value` is, when it is an HTTP response whose status says the request
    /// failed; `nil` for any other value, a response with a status of success included.
    init?(_ value: Any) {
        guard let response = value as? any HTTPResponseReporting else { return nil }
        let status = response.statusCode
        guard (400...599).contains(status) else { return nil }
        self.httpStatusCode = status
        self.retryAfter = HTTPResponseError.serverHint(receivedAt: Date()) {
            response.value(forHTTPHeaderField: $0)
        }
    }
}
