public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension RetryPolicy {
    /// Loads `request` through `session`, retrying what is safe to retry, and
    /// returns the body and response of the first acceptable answer.
    ///
    /// Each attempt sends the request and validates the status with
    /// ``HTTPResponseValidation``, so an unacceptable status fails the attempt with
    /// an ``HTTPResponseError`` that carries the parsed `Retry-After`. The policy's
    /// classifier then decides, knowing the request's method: ``HTTPRetryClassifier``
    /// and ``DefaultRetryClassifier`` do not resend a `POST` (or any non-idempotent
    /// method) after a failure the server may already have acted on, such as a
    /// timeout or a dropped connection, unless `allowsNonIdempotentRetries` is set.
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
    ///   - isolation: The actor the call runs on; inferred from the caller.
    /// - Returns: The body and the HTTP response.
    /// - Throws: The last attempt's error, unchanged: an ``HTTPResponseError``, a `URLError`, or
    ///   `CancellationError`.
    public func data(
        for request: URLRequest,
        session: URLSession = .shared,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes,
        allowsNonIdempotentRetries: Bool = false,
        isolation: isolated (any Actor)? = #isolation
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        let scope = HTTPRequestScope(
            method: (request.httpMethod ?? "GET").uppercased(),
            allowsNonIdempotentRetries: allowsNonIdempotentRetries
        )
        return try await HTTPRequestScope.$current.withValue(scope) {
            try await self.execute {
                let (data, response) = try await session.data(for: request)
                return try HTTPResponseValidation.validate(
                    data, response, acceptableStatusCodes: acceptableStatusCodes)
            }
        }
    }
}
