extension CircuitBreakerSlowCallRule: Codable {
    /// Decodes a slow-call rule from its settings form, and validates it.
    ///
    /// ```json
    /// {"threshold": "2s"}
    /// ```
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `slowCallRule.threshold`, when the value is missing, malformed or out of range,
    ///   or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        try reader.rejectUnknownKeys(["threshold"])
        self = .slowerThan(try reader.duration("threshold"))
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the rule in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        var writer = try SettingsWriter(encoder)
        try writer.encode(self.threshold, "threshold")
    }
}
