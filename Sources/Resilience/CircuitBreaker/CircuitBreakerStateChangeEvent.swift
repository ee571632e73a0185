/// One change of a ``CircuitBreaker``'s state, as reported to a ``CircuitBreakerObserver``.
public struct CircuitBreakerStateChangeEvent: Sendable {
    /// The breaker's name.
    public var breakerName: String
    /// The state before.
    public var from: CircuitBreakerState
    /// The state after.
    public var to: CircuitBreakerState
    /// Why it changed.
    public var reason: CircuitBreakerTransitionReason
    /// The generation the breaker entered; higher is later. Among a ``CircuitBreakerRegistry``'s
    /// events too, for the breakers it makes for one key one after the other (see its bound).
    public var generation: UInt64
    /// When it changed, on the breaker's clock since the breaker (or its registry) was created.
    public var at: Duration
    /// How long the breaker will stay open, when ``to`` is ``CircuitBreakerState/open``.
    public var openDuration: Duration?
    /// The failure that caused the change, when a call's failure did.
    public var error: (any Error)?

    /// Creates an event, as a breaker does; tests of an observer make their own.
    public init(
        breakerName: String,
        from: CircuitBreakerState,
        to: CircuitBreakerState,
        reason: CircuitBreakerTransitionReason,
        generation: UInt64,
        at: Duration,
        openDuration: Duration? = nil,
        error: (any Error)? = nil
    ) {
        self.breakerName = breakerName
        self.from = from
        self.to = to
        self.reason = reason
        self.generation = generation
        self.at = at
        self.openDuration = openDuration
        self.error = error
    }
}
