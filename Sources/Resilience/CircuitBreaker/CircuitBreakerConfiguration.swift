/// Every setting of a ``CircuitBreaker``, validated once.
///
/// Build a configuration when several breakers share settings, as a
/// ``CircuitBreakerRegistry`` does; a single breaker can take the same
/// parameters directly in its initializer.
///
/// ```swift
/// let configuration = try CircuitBreakerConfiguration(
///     tripRule: .failureRate(threshold: 0.5, minimumCalls: 20, window: .count(100)),
///     openDuration: .growing(initial: .seconds(5), maximum: .seconds(120)),
///     maximumProbes: 2,
///     successesToClose: 3
/// )
/// let registry = try CircuitBreakerRegistry<String>(name: "hosts", configuration: configuration)
/// ```
///
/// A breaker made from a configuration cannot fail, so it needs no `try`; ``default``
/// holds the package defaults:
///
/// ```swift
/// let breaker = CircuitBreaker(name: "inventory", configuration: .default)
/// ```
///
/// A configuration is `Codable`, all but its ``classifier``; see
/// <doc:SettingsFromJSONAndTheEnvironment> for its encoded form.
public struct CircuitBreakerConfiguration: Sendable {
    /// When a closed breaker opens.
    public let tripRule: CircuitBreakerTripRule
    /// Which successful calls are too slow and count as failures, if any.
    public let slowCallRule: CircuitBreakerSlowCallRule?
    /// How long the breaker stays open after each trip.
    public let openDuration: CircuitBreakerOpenDuration
    /// The most probe calls in flight at once while half-open.
    public let maximumProbes: Int
    /// The successful probes that close a half-open breaker.
    public let successesToClose: Int
    /// How long a probe holds its slot; a probe still running after this no longer counts,
    /// and its slot goes to the next caller.
    public let probeLease: Duration
    /// Decides which errors count as failures.
    ///
    /// The one setting that is code rather than data, so the one a decoded
    /// configuration cannot carry: it decodes with the default classifier, and you
    /// may set your own afterwards. Any classifier is valid.
    public var classifier: any CircuitBreakerFailureClassifier
    /// Whether server retry-after hints open the breaker.
    public let pushback: CircuitBreakerPushback

    /// Creates a configuration, validating every setting.
    ///
    /// - Parameters:
    ///   - tripRule: When the breaker opens; defaults to five consecutive failures.
    ///   - slowCallRule: Counts slow successes as failures; `nil` (the default) for none.
    ///   - openDuration: The open time after each trip; defaults to a fixed 30 seconds.
    ///   - maximumProbes: Probe calls allowed in flight at once while half-open; at least 1.
    ///     Defaults to 1.
    ///   - successesToClose: Successful probes needed to close; at least 1. Defaults to 1.
    ///     It may exceed `maximumProbes`: the probes then run in turns.
    ///   - probeLease: How long a probe may run before its slot is given to another caller;
    ///     greater than zero, and at most about 146 years. Defaults to 60 seconds. Set it
    ///     above your longest healthy call.
    ///   - classifier: Decides what counts as a failure; defaults to
    ///     ``DefaultCircuitBreakerFailureClassifier``.
    ///   - pushback: Whether retry-after hints open the breaker; defaults to
    ///     ``CircuitBreakerPushback/tooManyRequests(maximum:)``.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public init(
        tripRule: CircuitBreakerTripRule = .default,
        slowCallRule: CircuitBreakerSlowCallRule? = nil,
        openDuration: CircuitBreakerOpenDuration = .default,
        maximumProbes: Int = 1,
        successesToClose: Int = 1,
        probeLease: Duration = .seconds(60),
        classifier: any CircuitBreakerFailureClassifier = DefaultCircuitBreakerFailureClassifier(),
        pushback: CircuitBreakerPushback = .default
    ) throws(ConfigurationError) {
        try tripRule.validate()
        try slowCallRule?.validate()
        try openDuration.validate()
        try ConfigurationError.require(maximumProbes >= 1, "maximumProbes", maximumProbes, "in 1...Int.max")
        try ConfigurationError.require(
            successesToClose >= 1, "successesToClose", successesToClose, "in 1...Int.max")
        try ConfigurationError.requirePositive(probeLease, "probeLease")
        try ConfigurationError.requireAtMostResilienceMaximum(probeLease, "probeLease")
        try pushback.validate()
        self.init(
            uncheckedTripRule: tripRule, slowCallRule: slowCallRule, openDuration: openDuration,
            maximumProbes: maximumProbes, successesToClose: successesToClose,
            probeLease: probeLease, classifier: classifier, pushback: pushback)
    }

    private init(
        uncheckedTripRule tripRule: CircuitBreakerTripRule,
        slowCallRule: CircuitBreakerSlowCallRule?,
        openDuration: CircuitBreakerOpenDuration,
        maximumProbes: Int,
        successesToClose: Int,
        probeLease: Duration,
        classifier: any CircuitBreakerFailureClassifier,
        pushback: CircuitBreakerPushback
    ) {
        self.tripRule = tripRule
        self.slowCallRule = slowCallRule
        self.openDuration = openDuration
        self.maximumProbes = maximumProbes
        self.successesToClose = successesToClose
        self.probeLease = probeLease
        self.classifier = classifier
        self.pushback = pushback
    }

    /// The package defaults: five consecutive failures, 30 seconds open, one probe,
    /// one success to close, a 60-second probe lease, the default classifier and
    /// pushback on HTTP 429.
    public static let `default` = CircuitBreakerConfiguration(
        uncheckedTripRule: .default, slowCallRule: nil, openDuration: .default, maximumProbes: 1,
        successesToClose: 1, probeLease: .seconds(60), classifier: DefaultCircuitBreakerFailureClassifier(),
        pushback: .default)
}
