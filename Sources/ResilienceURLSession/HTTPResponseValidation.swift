public import Foundation
import Resilience

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Turns what `URLSession` returns into the body, or a thrown `HTTPResponseError`.
///
/// `URLSession` reports a 503 as a successful load; a retry policy only sees a
/// failure if something throws. Validate inside the operation:
///
/// ```swift
/// let body = try await policy.execute {
///     let (data, response) = try await session.data(for: request)
///     return try HTTPResponseValidation.validate(data, response, for: request).data
/// }
/// ```
///
/// Pass the request: the `HTTPResponseError` then records whether the request
/// may be repeated, and a `POST` answered 502 is not sent again.
///
/// `RetryPolicy.data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:)`
/// does this for you, and also knows the request's method.
public enum HTTPResponseValidation {
    /// The statuses accepted unless the caller says otherwise: every 2xx.
    public static let defaultAcceptableStatusCodes = 200..<300

    /// Returns the body and the HTTP response when the status is acceptable.
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - response: The response `URLSession` returned.
    ///   - request: The request that was sent; its method and `Idempotency-Key` decide
    ///     whether a failure may be retried (see `Idempotency`).
    ///   - acceptableStatusCodes: The statuses that count as success; defaults to 2xx.
    ///   - receivedAt: When the response arrived, for an HTTP-date `Retry-After` in a response
    ///     without a well-formed `Date` field (with one, the date is measured against it).
    /// - Returns: The body and the response as an `HTTPURLResponse`.
    /// - Throws: `HTTPResponseError` for any other status, or `URLError(.badServerResponse)`
    ///   when the response is not an HTTP response.
    public static func validate(
        _ data: Data,
        _ response: URLResponse,
        for request: URLRequest,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes,
        receivedAt: Date = Date()
    ) throws -> (data: Data, response: HTTPURLResponse) {
        try self.validate(
            data, response, idempotency: .http(request), acceptableStatusCodes: acceptableStatusCodes,
            receivedAt: receivedAt)
    }

    /// Returns the body and the HTTP response when the status is acceptable, not knowing the request.
    ///
    /// The `HTTPResponseError` it throws cannot say whether the request may be
    /// repeated, so the call's declaration decides (see `Idempotency`); prefer
    /// `validate(_:_:for:acceptableStatusCodes:receivedAt:)`.
    ///
    /// - Parameters:
    ///   - data: The body.
    ///   - response: The response `URLSession` returned.
    ///   - acceptableStatusCodes: The statuses that count as success; defaults to 2xx.
    ///   - receivedAt: When the response arrived, for an HTTP-date `Retry-After` in a response
    ///     without a well-formed `Date` field (with one, the date is measured against it).
    /// - Returns: The body and the response as an `HTTPURLResponse`.
    /// - Throws: `HTTPResponseError` for any other status, or `URLError(.badServerResponse)`
    ///   when the response is not an HTTP response.
    public static func validate(
        _ data: Data,
        _ response: URLResponse,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes,
        receivedAt: Date = Date()
    ) throws -> (data: Data, response: HTTPURLResponse) {
        try self.validate(
            data, response, idempotency: nil, acceptableStatusCodes: acceptableStatusCodes, receivedAt: receivedAt)
    }

    /// Validates the answer for a helper, or a public entry point.
    ///
    /// `followedRedirect`: the session followed a redirect before this answer, so an unacceptable
    /// status is the redirect target's and the request may have been acted on by the server that
    /// redirected; the error records `RequestDelivery.mayHaveBeenSent`.
    static func validate(
        _ data: Data,
        _ response: URLResponse,
        idempotency: Idempotency?,
        acceptableStatusCodes: Range<Int>,
        receivedAt: Date,
        followedRedirect: Bool = false
    ) throws -> (data: Data, response: HTTPURLResponse) {
        guard let http = response as? HTTPURLResponse else {
            var userInfo: [String: Any] = [:]
            if let idempotency { userInfo[ErrorHints.requestIdempotencyKey] = idempotency }
            if followedRedirect { userInfo[ErrorHints.requestDeliveryKey] = RequestDelivery.mayHaveBeenSent }
            throw URLError(.badServerResponse, userInfo: userInfo)
        }
        guard acceptableStatusCodes.contains(http.statusCode) else {
            throw HTTPResponseError(
                statusCode: http.statusCode,
                headers: self.headers(of: http),
                body: data,
                url: http.url,
                receivedAt: receivedAt,
                requestIdempotency: idempotency,
                recordedDelivery: followedRedirect ? .mayHaveBeenSent : nil
            )
        }
        return (data, http)
    }

    /// The response's headers as strings.
    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            headers[String(describing: name)] = String(describing: value)
        }
        return headers
    }
}
