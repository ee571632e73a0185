extension RetryPolicyConfiguration: Codable {
    /// Decodes a configuration from its settings form, validating every setting.
    ///
    /// Every key is optional and defaults as the initializer does; an unknown key is an error:
    ///
    /// ```json
    /// {
    ///   "maximumAttempts": 4,
    ///   "backoff": {"kind": "exponential", "initial": "200ms", "maximum": "10s"},
    ///   "jitter": "full",
    ///   "deadline": "30s",
    ///   "maximumRetryAfter": "60s"
    /// }
    /// ```
    ///
    /// `deadline` is `null`, or absent, for none.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `maximumAttempts` or `retry.backoff.initial`, when a value is malformed or out of
    ///   range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        try reader.rejectUnknownKeys(["maximumAttempts", "backoff", "jitter", "deadline", "maximumRetryAfter"])
        let defaults = RetryPolicyConfiguration.default
        let maximumAttempts: Int = try reader.value("maximumAttempts", default: defaults.maximumAttempts)
        let backoff: Backoff = try reader.value("backoff", default: defaults.backoff)
        let jitter: Jitter = try reader.value("jitter", default: defaults.jitter)
        let deadline = try reader.optionalDuration("deadline")
        let maximumRetryAfter = try reader.duration("maximumRetryAfter", default: defaults.maximumRetryAfter)
        do {
            try self.init(
                maximumAttempts: maximumAttempts, backoff: backoff, jitter: jitter, deadline: deadline,
                maximumRetryAfter: maximumRetryAfter)
        } catch {
            throw error.nested(under: reader.name)
        }
    }

    /// Encodes every setting, `deadline` as `null` when there is none; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        var writer = try SettingsWriter(encoder)
        try writer.encode(self.maximumAttempts, "maximumAttempts")
        try writer.encode(self.backoff, "backoff")
        try writer.encode(self.jitter, "jitter")
        try writer.encodeOptional(self.deadline, "deadline")
        try writer.encode(self.maximumRetryAfter, "maximumRetryAfter")
    }
}
