extension CircuitBreakerOpenDuration: Codable {
    /// Decodes an open duration from its settings form, and validates it.
    ///
    /// ```json
    /// {"kind": "fixed", "duration": "30s"}
    /// {"kind": "growing", "initial": "5s", "multiplier": 2, "maximum": "5m"}
    /// ```
    ///
    /// `multiplier` defaults to 2. An optional `"jitter"` (a fraction in `0...1`) spreads
    /// each open time as ``jittered(by:generator:)`` does, seeded from the system's generator.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `openDuration.initial`, when a value is missing, malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        var decoded: CircuitBreakerOpenDuration
        switch try reader.kind([
            "fixed": ["duration", "jitter"], "growing": ["initial", "multiplier", "maximum", "jitter"],
        ]) {
        case "fixed":
            decoded = .fixed(try reader.duration("duration"))
        default:
            decoded = .growing(
                initial: try reader.duration("initial"), multiplier: try reader.value("multiplier", default: 2.0),
                maximum: try reader.duration("maximum"))
        }
        if let spread: Double = try reader.optionalValue("jitter") {
            decoded = decoded.jittered(by: spread)
        }
        self = decoded
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the open duration in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        switch self.schedule.kind {
        case .exponential(let initial, let multiplier, let maximum):
            var writer = try SettingsWriter(encoder, kind: "growing")
            try writer.encode(initial, "initial")
            try writer.encode(multiplier, "multiplier")
            try writer.encode(maximum, "maximum")
            if let jitter = self.jitter { try writer.encode(jitter.spread, "jitter") }
        case .constant(let duration):
            var writer = try SettingsWriter(encoder, kind: "fixed")
            try writer.encode(duration, "duration")
            if let jitter = self.jitter { try writer.encode(jitter.spread, "jitter") }
        case .linear:
            // No factory makes a linear open duration.
            var writer = try SettingsWriter(encoder, kind: "fixed")
            try writer.encode(self.duration(forTrip: 1), "duration")
        }
    }
}
