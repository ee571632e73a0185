/// One call a ``CircuitBreaker`` refused, as reported to a ``CircuitBreakerObserver``.
public struct CircuitBreakerRejectionEvent: Sendable {
    /// The breaker's name.
    public var breakerName: String
    /// The state that refused the call; for a refusal by the breaker's own
    /// ``CircuitBreaker/throttle`` (``throttleRejection``), the state the breaker was in.
    public var state: CircuitBreakerState
    /// The figure the ``CircuitBreakerOpenError`` the caller receives carries, its
    /// ``CircuitBreakerOpenError/retryAfter``: the open time left when the breaker was open;
    /// when it was half-open with every probe slot taken, the time until the earliest probe
    /// lease runs out (an upper bound: a slot frees as soon as a probe finishes). `nil` when it
    /// was isolated, or when its throttle refused the call.
    public var retryAfter: Duration?
    /// The refusal the caller receives when the breaker's own ``CircuitBreaker/throttle``, not
    /// its state, refused the call: the throttle decides before the breaker, so the breaker took
    /// no permit and counted nothing. `nil` when the breaker's state refused the call.
    public var throttleRejection: AdaptiveThrottleRejection?

    /// Creates an event, as a breaker does; tests of an observer make their own.
    public init(
        breakerName: String, state: CircuitBreakerState, retryAfter: Duration? = nil,
        throttleRejection: AdaptiveThrottleRejection? = nil
    ) {
        self.breakerName = breakerName
        self.state = state
        self.retryAfter = retryAfter
        self.throttleRejection = throttleRejection
    }
}
