extension CircuitBreakerWindow: Codable {
    /// Decodes a window from its settings form, and validates it.
    ///
    /// ```json
    /// {"kind": "count", "calls": 100}
    /// {"kind": "time", "duration": "30s", "buckets": 10}
    /// ```
    ///
    /// `buckets` defaults to 10.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `tripRule.window.calls`, when a value is missing, malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        switch try reader.kind(["count": ["calls"], "time": ["duration", "buckets"]]) {
        case "count":
            self = .count(try reader.value("calls"))
        default:
            self = .time(try reader.duration("duration"), buckets: try reader.value("buckets", default: 10))
        }
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the window in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        switch self.kind {
        case .count(let calls):
            var writer = try SettingsWriter(encoder, kind: "count")
            try writer.encode(calls, "calls")
        case .time(let duration, let buckets):
            var writer = try SettingsWriter(encoder, kind: "time")
            try writer.encode(duration, "duration")
            try writer.encode(buckets, "buckets")
        }
    }
}
