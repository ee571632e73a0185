/// When a closed ``CircuitBreaker`` opens: after a run of consecutive failures,
/// or when the failure rate over a sliding window reaches a threshold.
///
/// ```swift
/// let simple = CircuitBreakerTripRule.consecutiveFailures(5)
/// let rate = CircuitBreakerTripRule.failureRate(
///     threshold: 0.5, minimumCalls: 20, window: .time(.seconds(30), buckets: 10))
/// ```
///
/// Failures are what the breaker's classifier counts (see
/// ``CircuitBreakerFailureClassifier``), plus slow calls when a
/// ``CircuitBreakerSlowCallRule`` is set. Calls whose errors are not counted
/// (cancellation, most 4xx responses) are left out entirely: they neither
/// break a run of failures nor enter the window.
///
/// The consecutive rule is the cheapest: a success while nothing has failed
/// costs two atomic loads and no lock. A failure-rate rule records every call:
/// a count window under the breaker's lock; a time window reads the clock once
/// per call and counts a success in its current bucket without the lock, unless
/// that success could meet the rule (failures that a success could bring up to
/// `minimumCalls` at the threshold), when it takes the lock to be judged.
public struct CircuitBreakerTripRule: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case consecutiveFailures(Int)
        case failureRate(threshold: Double, minimumCalls: Int, window: CircuitBreakerWindow)
    }

    let kind: Kind

    /// Opens after `count` failures in a row; any counted success resets the run.
    ///
    /// - Parameter count: The run length that opens the breaker; at least 1.
    public static func consecutiveFailures(_ count: Int) -> CircuitBreakerTripRule {
        CircuitBreakerTripRule(kind: .consecutiveFailures(count))
    }

    /// Opens when the share of failures among the calls in `window` reaches `threshold`,
    /// once the window holds at least `minimumCalls` calls.
    ///
    /// The rule is judged after every call it counts, success or failure, so the breaker
    /// opens as soon as the rule is met, whichever call completes it. With `minimumCalls: 4`
    /// and `threshold: 0.5`, three failures and then a success open the breaker on that
    /// success (three in four failed), as resilience4j does; the breaker does not wait for
    /// the next failure. A success can meet the rule only by completing `minimumCalls`, or
    /// when a time window drops older successes.
    ///
    /// - Parameters:
    ///   - threshold: The failure share that opens the breaker, greater than 0 and at most 1
    ///     (0.5 means half the calls failed).
    ///   - minimumCalls: Calls the window must hold before the rule may trip, so that one
    ///     early failure is not a 100% failure rate; at least 1, and for a count window at
    ///     most its size. Defaults to 20.
    ///   - window: The calls considered. Defaults to the last 30 seconds in 10 buckets.
    public static func failureRate(
        threshold: Double,
        minimumCalls: Int = 20,
        window: CircuitBreakerWindow = .time(.seconds(30), buckets: 10)
    ) -> CircuitBreakerTripRule {
        CircuitBreakerTripRule(kind: .failureRate(threshold: threshold, minimumCalls: minimumCalls, window: window))
    }

    /// The package default: five consecutive failures.
    public static let `default` = CircuitBreakerTripRule.consecutiveFailures(5)

    /// `consecutiveFailures(5)` or `failureRate(threshold: 0.5, minimumCalls: 20, window: count(100))`.
    public var description: String {
        switch self.kind {
        case .consecutiveFailures(let count):
            "consecutiveFailures(\(count))"
        case .failureRate(let threshold, let minimumCalls, let window):
            "failureRate(threshold: \(threshold), minimumCalls: \(minimumCalls), window: \(window))"
        }
    }

    /// The window the rule keeps, if any.
    var window: CircuitBreakerWindow? {
        switch self.kind {
        case .consecutiveFailures: nil
        case .failureRate(_, _, let window): window
        }
    }

    /// Checks the rule, naming its settings `<prefix>.count`, `<prefix>.threshold`, `<prefix>.window.calls` and so on.
    func validate(settingPrefix prefix: String = "tripRule") throws(ConfigurationError) {
        func name(_ key: String) -> String { ConfigurationError.settingName(prefix, key) }
        switch self.kind {
        case .consecutiveFailures(let count):
            try ConfigurationError.require(count >= 1, name("count"), count, "in 1...Int.max")
        case .failureRate(let threshold, let minimumCalls, let window):
            try ConfigurationError.require(
                threshold.isFinite && threshold > 0 && threshold <= 1, name("threshold"), threshold,
                "greater than 0 and at most 1")
            try window.validate(settingPrefix: name("window"))
            try ConfigurationError.require(minimumCalls >= 1, name("minimumCalls"), minimumCalls, "in 1...Int.max")
            if case .count(let calls) = window.kind {
                try ConfigurationError.require(
                    minimumCalls <= calls, name("minimumCalls"), minimumCalls,
                    "at most the window's size (\(calls)), or the rule could never trip")
            }
        }
    }
}
