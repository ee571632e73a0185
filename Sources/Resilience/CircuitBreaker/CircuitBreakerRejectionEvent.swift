/// One call a ``CircuitBreaker`` refused, as reported to a ``CircuitBreakerObserver``.
public struct CircuitBreakerRejectionEvent: Sendable {
    /// The breaker's name.
    public var breakerName: String
    /// The state that refused the call.
    public var state: CircuitBreakerState
    /// The open time left, as carried by the ``CircuitBreakerOpenError`` the caller receives;
    /// `nil` when the breaker was half-open or isolated.
    public var retryAfter: Duration?

    /// Creates an event, as a breaker does; tests of an observer make their own.
    public init(breakerName: String, state: CircuitBreakerState, retryAfter: Duration? = nil) {
        self.breakerName = breakerName
        self.state = state
        self.retryAfter = retryAfter
    }
}
