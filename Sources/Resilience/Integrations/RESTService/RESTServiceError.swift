/// A failure reported by an SDK that talks to a REST backend, such as the Kii
/// Cloud SDK: the SDK's own error code, the HTTP status, and the server's error
/// code and message.
///
/// Such SDKs hand back an `NSError` whose `code` is the SDK's own number, not an
/// HTTP status: Kii reports a duplicate user as code 503 ("Duplicate entry
/// exists") with HTTP status 409 and server code `USER_ALREADY_EXISTS`. Reading
/// that 503 as "Service Unavailable" would retry a request that can never
/// succeed. Copy the fields into this type where the SDK's error surfaces, and
/// ``RESTServiceErrorClassifier`` judges them in the right order: SDK code first,
/// then server code, then HTTP status.
///
/// ```swift
/// // Kii's accessors on NSError: kiiHttpStatus(), kiiErrorSummary(), kiiErrorMessage().
/// func restError(_ error: NSError) -> RESTServiceError {
///     RESTServiceError(
///         sdkCode: error.code,
///         httpStatus: error.kiiHttpStatus()?.intValue,
///         serverErrorCode: error.kiiErrorSummary(),
///         message: error.kiiErrorMessage(),
///         underlying: error
///     )
/// }
/// ```
///
/// It reports its status through ``HTTPStatusReporting``, so a 429 stops every
/// ``RetryPolicy`` at once, as Kii's guidance asks.
public struct RESTServiceError: Error, HTTPStatusReporting, RetryAfterProviding, UnderlyingErrorProviding,
    CustomStringConvertible
{
    /// The SDK's own error code; 0 when the SDK gave none.
    ///
    /// Not an HTTP status, even when it looks like one.
    public var sdkCode: Int
    /// The HTTP status of the REST response, or `nil` when the SDK failed before or without one.
    public var httpStatus: Int?
    /// The server's error code, such as `USER_ALREADY_EXISTS`, or `nil`.
    public var serverErrorCode: String?
    /// The server's or SDK's message, for people; never used for decisions.
    public var message: String?
    /// The server's advice on when to try again, if it gave any.
    public var retryAfter: Duration?
    /// The error the SDK reported, kept for logs and for classifying failures without a response.
    public var underlying: (any Error)?

    /// Creates the error from the SDK's fields.
    ///
    /// - Parameters:
    ///   - sdkCode: The SDK's error code; 0 when none.
    ///   - httpStatus: The HTTP status, if a response arrived.
    ///   - serverErrorCode: The error code in the response body, if any.
    ///   - message: A human-readable message.
    ///   - retryAfter: The server's retry-after advice, if any.
    ///   - underlying: The SDK's original error.
    public init(
        sdkCode: Int = 0,
        httpStatus: Int? = nil,
        serverErrorCode: String? = nil,
        message: String? = nil,
        retryAfter: Duration? = nil,
        underlying: (any Error)? = nil
    ) {
        self.sdkCode = sdkCode
        self.httpStatus = httpStatus
        self.serverErrorCode = serverErrorCode
        self.message = message
        self.retryAfter = retryAfter
        self.underlying = underlying
    }

    /// The HTTP status, for ``HTTPStatusReporting``.
    public var httpStatusCode: Int? { self.httpStatus }

    /// ``underlying``, for ``UnderlyingErrorProviding``: a 429 or a hint below it still counts.
    public var underlyingErrors: [any Error] { self.underlying.map { [$0] } ?? [] }

    /// `REST error (code 503, HTTP 409, USER_ALREADY_EXISTS): message`.
    public var description: String {
        var parts = ["code \(self.sdkCode)"]
        if let status = self.httpStatus { parts.append("HTTP \(status)") }
        if let code = self.serverErrorCode { parts.append(code) }
        var text = "REST error (\(parts.joined(separator: ", ")))"
        if let message = self.message { text += ": \(message)" }
        return text
    }
}
