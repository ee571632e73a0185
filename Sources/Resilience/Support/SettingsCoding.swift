// The shared machinery of the package's `Codable` settings.
//
// Every settings type decodes through a `SettingsReader`, so that all of them
// follow the same rules (see the "Settings from JSON and the environment"
// article): unknown keys are rejected, missing keys take the initializer's
// default, and every value that is out of range, of the wrong type or
// malformed fails with a `ConfigurationError` whose setting is the value's
// coding path, such as `breaker.tripRule.threshold`, never with a bare
// `DecodingError`.

/// A coding key made from any string or index.
struct SettingKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ string: String) {
        self.stringValue = string
        self.intValue = nil
    }

    init?(stringValue: String) {
        self.init(stringValue)
    }

    init?(intValue: Int) {
        self.stringValue = "\(intValue)"
        self.intValue = intValue
    }
}

extension ConfigurationError {
    /// The dotted name of `key` under `prefix`: `backoff.initial`, or just `initial` at the root.
    static func settingName(_ prefix: String, _ key: String) -> String {
        prefix.isEmpty ? key : "\(prefix).\(key)"
    }

    /// A coding path as a setting name: `policies.inventory.backoff`, `breakers[2].tripRule`.
    static func settingName(_ path: [any CodingKey]) -> String {
        var name = ""
        for key in path {
            if let index = key.intValue {
                name += "[\(index)]"
            } else {
                name = self.settingName(name, key.stringValue)
            }
        }
        return name
    }

    /// This error with its setting moved under `prefix`, for an error raised by a nested value.
    func nested(under prefix: String) -> ConfigurationError {
        ConfigurationError(
            setting: Self.settingName(prefix, self.setting), value: self.value, accepted: self.accepted)
    }
}

/// Reads one settings object (or, for kinds that take no arguments, a bare string).
struct SettingsReader {
    /// The dotted name of the object being read.
    let name: String
    private let container: KeyedDecodingContainer<SettingKey>?
    /// The object's kind when it was written as a bare string, such as `"full"`.
    private let shorthand: String?

    /// Opens the object at `decoder`.
    ///
    /// - Parameter allowsShorthand: Whether a bare string may stand for `{"kind": string}`.
    init(_ decoder: any Decoder, allowsShorthand: Bool = false) throws {
        self.name = ConfigurationError.settingName(decoder.codingPath)
        if allowsShorthand, let single = try? decoder.singleValueContainer(),
            let kind = try? single.decode(String.self)
        {
            self.shorthand = kind
            self.container = nil
            return
        }
        do {
            self.container = try decoder.container(keyedBy: SettingKey.self)
            self.shorthand = nil
        } catch {
            let value = SettingsReader.render(decoder)
            let accepted = allowsShorthand ? "an object of settings, or the name of a kind" : "an object of settings"
            throw ConfigurationError(
                setting: self.name.isEmpty ? "settings" : self.name, value: value, accepted: accepted)
        }
    }

    /// The dotted name of `key` in this object.
    func name(_ key: String) -> String {
        ConfigurationError.settingName(self.name, key)
    }

    /// Fails on any key not in `allowed`, so that a misspelt setting is not silently ignored.
    func rejectUnknownKeys(_ allowed: [String]) throws(ConfigurationError) {
        guard let container = self.container else { return }
        for key in container.allKeys where !allowed.contains(key.stringValue) {
            throw ConfigurationError(
                setting: self.name(key.stringValue), value: "an unknown key",
                accepted: "one of the known settings (\(allowed.joined(separator: ", ")))")
        }
    }

    /// The object's `kind`, which must be one of the keys of `keys`; the object's other keys
    /// must then be among the arguments `keys` lists for that kind.
    func kind(_ keys: KeyValuePairs<String, [String]>) throws -> String {
        let kinds = keys.map(\.key)
        let accepted = "one of \(kinds.joined(separator: ", "))"
        let kind: String
        if let shorthand = self.shorthand {
            kind = shorthand
        } else {
            guard let container = self.container, container.contains(SettingKey("kind")) else {
                throw ConfigurationError(setting: self.name("kind"), value: "no value", accepted: accepted)
            }
            do {
                kind = try container.decode(String.self, forKey: SettingKey("kind"))
            } catch {
                throw ConfigurationError(
                    setting: self.name("kind"), value: try self.rendered("kind"), accepted: accepted)
            }
        }
        guard let allowed = keys.first(where: { $0.key == kind })?.value else {
            throw ConfigurationError(setting: self.name("kind"), value: "\"\(kind)\"", accepted: accepted)
        }
        try self.rejectUnknownKeys(["kind"] + allowed)
        return kind
    }

    // MARK: - Values

