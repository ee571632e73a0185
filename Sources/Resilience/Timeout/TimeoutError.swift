/// The error a ``Timeout`` ends an operation with when it outlives its limit.
///
/// The request may have reached the server (``RequestDelivery/mayHaveBeenSent``),
/// so a call that is not idempotent is not repeated after it; a
/// ``CircuitBreaker`` always counts it as a failure, like ``AttemptTimeoutError``.
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

    /// Creates the error for an operation allowed `timeout`.
    public init(timeoutName: String, timeout: Duration, requestIdempotency: Idempotency? = nil) {
        self.timeoutName = timeoutName
        self.timeout = timeout
        self.requestIdempotency = requestIdempotency
    }

    /// Always `true`: a timed-out call may succeed next time, when it may be repeated.
    public var isRetryable: Bool { true }

    /// Always ``RequestDelivery/mayHaveBeenSent``: the server may be working on the request.
    public var requestDelivery: RequestDelivery { .mayHaveBeenSent }

    /// `<name> timed out after …`.
    public var description: String { "\(self.timeoutName) timed out after \(self.timeout)" }
}
