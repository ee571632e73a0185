public import Foundation
public import Resilience

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension ResiliencePipeline {
    /// Loads `request` through `session` and every stage, and returns the body and
    /// response of the first acceptable answer.
    ///
    /// The call is declared with the request's `Idempotency`, so no stage
    /// repeats a `POST` the server may have acted on, and an unacceptable status
    /// fails the attempt with an `HTTPResponseError`, as
    /// `RetryPolicy.data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:)` does.
    ///
    /// A request whose body is a stream (`httpBodyStream`) is not idempotent, whatever its
    /// method (see `Idempotency.http(_:)`): the first send reads the stream to its end, so no
    /// stage sends it again (a retry, a hedge) unless a failure proves it never left. The
    /// stream is never read into memory; to have an upload retried, set `httpBody`.
    ///
    /// - Parameters:
    ///   - request: The request to send.
    ///   - session: The session that sends it; `URLSession.shared` unless given.
    ///   - acceptableStatusCodes: The statuses that count as success; defaults to 2xx.
    /// - Returns: The body and the HTTP response.
    /// - Throws: What the outermost stage ends the call with.
    public nonisolated(nonsending) func data(
        for request: URLRequest,
        session: URLSession = .shared,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        let idempotency = Idempotency.http(request)
        return try await self.execute(idempotency: idempotency) { @Sendable in
            let (data, response, redirected) = try await session.helperData(for: request, idempotency: idempotency)
            return try HTTPResponseValidation.validate(
                data, response, idempotency: idempotency, acceptableStatusCodes: acceptableStatusCodes,
                receivedAt: Date(), followedRedirect: redirected)
        }
    }
}