    /// The value at `key`; `fallback` when the key is absent, or a ``ConfigurationError`` when there is none.
    ///
    /// A value of the wrong type, or a number that does not fit, fails with a
    /// ``ConfigurationError`` naming the key; errors from nested settings pass unchanged.
    func value<Value: Decodable>(_ key: String, default fallback: Value? = nil) throws -> Value {
        guard let container = self.container, container.contains(SettingKey(key)) else {
            if let fallback { return fallback }
            throw ConfigurationError(setting: self.name(key), value: "no value", accepted: Self.expected(Value.self))
        }
        do {
            return try container.decode(Value.self, forKey: SettingKey(key))
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(
                setting: self.name(key), value: try self.rendered(key), accepted: Self.expected(Value.self))
        }
    }

    /// The value at `key`, or `nil` when the key is absent or `null`.
    func optionalValue<Value: Decodable>(_ key: String) throws -> Value? {
        guard let container = self.container, container.contains(SettingKey(key)),
            try !container.decodeNil(forKey: SettingKey(key))
        else { return nil }
        return try self.value(key) as Value
    }

    /// The duration at `key` (see ``DurationSetting``); `fallback` when absent.
    func duration(_ key: String, default fallback: Duration? = nil) throws -> Duration {
        try self.value(key, default: fallback.map(DurationSetting.init)).duration
    }

    /// The duration at `key`, or `nil` when the key is absent or `null`.
    func optionalDuration(_ key: String) throws -> Duration? {
        try (self.optionalValue(key) as DurationSetting?)?.duration
    }

    /// How the value at `key` reads in an error message.
    private func rendered(_ key: String) throws -> String {
        guard let container = self.container else { return "no value" }
        return Self.render(try container.superDecoder(forKey: SettingKey(key)))
    }

    /// How the value at `decoder` reads in an error message: `"three"`, `2.5`, `true`, or its shape.
    ///
    /// A number no `Double` holds (`1e400`, `1e-400`) reads as "a number out of range": a decoder
    /// hands over no text for it, and it is neither an object nor anything else.
    static func render(_ decoder: any Decoder) -> String {
        if (try? decoder.unkeyedContainer()) != nil { return "a list" }
        if (try? decoder.container(keyedBy: SettingKey.self)) != nil { return "an object" }
        guard let single = try? decoder.singleValueContainer() else { return "an object" }
        if single.decodeNil() { return "null" }
        if let text = try? single.decode(String.self) { return "\"\(text)\"" }
        if let number = try? single.decode(Double.self) { return "\(number)" }
        if let flag = try? single.decode(Bool.self) { return "\(flag)" }
        return "a number out of range"
    }

    private static func expected(_ type: Any.Type) -> String {
        switch type {
        case is Int.Type: "a whole number in Int.min...Int.max"
        case is Double.Type: "a number"
        case is String.Type: "a string"
        case is DurationSetting.Type: DurationSetting.accepted
        default: "a settings object"
        }
    }
}

/// Writes one settings object.
struct SettingsWriter {
    private var container: KeyedEncodingContainer<SettingKey>

    init(_ encoder: any Encoder, kind: String? = nil) throws {
        self.container = encoder.container(keyedBy: SettingKey.self)
        if let kind { try self.container.encode(kind, forKey: SettingKey("kind")) }
    }

    mutating func encode(_ value: some Encodable, _ key: String) throws {
        try self.container.encode(value, forKey: SettingKey(key))
    }

    /// Writes `value`, or `null` when it is `nil`, so that the encoded form names every setting.
    mutating func encodeOptional(_ value: (some Encodable)?, _ key: String) throws {
        if let value {
            try self.container.encode(value, forKey: SettingKey(key))
        } else {
            try self.container.encodeNil(forKey: SettingKey(key))
        }
    }

    mutating func encode(_ duration: Duration, _ key: String) throws {
        try self.container.encode(DurationSetting(duration), forKey: SettingKey(key))
    }

    mutating func encodeOptional(_ duration: Duration?, _ key: String) throws {
        try self.encodeOptional(duration.map(DurationSetting.init), key)
    }
}

/// A duration as settings write it: a string with a unit, such as `"250ms"`, `"1.5s"` or `"2m"`.
///
/// Decoding takes a number of seconds (`30`, `0.25`) or a decimal number with one
/// of the units `ns`, `us` (or `µs`), `ms`, `s`, `m` and `h` (`"250ms"`, `"1.5s"`,
/// `"-1s"`, `"2 m"`). Encoding writes the largest of `s`, `ms`, `us` and `ns` that
/// holds the duration exactly, or decimal seconds below a nanosecond, so a round
/// trip gives back the same duration to the attosecond. A negative duration
/// decodes, so that the setting's own validation can name it and say what it accepts.
struct DurationSetting: Codable, Hashable {
    let duration: Duration

    static let accepted = "a duration: seconds as a number, or a string such as \"250ms\", \"1.5s\" or \"2m\""

    init(_ duration: Duration) {
        self.duration = duration
    }

