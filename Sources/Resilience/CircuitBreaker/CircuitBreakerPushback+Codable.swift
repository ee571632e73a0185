extension CircuitBreakerPushback: Codable {
    /// Decodes a pushback setting from its settings form, and validates it.
    ///
    /// ```json
    /// "disabled"
    /// {"kind": "tooManyRequests", "maximum": "300s"}
    /// {"kind": "anyRetryAfter", "maximum": "2m"}
    /// ```
    ///
    /// `maximum` defaults to 300 seconds, so `"tooManyRequests"` and `"anyRetryAfter"`
    /// may also be written as bare names.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `pushback.maximum`, when a value is malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder, allowsShorthand: true)
        switch try reader.kind(["disabled": [], "tooManyRequests": ["maximum"], "anyRetryAfter": ["maximum"]]) {
        case "disabled":
            self = .disabled
        case "tooManyRequests":
            self = .tooManyRequests(maximum: try reader.duration("maximum", default: .seconds(300)))
        default:
            self = .anyRetryAfter(maximum: try reader.duration("maximum", default: .seconds(300)))
        }
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the setting in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        switch self.scope {
        case .disabled:
            var single = encoder.singleValueContainer()
            try single.encode("disabled")
        case .tooManyRequests:
            var writer = try SettingsWriter(encoder, kind: "tooManyRequests")
            try writer.encode(self.maximum, "maximum")
        case .anyRetryAfter:
            var writer = try SettingsWriter(encoder, kind: "anyRetryAfter")
            try writer.encode(self.maximum, "maximum")
        }
    }
}
