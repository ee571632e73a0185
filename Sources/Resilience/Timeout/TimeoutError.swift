/// The error a ``Timeout`` ends an operation with when it outlives its limit.
///
/// The request may have reached the server (``RequestDelivery/mayHaveBeenSent``),
/// so a call that is not idempotent is not repeated after it; a
/// ``CircuitBreaker`` counts it as a failure, like ``AttemptTimeoutError``.
///
/// One exception: a limit that fired while the call still waited at one of the library's
/// gates inside it (a ``ConcurrencyLimiter``'s queue, a ``RateLimiter``'s wait for a
/// permit), before anything inside may have sent it, reports ``RequestDelivery/notSent``:
/// a breaker does not count it, and a call that is not idempotent may be tried again
/// (see <doc:Timeouts>).
public struct TimeoutError: RetryableError, IdempotencyReporting, RequestDeliveryReporting, Hashable,
    CustomStringConvertible
{
    /// The name of the timeout that fired.
    public let timeoutName: String
    /// The time the operation was allowed.
    public let timeout: Duration
    /// The idempotency the timed-out call was declared with, if any; ``Idempotency/notIdempotent``
    /// when a call inside the operation declared itself so, whatever the outer declaration said.
    public let requestIdempotency: Idempotency?

    /// How far the request got: ``RequestDelivery/notSent`` when the limit fired while the
    /// call waited at one of the library's gates, else ``RequestDelivery/mayHaveBeenSent``.
    public let requestDelivery: RequestDelivery

    /// Creates the error for an operation allowed `timeout`.
    ///
    /// - Parameters:
    ///   - timeoutName: The name of the timeout that fired.
    ///   - timeout: The time the operation was allowed.
    ///   - requestIdempotency: The idempotency of the timed-out call, if known.
    ///   - requestDelivery: How far the request got; ``RequestDelivery/mayHaveBeenSent``
    ///     unless the limit knows it never left.
    public init(
        timeoutName: String, timeout: Duration, requestIdempotency: Idempotency? = nil,
        requestDelivery: RequestDelivery = .mayHaveBeenSent
    ) {
        self.timeoutName = timeoutName
        self.timeout = timeout
        self.requestIdempotency = requestIdempotency
        self.requestDelivery = requestDelivery
    }

    /// Always `true`: a timed-out call may succeed next time, when it may be repeated.
    public var isRetryable: Bool { true }

    /// `<name> timed out after …`.
    public var description: String { "\(self.timeoutName) timed out after \(self.timeout)" }
}