    init(from decoder: any Decoder) throws {
        let name = ConfigurationError.settingName(decoder.codingPath)
        let single = try decoder.singleValueContainer()
        let parsed: Duration?
        if let text = try? single.decode(String.self) {
            parsed = Self.parse(text)
        } else if let seconds = try? single.decode(Double.self) {
            // A whole number is read exactly, past a `Double`'s 53 bits; but only when the two
            // readings agree, as a decoder may read a number too small for a `Double` (`1e-400`)
            // as the whole number zero, which would turn a delay into none.
            if let whole = try? single.decode(Int64.self), Double(whole) == seconds {
                parsed = Duration(attoseconds: Int128(whole) * Self.attosecondsPerSecond)
            } else {
                parsed = Self.duration(seconds: seconds)
            }
        } else {
            parsed = nil
        }
        guard let parsed else {
            throw ConfigurationError(setting: name, value: SettingsReader.render(decoder), accepted: Self.accepted)
        }
        self.duration = parsed
    }

    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(Self.format(self.duration))
    }

    // MARK: - Text

    private static let attosecondsPerSecond: Int128 = 1_000_000_000_000_000_000

    private static let units: [(suffix: String, attoseconds: Int128)] = [
        ("ns", 1_000_000_000), ("us", 1_000_000_000_000), ("µs", 1_000_000_000_000),
        ("ms", 1_000_000_000_000_000), ("s", attosecondsPerSecond), ("m", 60 * attosecondsPerSecond),
        ("h", 3_600 * attosecondsPerSecond),
    ]

    /// `"250ms"`, `"30s"`, `"1500ms"`, `"7ns"`, `"0.000000000000000001s"`, `"-1s"`.
    static func format(_ duration: Duration) -> String {
        let attoseconds = duration.attoseconds
        let sign = attoseconds < 0 ? "-" : ""
        let magnitude = attoseconds.magnitude
        for (suffix, size) in [
            ("s", 1_000_000_000_000_000_000), ("ms", 1_000_000_000_000_000), ("us", 1_000_000_000_000),
            ("ns", 1_000_000_000),
        ] as [(String, UInt128)]
        where magnitude % size == 0 {
            return "\(sign)\(magnitude / size)\(suffix)"
        }
        var fraction = String(magnitude % 1_000_000_000_000_000_000)
        fraction = String(repeating: "0", count: 18 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(magnitude / 1_000_000_000_000_000_000).\(fraction)s"
    }

    /// Parses `[sign] digits [. digits] [spaces] unit`; `nil` when malformed or beyond `Duration`'s range.
    static func parse(_ text: String) -> Duration? {
        var rest = Substring(text.trimmingSpaces)
        guard let unit = Self.units.filter({ rest.hasSuffix($0.suffix) }).max(by: { $0.suffix.count < $1.suffix.count })
        else { return nil }
        rest = Substring(rest.dropLast(unit.suffix.count).trimmingSpaces)
        var negative = false
        if let first = rest.first, first == "-" || first == "+" {
            negative = first == "-"
            rest = rest.dropFirst()
        }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        guard !(whole.isEmpty && fraction.isEmpty), (whole + fraction).allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        var total: Int128 = 0
        for digit in whole {
            let (shifted, overflow1) = total.multipliedReportingOverflow(by: 10)
            let (added, overflow2) = shifted.addingReportingOverflow(Int128(digit.wholeNumberValue!))
            guard !overflow1, !overflow2 else { return nil }
            total = added
        }
        let (scaled, overflow) = total.multipliedReportingOverflow(by: unit.attoseconds)
        guard !overflow else { return nil }
        total = scaled
        // Fractional digits below an attosecond are dropped.
        var place = unit.attoseconds
        for digit in fraction {
            place /= 10
            guard place > 0 else { break }
            let (added, overflow) = total.addingReportingOverflow(Int128(digit.wholeNumberValue!) * place)
            guard !overflow else { return nil }
            total = added
        }
        return Duration(attoseconds: negative ? -total : total)
    }

    /// A number of seconds as a duration: to the nanosecond up to a billion seconds, to the second beyond.
    /// Below a nanosecond, to the attosecond, as a string with a unit is read; `nil` for a
    /// number so small that it would round to zero, so that it is reported as it was written.
    private static func duration(seconds: Double) -> Duration? {
        guard seconds.isFinite else { return nil }
        if seconds.magnitude < 1e-9 {
            let attoseconds = Int128((seconds * 1e18).rounded())
            return attoseconds == 0 && seconds != 0 ? nil : Duration(attoseconds: attoseconds)
        }
        if seconds.magnitude < 1e9 {
            return .nanoseconds(Int64((seconds * 1e9).rounded()))
        }
        guard seconds.magnitude < 1e20 else { return nil }
        return Duration(attoseconds: Int128(seconds.rounded()) * Self.attosecondsPerSecond)
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: SubSequence {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = self.firstIndex(where: { !isSpace($0) }) else { return self[self.endIndex...] }
        let end = self.lastIndex(where: { !isSpace($0) })!
        return self[start...end]
    }
}
