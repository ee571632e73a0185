/// The error thrown when a policy, budget or breaker is built from an invalid setting.
///
/// Every initializer in the package that takes configuration validates it up
/// front and throws this error instead of trapping, so settings read from a
/// file or a remote config service fail loudly and recoverably. The message
/// names the setting, the value given and the range accepted.
///
/// ```swift
/// do {
///     _ = try RetryPolicy(maximumAttempts: 0)
/// } catch let error as ConfigurationError {
///     print(error)  // maximumAttempts must be in 1...Int.max, got 0
/// }
/// ```
public struct ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The name of the rejected setting, as spelled in the initializer.
    ///
    /// A setting inside another is named by its path, after the factories' parameters:
    /// `backoff.initial`, `tripRule.window.calls`. When the setting was decoded, the path
    /// is its coding path, which spells the same names: `inventory.deadline`,
    /// `breaker.tripRule.threshold`.
    public let setting: String
    /// The value that was given, rendered as text.
    public let value: String
    /// The accepted range or rule, in words.
    public let accepted: String

    /// Creates an error naming the setting, its value and what would be accepted.
    public init(setting: String, value: String, accepted: String) {
        self.setting = setting
        self.value = value
        self.accepted = accepted
    }

    /// A sentence naming the setting, the accepted range and the rejected value.
    public var description: String {
        "\(self.setting) must be \(self.accepted), got \(self.value)"
    }
}

extension ConfigurationError {
    static func require(
        _ condition: Bool,
        _ setting: String,
        _ value: some CustomStringConvertible,
        _ accepted: String
    ) throws(ConfigurationError) {
        if !condition {
            throw ConfigurationError(setting: setting, value: value.description, accepted: accepted)
        }
    }

    /// Refuses a duration, writing it out exactly (see `Duration.exactDescription`).
    static func require(
        _ condition: Bool,
        _ setting: String,
        _ value: Duration,
        _ accepted: String
    ) throws(ConfigurationError) {
        if !condition {
            throw ConfigurationError(setting: setting, value: value.exactDescription, accepted: accepted)
        }
    }

    static func requirePositive(_ duration: Duration, _ setting: String) throws(ConfigurationError) {
        try self.require(duration > .zero, setting, duration, "greater than zero")
    }

    static func requireNonNegative(_ duration: Duration, _ setting: String) throws(ConfigurationError) {
        try self.require(duration >= .zero, setting, duration, "zero or greater")
    }

    /// Refuses a duration beyond the package's longest (about 146 years), which it could
    /// not add to an instant without overflow.
    static func requireAtMostResilienceMaximum(_ duration: Duration, _ setting: String) throws(ConfigurationError) {
        try self.require(
            duration <= .resilienceMaximum, setting, duration, "at most \(Duration.resilienceMaximum.exactDescription)")
    }
}
