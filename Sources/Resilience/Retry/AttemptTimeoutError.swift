/// The error an attempt ends with when it outlives its per-attempt timeout.
///
/// The request may have reached the server, so a call that is not idempotent
/// is not retried after it (see ``Idempotency``); an idempotent one is, like
/// any transient failure. A ``CircuitBreaker`` always counts it as a failure.
public struct AttemptTimeoutError: RetryableError, IdempotencyReporting, RequestDeliveryReporting, Hashable,
    CustomStringConvertible
{
    /// The time the attempt was allowed.
    public let timeout: Duration
    /// The idempotency the timed-out call was declared with, if any, so that a
    /// policy around the one that timed it out does not repeat it either;
    /// ``Idempotency/notIdempotent`` when a call inside the attempt declared itself so.
    public let requestIdempotency: Idempotency?

    /// Creates the error for an attempt allowed `timeout`.
    ///
    /// - Parameters:
    ///   - timeout: The time the attempt was allowed.
    ///   - requestIdempotency: The idempotency of the timed-out call, if known.
    public init(timeout: Duration, requestIdempotency: Idempotency? = nil) {
        self.timeout = timeout
        self.requestIdempotency = requestIdempotency
    }

    /// Always `true`: a timed-out attempt may succeed next time, when it may be repeated.
    public var isRetryable: Bool { true }

    /// Always ``RequestDelivery/mayHaveBeenSent``: the server may be working on the request.
    public var requestDelivery: RequestDelivery { .mayHaveBeenSent }

    /// `attempt timed out after …`.
    public var description: String { "attempt timed out after \(self.timeout)" }
}
