/// The settings of a ``RetryBudget``, validated once.
///
/// ```swift
/// let budget = RetryBudget(configuration: .default)  // 10 tokens, 0.1 back per success
/// let larger = RetryBudget(configuration: try RetryBudgetConfiguration(maximumTokens: 100))
/// ```
///
/// A configuration is `Codable`; see <doc:SettingsFromJSONAndTheEnvironment>.
public struct RetryBudgetConfiguration: Sendable, Hashable {
    /// The bucket's capacity and starting level.
    public let maximumTokens: Double
    /// The tokens a success gives back.
    public let tokenRatio: Double

    /// Creates a configuration, validating both settings.
    ///
    /// - Parameters:
    ///   - maximumTokens: Capacity, in `1...1_000_000`. Defaults to 10.
    ///   - tokenRatio: Tokens refunded per success, in `0.001...maximumTokens`. Defaults to 0.1.
    /// - Throws: ``ConfigurationError`` naming the setting out of range.
    public init(maximumTokens: Double = 10, tokenRatio: Double = 0.1) throws(ConfigurationError) {
        try ConfigurationError.require(
            maximumTokens.isFinite && maximumTokens >= 1 && maximumTokens <= 1_000_000,
            "maximumTokens", maximumTokens, "in 1...1000000")
        try ConfigurationError.require(
            tokenRatio.isFinite && tokenRatio >= 0.001 && tokenRatio <= maximumTokens,
            "tokenRatio", tokenRatio, "in 0.001...maximumTokens (\(maximumTokens))")
        self.init(uncheckedMaximumTokens: maximumTokens, tokenRatio: tokenRatio)
    }

    init(uncheckedMaximumTokens maximumTokens: Double, tokenRatio: Double) {
        self.maximumTokens = maximumTokens
        self.tokenRatio = tokenRatio
    }

    /// The package defaults, gRPC's example values: 10 tokens, 0.1 back per success.
    public static let `default` = RetryBudgetConfiguration(uncheckedMaximumTokens: 10, tokenRatio: 0.1)
}
