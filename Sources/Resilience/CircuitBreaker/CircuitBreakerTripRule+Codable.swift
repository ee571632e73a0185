extension CircuitBreakerTripRule: Codable {
    /// Decodes a trip rule from its settings form, and validates it.
    ///
    /// ```json
    /// {"kind": "consecutiveFailures", "count": 5}
    /// {"kind": "failureRate", "threshold": 0.5, "minimumCalls": 20, "window": {"kind": "count", "calls": 100}}
    /// ```
    ///
    /// `minimumCalls` defaults to 20, and `window` to the last 30 seconds in 10 buckets.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `tripRule.threshold`, when a value is missing, malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        switch try reader.kind([
            "consecutiveFailures": ["count"], "failureRate": ["threshold", "minimumCalls", "window"],
        ]) {
        case "consecutiveFailures":
            self = .consecutiveFailures(try reader.value("count"))
        default:
            self = .failureRate(
                threshold: try reader.value("threshold"), minimumCalls: try reader.value("minimumCalls", default: 20),
                window: try reader.value("window", default: .time(.seconds(30), buckets: 10)))
        }
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the rule in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        switch self.kind {
        case .consecutiveFailures(let count):
            var writer = try SettingsWriter(encoder, kind: "consecutiveFailures")
            try writer.encode(count, "count")
        case .failureRate(let threshold, let minimumCalls, let window):
            var writer = try SettingsWriter(encoder, kind: "failureRate")
            try writer.encode(threshold, "threshold")
            try writer.encode(minimumCalls, "minimumCalls")
            try writer.encode(window, "window")
        }
    }
}
