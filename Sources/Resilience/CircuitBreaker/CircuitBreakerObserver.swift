/// Receives what a ``CircuitBreaker`` does: each change of state and each rejected call.
///
/// Every method has an empty default, so implement only what you need. Calls
/// arrive synchronously in the isolation of the caller whose call caused the
/// event, after the breaker has released its lock: keep them cheap and hand
/// heavy work elsewhere. Events from concurrent callers may arrive out of
/// order; ``CircuitBreakerStateChangeEvent/generation`` orders state changes.
/// A breaker without an observer pays nothing for this hook. A success while
/// closed produces no event, except under a
/// ``CircuitBreakerTripRule/failureRate(threshold:minimumCalls:window:)`` rule: the
/// success that brings the window up to its minimum number of calls trips the breaker
/// when the failure rate already meets the threshold, and that change is reported.
///
/// A call refused by the breaker's own ``CircuitBreaker/throttle`` is a rejected call
/// too: its event's ``CircuitBreakerRejectionEvent/throttleRejection`` is set.
///
/// The breaker's open time can also grow without a change of state: a late failure with
/// a server's hint (from a call admitted before the breaker opened) keeps an open breaker
/// open longer. That is reported as a change from open to open, with the reason
/// ``CircuitBreakerTransitionReason/pushback``, a new generation and the new
/// ``CircuitBreakerStateChangeEvent/openDuration``.
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
