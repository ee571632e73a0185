/// The settings of a ``CircuitBreakerRegistry``: its bound, and the settings of every breaker it makes.
///
/// ```swift
/// let settings = try CircuitBreakerRegistryConfiguration(
///     maximumCount: 500,
///     breaker: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(3))
/// )
/// let hosts = CircuitBreakerRegistry<String>(name: "hosts", configuration: settings)
/// ```
///
/// A configuration is `Codable`, all but its breakers' classifier; see
/// <doc:SettingsFromJSONAndTheEnvironment> for its encoded form.
public struct CircuitBreakerRegistryConfiguration: Sendable {
    /// The most breakers the registry keeps.
    public let maximumCount: Int
    /// The settings of every breaker the registry makes.
    ///
    /// A `var`, so that a decoded configuration can take a classifier of your own:
    /// `settings.breaker.classifier = MyClassifier()`.
    public var breaker: CircuitBreakerConfiguration

    /// Creates a configuration, validating the bound.
    ///
    /// - Parameters:
    ///   - maximumCount: The most breakers kept; at least 1. Defaults to 1,000.
    ///   - breaker: The settings of every breaker; defaults to ``CircuitBreakerConfiguration/default``.
    /// - Throws: ``ConfigurationError`` when `maximumCount` is below 1.
    public init(
        maximumCount: Int = 1_000,
        breaker: CircuitBreakerConfiguration = .default
    ) throws(ConfigurationError) {
        try ConfigurationError.require(maximumCount >= 1, "maximumCount", maximumCount, "in 1...Int.max")
        self.maximumCount = maximumCount
        self.breaker = breaker
    }
}
