extension Jitter: Codable {
    /// Decodes a jitter from its settings form, and validates it.
    ///
    /// A kind without arguments is its name; a proportional jitter names its ratio:
    ///
    /// ```json
    /// "full"
    /// {"kind": "proportional", "ratio": 0.2}
    /// ```
    ///
    /// The names are `none`, `full`, `equal`, `decorrelated` and `proportional`.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting by its coding path, such as
    ///   `jitter.ratio`, when a value is missing, malformed or out of range, or a key is unknown.
    public init(from decoder: any Decoder) throws {
        let reader = try SettingsReader(decoder, allowsShorthand: true)
        let kind = try reader.kind([
            "none": [], "full": [], "equal": [], "decorrelated": [], "proportional": ["ratio"],
        ])
        switch kind {
        case "none": self = .none
        case "full": self = .full
        case "equal": self = .equal
        case "decorrelated": self = .decorrelated
        default: self = .proportional(try reader.value("ratio"))
        }
        try self.validate(settingPrefix: reader.name)
    }

    /// Encodes the jitter in its settings form; see ``init(from:)``.
    public func encode(to encoder: any Encoder) throws {
        if case .proportional(let ratio) = self.kind {
            var writer = try SettingsWriter(encoder, kind: "proportional")
            try writer.encode(ratio, "ratio")
        } else {
            var single = encoder.singleValueContainer()
            try single.encode(self.description)
        }
    }
}
