/// Receives what the strategies other than the retry policy and the breaker do.
///
/// Like ``CircuitBreakerObserver``, events arrive synchronously in the isolation
/// of the caller whose call caused them, after any lock is released: keep them
/// cheap. A strategy without an observer pays nothing for this hook, and a
/// success on the fast path never produces an event.
///
/// ```swift
/// struct StrategyLog: StrategyObserver {
///     func observe(_ event: StrategyEvent) { print(event) }
/// }
/// let limiter = try ConcurrencyLimiter(name: "uploads", limit: 4, observer: StrategyLog())
/// ```
public protocol StrategyObserver: Sendable {
    /// A strategy did something worth reporting.
    func observe(_ event: StrategyEvent)
}
