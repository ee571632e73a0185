public import Foundation
public import Resilience

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The request headers through which the HTTP helper tells the server what the
/// client is doing: the attempt number, and how long the client will still wait.
///
/// Google's *Site Reliability Engineering* book asks clients to send the attempt
/// count with each request (a server under load can shed retries first) and to
/// propagate deadlines (a server need not finish work nobody waits for). Name the
/// headers your server reads; `nil` sends nothing.
///
/// ```swift
/// let headers = RetryRequestHeaders(timeLeft: "X-Request-Timeout-Ms", attempt: "X-Retry-Attempt")
/// let (data, _) = try await policy.data(for: request, sending: headers)
/// ```
public struct RetryRequestHeaders: Sendable, Hashable {
    /// The header for the time left before the deadline, in whole milliseconds; `nil` for none.
    ///
    /// The time left is the shorter of the policy's `RetryPolicy.deadline` and that
    /// of any enclosing policy. It is sent only when there is a deadline.
    public var timeLeft: String?
    /// The header for the attempt number, 1 for the first; `nil` for none.
    public var attempt: String?

    /// Names the headers.
    public init(timeLeft: String? = nil, attempt: String? = nil) {
        self.timeLeft = timeLeft
        self.attempt = attempt
    }

    /// `request` with the attempt number and the time left in the named headers, and
    /// its `timeoutInterval` cut to the time left.
    ///
    /// On Linux, FoundationNetworking counts `timeoutInterval` in whole seconds, dropping
    /// the fraction (Swift 6.3), so a cut to 0.9 s would time the request out at once.
    /// There the cut is rounded up to whole seconds, never below one: the request may
    /// then run up to that rounding (less than a second) past the deadline. The time
    /// left sent in the header is exact either way.
    ///
    /// - Parameters:
    ///   - request: The request to annotate.
    ///   - attempt: The attempt number, 1 for the first.
    ///   - timeLeft: The time left before the deadline, or `nil` for none; a negative value counts as
    ///     zero, and one beyond the package's longest duration (about 146 years) as that longest.
    public func applied(to request: URLRequest, attempt: Int, timeLeft: Duration?) -> URLRequest {
        var request = request
        if let name = self.attempt {
            request.setValue(String(attempt), forHTTPHeaderField: name)
        }
        if let timeLeft {
            // Clamped first, so the milliseconds below cannot overflow.
            let left = timeLeft.clampedToResilienceRange
            if let name = self.timeLeft {
                let milliseconds = left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000
                request.setValue(String(milliseconds), forHTTPHeaderField: name)
            }
            let seconds = Self.timeoutInterval(cutTo: left.secondsValue)
            if seconds > 0, seconds < request.timeoutInterval { request.timeoutInterval = seconds }
        }
        return request
    }

    /// The `timeoutInterval` that bounds a request to `seconds`: `seconds` itself, or on
    /// FoundationNetworking (which drops the fraction) `seconds` rounded up to whole seconds.
    static func timeoutInterval(cutTo seconds: Double) -> Double {
        #if canImport(FoundationNetworking)
            seconds > 0 ? seconds.rounded(.up) : seconds
        #else
            seconds
        #endif
    }
}

extension RetryPolicy {
    /// Loads `request` as ``data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:)``
    /// does, sending the attempt number and the time left in the headers named by `headers`.
    ///
    /// When a deadline applies (the policy's own, or an enclosing policy's), each
    /// attempt's `timeoutInterval` is also cut to the time left, so no attempt
    /// outlives the deadline. On Linux, where FoundationNetworking counts
    /// `timeoutInterval` in whole seconds, the cut is rounded up to whole seconds (never
    /// below one), so an attempt may run up to that rounding past the deadline rather
    /// than time out at once (see ``RetryRequestHeaders/applied(to:attempt:timeLeft:)``).
    ///
    /// A request whose body is a stream (`httpBodyStream`) is sent again only after a
    /// failure that proves it never left: the first send reads the stream to its end, and
    /// a second would carry an empty body. Any other failure ends the call with its own
    /// error (``RetryStopReason/notIdempotent``), even with `allowsNonIdempotentRetries`.
    /// The stream is never read into memory; to have an upload retried, set `httpBody`,
    /// or give each attempt a fresh stream inside `execute(idempotency:operation:)`.
    ///
    /// - Parameters:
    ///   - request: The request to send; its `httpMethod` decides what may be retried.
    ///   - session: The session that sends it; `URLSession.shared` unless given.
    ///   - acceptableStatusCodes: The statuses that count as success; defaults to 2xx.
    ///   - allowsNonIdempotentRetries: Resend a non-idempotent request even when the server may have acted on it.
    ///   - headers: The names of the headers to send.
    /// - Returns: The body and the HTTP response.
    /// - Throws: The last attempt's error, unchanged.
    public nonisolated(nonsending) func data(
        for request: URLRequest,
        session: URLSession = .shared,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes,
        allowsNonIdempotentRetries: Bool = false,
        sending headers: RetryRequestHeaders
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        let idempotency = Self.idempotency(of: request, allowsNonIdempotentRetries: allowsNonIdempotentRetries)
        var attempt = 0
        return try await self.run(
            isolation: #isolation, firstFailure: nil, options: .valueOnly(declaring: idempotency)
        ) { deadline in
            attempt += 1
            let sent = headers.applied(to: request, attempt: attempt, timeLeft: deadline.timeLeft())
            let (data, response, redirected) = try await session.helperData(for: sent, idempotency: idempotency)
            return try HTTPResponseValidation.validate(
                data, response, idempotency: idempotency, acceptableStatusCodes: acceptableStatusCodes,
                receivedAt: Date(), followedRedirect: redirected)
        }.get()
    }
}
