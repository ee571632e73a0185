/// The error an attempt ends with when it outlives its per-attempt timeout.
///
/// The request may have reached the server, so a call that is not idempotent
/// is not retried after it (see ``Idempotency``); an idempotent one is, like
/// any transient failure. A ``CircuitBreaker`` counts it as a failure.
///
/// One exception: an attempt that was still waiting at one of the library's gates
/// inside it (a ``ConcurrencyLimiter``'s queue, a ``RateLimiter``'s wait for a permit)
/// when its limit fired, before anything inside may have sent it, reports
/// ``RequestDelivery/notSent``: a breaker does not count it, and a call that is not
/// idempotent may be retried (see <doc:Timeouts>).
public struct AttemptTimeoutError: RetryableError, IdempotencyReporting, RequestDeliveryReporting, Hashable,
    CustomStringConvertible
{
    /// The time the attempt was allowed.
    public let timeout: Duration
    /// The idempotency the timed-out call was declared with, if any, so that a
    /// policy around the one that timed it out does not repeat it either;
    /// ``Idempotency/notIdempotent`` when a call inside the attempt declared itself so.
    public let requestIdempotency: Idempotency?

    /// How far the request got: ``RequestDelivery/notSent`` when the limit fired while the
    /// attempt waited at one of the library's gates, else ``RequestDelivery/mayHaveBeenSent``.
    public let requestDelivery: RequestDelivery

    /// Creates the error for an attempt allowed `timeout`.
    ///
    /// - Parameters:
    ///   - timeout: The time the attempt was allowed.
    ///   - requestIdempotency: The idempotency of the timed-out call, if known.
    ///   - requestDelivery: How far the request got; ``RequestDelivery/mayHaveBeenSent``
    ///     unless the limit knows it never left.
    public init(
        timeout: Duration, requestIdempotency: Idempotency? = nil, requestDelivery: RequestDelivery = .mayHaveBeenSent
    ) {
        self.timeout = timeout
        self.requestIdempotency = requestIdempotency
        self.requestDelivery = requestDelivery
    }

    /// Always `true`: a timed-out attempt may succeed next time, when it may be repeated.
    public var isRetryable: Bool { true }

    /// `attempt timed out after …`.
    public var description: String { "attempt timed out after \(self.timeout)" }
}
