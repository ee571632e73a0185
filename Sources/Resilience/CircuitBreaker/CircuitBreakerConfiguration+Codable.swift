extension CircuitBreakerConfiguration: Codable {
    /// Decodes a configuration from its settings form, validating every setting.
    ///
    /// Every key is optional and defaults as the initializer does; an unknown key is an error.
    /// The ``classifier`` is not part of the form: the decoded configuration has the
    /// default one, which you may replace.
    ///
    /// ```json
    /// {
    ///   "tripRule": {"kind": "failureRate", "threshold": 0.5, "minimumCalls": 20,
    ///                "window": {"kind": "time", "duration": "30s", "buckets": 10}},
    ///   "slowCallRule": {"threshold": "2s"},
    ///   "openDuration": {"kind": "growing", "initial": "5s", "maximum": "2m"},
    ///   "maximumProbes": 2,
    ///   "successesToClose": 3,
    ///   "probeLease": "60s",
    ///   "pushback": {"kind": "tooManyRequests", "maximum": "300s"}
    /// }
    /// ```
    ///
    /// `slowCallRule` is `null`, or absent, for none.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `tripRule.threshold` or `breaker.maximumProbes`, when a value is malformed or out of
    ///   range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        try reader.rejectUnknownKeys([
            "tripRule", "slowCallRule", "openDuration", "maximumProbes", "successesToClose", "probeLease", "pushback",
        ])
        let defaults = CircuitBreakerConfiguration.default
        let tripRule: CircuitBreakerTripRule = try reader.value("tripRule", default: defaults.tripRule)
        let slowCallRule: CircuitBreakerSlowCallRule? = try reader.optionalValue("slowCallRule")
        let openDuration: CircuitBreakerOpenDuration = try reader.value("openDuration", default: defaults.openDuration)
        let maximumProbes: Int = try reader.value("maximumProbes", default: defaults.maximumProbes)
        let successesToClose: Int = try reader.value("successesToClose", default: defaults.successesToClose)
        let probeLease = try reader.duration("probeLease", default: defaults.probeLease)
        let pushback: CircuitBreakerPushback = try reader.value("pushback", default: defaults.pushback)
        do {
            try self.init(
                tripRule: tripRule, slowCallRule: slowCallRule, openDuration: openDuration,
                maximumProbes: maximumProbes, successesToClose: successesToClose, probeLease: probeLease,
                pushback: pushback)
        } catch {
            throw error.nested(under: reader.name)
        }
    }

    /// Encodes every setting but the ``classifier``, `slowCallRule` as `null` when there is none.
    public func encode(to encoder: any Encoder) throws {
        var writer = try SettingsWriter(encoder)
        try writer.encode(self.tripRule, "tripRule")
        try writer.encodeOptional(self.slowCallRule, "slowCallRule")
        try writer.encode(self.openDuration, "openDuration")
        try writer.encode(self.maximumProbes, "maximumProbes")
        try writer.encode(self.successesToClose, "successesToClose")
        try writer.encode(self.probeLease, "probeLease")
        try writer.encode(self.pushback, "pushback")
    }
}
