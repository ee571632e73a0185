public import Foundation
public import Resilience

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension RetryPolicy {
    /// Loads `request` through `session`, retrying what is safe to retry, and
    /// returns the body and response of the first acceptable answer.
    ///
    /// Each attempt sends the request and validates the status with
    /// ``HTTPResponseValidation``, so an unacceptable status fails the attempt with
    /// an `HTTPResponseError` that carries the parsed `Retry-After`. The policy's
    /// call is declared with the request's `Idempotency` (its method, or an
    /// `Idempotency-Key` header), so the `Rulebook` never re-sends a `POST` after
    /// a failure the server may already have acted on (a timeout, a dropped
    /// connection, a 502 or a 503), unless `allowsNonIdempotentRetries` is set. The
    /// errors it throws carry the same fact, so a policy wrapped around this call
    /// does not re-send the request either.
    ///
    /// A request whose body is a stream (`httpBodyStream`) is sent again only after a
    /// failure that proves it never left: the first send reads the stream to its end, and
    /// a second would carry an empty body. Any other failure ends the call with its own
    /// error (``RetryStopReason/notIdempotent``), even with `allowsNonIdempotentRetries`.
    /// The stream is never read into memory; to have an upload retried, set `httpBody`,
    /// or give each attempt a fresh stream inside `execute(idempotency:operation:)`.
    ///
    /// ```swift
    /// let policy = try RetryPolicy(maximumAttempts: 4)
    /// let (data, _) = try await policy.data(for: URLRequest(url: statusURL))
    /// ```
    ///
    /// Bound each attempt with the request's `timeoutInterval` (or the session's
    /// `timeoutIntervalForRequest`). On Linux, FoundationNetworking counts these in
    /// whole seconds, and an interval under one second times out at once.
    ///
    /// - Parameters:
    ///   - request: The request to send; its `httpMethod` decides what may be retried.
    ///   - session: The session that sends it; `URLSession.shared` unless given.
    ///   - acceptableStatusCodes: The statuses that count as success; defaults to 2xx.
    ///   - allowsNonIdempotentRetries: Resend a non-idempotent request even when the server may
    ///     have acted on it; set it only when the server deduplicates (an idempotency key).
    /// - Returns: The body and the HTTP response.
    /// - Throws: The last attempt's error, unchanged: an `HTTPResponseError`, a `URLError`, or
    ///   `CancellationError`.
    public nonisolated(nonsending) func data(
        for request: URLRequest,
        session: URLSession = .shared,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes,
        allowsNonIdempotentRetries: Bool = false
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        let idempotency = Self.idempotency(of: request, allowsNonIdempotentRetries: allowsNonIdempotentRetries)
        return try await self.execute(idempotency: idempotency) {
            // The request's idempotency travels with its error, so a policy wrapped around
            // this call does not re-send it either; so does a redirect followed before it.
            let (data, response, redirected) = try await session.helperData(for: request, idempotency: idempotency)
            return try HTTPResponseValidation.validate(
                data, response, idempotency: idempotency, acceptableStatusCodes: acceptableStatusCodes,
                receivedAt: Date(), followedRedirect: redirected)
        }
    }

    /// The idempotency a helper declares for `request`: its own (``Idempotency/http(_:)``), or
    /// idempotent when the caller allows non-idempotent retries, unless its body is a stream,
    /// which no server's deduplication makes safe to send twice.
    static func idempotency(of request: URLRequest, allowsNonIdempotentRetries: Bool) -> Idempotency {
        allowsNonIdempotentRetries && request.httpBodyStream == nil ? .idempotent : .http(request)
    }

    /// `error` with `idempotency` recorded in its `userInfo`, and, when the session followed a
    /// redirect before the failure, that the request may have been sent; still a `URLError`
    /// with the same code.
    static func annotated(_ error: URLError, idempotency: Idempotency, redirected: Bool) -> URLError {
        var userInfo = error.userInfo
        userInfo[ErrorHints.requestIdempotencyKey] = idempotency
        if redirected { userInfo[ErrorHints.requestDeliveryKey] = RequestDelivery.mayHaveBeenSent }
        return URLError(error.code, userInfo: userInfo)
    }
}
