extension RetryBudgetConfiguration: Codable {
    /// Decodes a configuration from its settings form, validating both settings.
    ///
    /// Both keys are optional and default as the initializer does:
    ///
    /// ```json
    /// {"maximumTokens": 10, "tokenRatio": 0.1}
    /// ```
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path when a value
    ///   is malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        try reader.rejectUnknownKeys(["maximumTokens", "tokenRatio"])
        let defaults = RetryBudgetConfiguration.default
        let maximumTokens: Double = try reader.value("maximumTokens", default: defaults.maximumTokens)
        let tokenRatio: Double = try reader.value("tokenRatio", default: defaults.tokenRatio)
        do {
            try self.init(maximumTokens: maximumTokens, tokenRatio: tokenRatio)
        } catch {
            throw error.nested(under: reader.name)
        }
    }

    /// Encodes both settings; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        var writer = try SettingsWriter(encoder)
        try writer.encode(self.maximumTokens, "maximumTokens")
        try writer.encode(self.tokenRatio, "tokenRatio")
    }
}
