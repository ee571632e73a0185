/// Counts calls that succeed too slowly as failures, as resilience4j's slow-call rule does.
///
/// A dependency that answers in twenty seconds is often as unhealthy as one that
/// fails; with this rule set, such a call feeds the trip rule like a failure, and
/// a slow half-open probe re-opens the breaker.
///
/// ```swift
/// let breaker = try CircuitBreaker(name: "search", slowCallRule: .slowerThan(.seconds(2)))
/// ```
///
/// A breaker with this rule reads its clock when each call starts and ends.
public struct CircuitBreakerSlowCallRule: Sendable, Hashable, CustomStringConvertible {
    /// Calls that take longer than this count as failures.
    public let threshold: Duration

    /// Counts a call that takes longer than `threshold` as a failure, even when it succeeds.
    ///
    /// - Parameter threshold: The longest healthy call; greater than zero, and at most about
    ///   146 years (the package's longest duration). A breaker's configuration refuses any other.
    public static func slowerThan(_ threshold: Duration) -> CircuitBreakerSlowCallRule {
        CircuitBreakerSlowCallRule(threshold: threshold)
    }

    /// `slowerThan(2.0 seconds)`.
    public var description: String {
        "slowerThan(\(self.threshold))"
    }

    /// Checks the threshold, naming it `<prefix>.threshold`.
    func validate(settingPrefix prefix: String = "slowCallRule") throws(ConfigurationError) {
        let name = ConfigurationError.settingName(prefix, "threshold")
        try ConfigurationError.requirePositive(self.threshold, name)
        try ConfigurationError.requireAtMostResilienceMaximum(self.threshold, name)
    }
}
