/// Receives what a ``CircuitBreaker`` does: each change of state and each rejected call.
///
/// Every method has an empty default, so implement only what you need. Calls
/// arrive synchronously in the isolation of the caller whose call caused the
/// event, after the breaker has released its lock: keep them cheap and hand
/// heavy work elsewhere. Events from concurrent callers may arrive out of
/// order; ``CircuitBreakerStateChangeEvent/generation`` orders state changes.
/// A breaker without an observer pays nothing for this hook, and a success
/// while closed never produces an event.
///
/// ```swift
/// struct BreakerLog: CircuitBreakerObserver {
///     func stateChanged(_ event: CircuitBreakerStateChangeEvent) {
///         print("\(event.breakerName): \(event.from) -> \(event.to) (\(event.reason))")
///     }
/// }
/// let breaker = try CircuitBreaker(name: "billing", observer: BreakerLog())
/// ```
public protocol CircuitBreakerObserver: Sendable {
    /// The breaker changed state.
    func stateChanged(_ event: CircuitBreakerStateChangeEvent)
    /// The breaker refused a call without running it.
    func callRejected(_ event: CircuitBreakerRejectionEvent)
}

extension CircuitBreakerObserver {
    /// Does nothing.
    public func stateChanged(_ event: CircuitBreakerStateChangeEvent) {}
    /// Does nothing.
    public func callRejected(_ event: CircuitBreakerRejectionEvent) {}
}
