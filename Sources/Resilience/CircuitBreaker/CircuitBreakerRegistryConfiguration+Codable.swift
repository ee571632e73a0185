extension CircuitBreakerRegistryConfiguration: Codable {
    /// Decodes a configuration from its settings form, validating every setting.
    ///
    /// Both keys are optional; `breaker` takes the form of ``CircuitBreakerConfiguration``:
    ///
    /// ```json
    /// {"maximumCount": 500, "breaker": {"tripRule": {"kind": "consecutiveFailures", "count": 3}}}
    /// ```
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `maximumCount` or `breaker.tripRule.count`, when a value is malformed or out of range,
    ///   or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        try reader.rejectUnknownKeys(["maximumCount", "breaker"])
        let maximumCount: Int = try reader.value("maximumCount", default: 1_000)
        let breaker: CircuitBreakerConfiguration = try reader.value("breaker", default: .default)
        do {
            try self.init(maximumCount: maximumCount, breaker: breaker)
        } catch {
            throw error.nested(under: reader.name)
        }
    }

    /// Encodes both settings; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        var writer = try SettingsWriter(encoder)
        try writer.encode(self.maximumCount, "maximumCount")
        try writer.encode(self.breaker, "breaker")
    }
}
