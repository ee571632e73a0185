extension Backoff: Codable {
    /// Decodes a backoff from its settings form, and validates it.
    ///
    /// The form names the factory in `kind` and its arguments beside it; durations
    /// are strings with a unit, or numbers of seconds, and `multiplier` defaults to 2:
    ///
    /// ```json
    /// {"kind": "exponential", "initial": "100ms", "multiplier": 2, "maximum": "10s"}
    /// {"kind": "linear", "initial": "100ms", "increment": "250ms", "maximum": "2s"}
    /// {"kind": "constant", "delay": "1s"}
    /// ```
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `backoff.initial`, when a value is missing, malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder)
        let kind = try reader.kind([
            "constant": ["delay"],
            "linear": ["initial", "increment", "maximum"],
            "exponential": ["initial", "multiplier", "maximum"],
        ])
        switch kind {
        case "constant":
            self = .constant(try reader.duration("delay"))
        case "linear":
            self = .linear(
                initial: try reader.duration("initial"), increment: try reader.duration("increment"),
                maximum: try reader.duration("maximum"))
        default:
            self = .exponential(
                initial: try reader.duration("initial"), multiplier: try reader.value("multiplier", default: 2.0),
                maximum: try reader.duration("maximum"))
        }
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the backoff in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        switch self.kind {
        case .constant(let delay):
            var writer = try SettingsWriter(encoder, kind: "constant")
            try writer.encode(delay, "delay")
        case .linear(let initial, let increment, let maximum):
            var writer = try SettingsWriter(encoder, kind: "linear")
            try writer.encode(initial, "initial")
            try writer.encode(increment, "increment")
            try writer.encode(maximum, "maximum")
        case .exponential(let initial, let multiplier, let maximum):
            var writer = try SettingsWriter(encoder, kind: "exponential")
            try writer.encode(initial, "initial")
            try writer.encode(multiplier, "multiplier")
            try writer.encode(maximum, "maximum")
        }
    }
}
