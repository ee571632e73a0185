public import Foundation

/// A response whose HTTP status says the request failed.
///
/// It carries what a retry decision and a person reading the logs need: the
/// status, the response headers, the server's retry-after advice already
/// parsed (`Retry-After`, or the reset of a spent `RateLimit` quota), and the
/// start of the body, cut to a bounded length so a large error page cannot
/// bloat logs or memory.
///
/// It adopts ``HTTPStatusReporting`` and ``RetryAfterProviding``, so every
/// ``RetryPolicy`` understands it without configuration: 408 and a 5xx
/// (``DefaultRetryClassifier/retryableHTTPStatuses``) are retried when the
/// request is idempotent, 429 never is (its hint is still reported), and a
/// 503's `Retry-After` sets the least wait before the next attempt. It adopts ``IdempotencyReporting`` too: validated with the
/// request, it records whether the request may be repeated, so a `POST` answered
/// 503 is not sent again by this policy or by one wrapped around it.
///
/// ```swift
/// let (data, response) = try await session.data(for: request)
/// let body = try HTTPResponseValidation.validate(data, response, for: request).data  // throws on 503
/// ```
public struct HTTPResponseError: Error, HTTPStatusReporting, RetryAfterProviding, IdempotencyReporting,
    CustomStringConvertible
{
    /// The most body bytes kept in ``bodyExcerpt`` unless the caller asks otherwise.
    public static let defaultBodyExcerptLimit = 1_024

    /// The response's status code.
    public let statusCode: Int
    /// The response headers, with names as the server sent them.
    ///
    /// Header names are case-insensitive; look them up with ``headerValue(named:)``.
    public let headers: [String: String]
    /// The delay the server asked for, if any: the `Retry-After` header's (a date measured
    /// against the response's `Date` field when it has one), or the time to the latest reset
    /// of a quota the `RateLimit` field says is spent, whichever is longer.
    ///
    /// A malformed header or field asks for nothing.
    public let retryAfter: Duration?
    /// The first bytes of the body, decoded as UTF-8 (invalid bytes replaced), at most the limit given.
    public let bodyExcerpt: String
    /// The full length of the body in bytes, of which ``bodyExcerpt`` shows the start.
    public let bodyByteCount: Int
    /// The URL of the response, if known.
    public let url: URL?
    /// The idempotency of the request that got this response, when the validation knew the request.
    ///
    /// It travels with the error, so a policy wrapped around the call that threw it
    /// does not re-send a `POST` either.
    public let requestIdempotency: Idempotency?
    /// How far the request the caller sent got, when the response alone would say less;
    /// `nil` when the response speaks for that request.
    ///
    /// The HTTP helpers of `ResilienceURLSession` record ``RequestDelivery/mayHaveBeenSent``
    /// when the session followed a redirect before this answer. The response is then the
    /// redirect target's, an answer to another request, and the redirect itself was an answer
    /// to the caller's: that server received it and may have acted on it (Post/Redirect/Get).
    /// A 401 from the target proves nothing of the first request, so a `POST` so answered is
    /// not refreshed and sent again. ``FailureAnalysis`` reads the record as it reads
    /// ``ErrorHints/requestDeliveryKey``: of all the chain says, what takes the request
    /// farthest wins.
    public let recordedDelivery: RequestDelivery?
    /// How many body bytes ``bodyExcerpt`` was decoded from: the excerpt's own UTF-8 length
    /// can differ, when the cut split a character and its bytes decoded to a replacement
    /// character.
    private let excerptByteCount: Int

    /// The status code, for ``HTTPStatusReporting``.
    public var httpStatusCode: Int? { self.statusCode }

    /// Creates the error for a response, parsing `Retry-After` and cutting the body excerpt.
    ///
    /// - Parameters:
    ///   - statusCode: The response's status code.
    ///   - headers: The response headers.
    ///   - body: The response body; only its first `bodyExcerptLimit` bytes are kept.
    ///   - url: The response's URL, if known.
    ///   - receivedAt: When the response arrived. An HTTP-date `Retry-After` is measured from
    ///     the response's `Date` field when `headers` has a well-formed one (RFC 9110, section
    ///     10.2.3: the wait the server meant, whatever this device's clock says), and from
    ///     `receivedAt` otherwise.
    ///   - bodyExcerptLimit: The most body bytes to keep; negative counts as zero.
    ///   - requestIdempotency: The idempotency of the request, if known (see ``Idempotency``).
    ///   - recordedDelivery: How far the request got when the response alone would say less,
    ///     such as ``RequestDelivery/mayHaveBeenSent`` for the answer of a redirect's target;
    ///     `nil` when the response speaks for the request (see ``recordedDelivery``).
    public init(
        statusCode: Int,
        headers: [String: String] = [:],
        body: Data = Data(),
        url: URL? = nil,
        receivedAt: Date = Date(),
        bodyExcerptLimit: Int = HTTPResponseError.defaultBodyExcerptLimit,
        requestIdempotency: Idempotency? = nil,
        recordedDelivery: RequestDelivery? = nil
    ) {
        self.statusCode = statusCode
        self.recordedDelivery = recordedDelivery
        self.headers = headers
        self.url = url
        self.requestIdempotency = requestIdempotency
        self.bodyByteCount = body.count
        let excerpt = body.prefix(Swift.max(bodyExcerptLimit, 0))
        self.excerptByteCount = excerpt.count
        self.bodyExcerpt = String(decoding: excerpt, as: UTF8.self)
        self.retryAfter = Self.serverHint(receivedAt: receivedAt) { Self.headerValue(named: $0, in: headers) }
    }

    /// The delay a response's fields ask for: its `Retry-After` (a date measured against its
    /// `Date` field when it has a well-formed one, else from `receivedAt`), or the time to the
    /// latest reset of a quota its `RateLimit` field says is spent, whichever is longer.
    ///
    /// - Parameter field: The value of the field with the given name, or `nil`.
    static func serverHint(receivedAt: Date, field: (String) -> String?) -> Duration? {
        let requested = field("Retry-After").flatMap {
            RetryAfterHeader.delay(parsing: $0, dateField: field("Date"), receivedAt: receivedAt)
        }
        // A `RateLimit` field with no quota left is a server hint like `Retry-After`.
        let quotaReset = field(RateLimitHeader.fieldName).flatMap { RateLimitHeader.exhaustedFor(parsing: $0) }
        guard let requested else { return quotaReset }
        guard let quotaReset else { return requested }
        return Swift.max(requested, quotaReset)
    }

    /// The value of the header called `name`, compared case-insensitively, or `nil`.
    public func headerValue(named name: String) -> String? {
        Self.headerValue(named: name, in: self.headers)
    }

    /// `HTTP 503 from http://…: <excerpt>`.
    public var description: String {
        var text = "HTTP \(self.statusCode)"
        if let url = self.url { text += " from \(url.absoluteString)" }
        if let retryAfter = self.retryAfter { text += " (retry after \(retryAfter))" }
        if !self.bodyExcerpt.isEmpty {
            text += ": \(self.bodyExcerpt)"
            if self.bodyByteCount > self.excerptByteCount { text += "…" }
        }
        return text
    }

    private static func headerValue(named name: String, in headers: [String: String]) -> String? {
        if let exact = headers[name] { return exact }
        return headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
