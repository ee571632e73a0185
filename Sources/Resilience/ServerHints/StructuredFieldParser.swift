/// A strict parser for List fields of RFC 9651, Structured Field Values for HTTP.
///
/// It implements the List algorithm of section 4.2.1 with every bare item type
/// (Integer, Decimal, String, Token, Byte Sequence, Boolean, Date, Display
/// String), Inner Lists and Parameters. Any deviation fails the whole field, as
/// the RFC requires: a recipient ignores a field it cannot parse. Input is raw
/// bytes, as the field arrives; nothing is repaired.
struct StructuredFieldParser {
    /// A bare item.
    enum BareItem: Hashable {
        case integer(Int64)
        case decimal(Double)
        case string(String)
        case token(String)
        /// The base64 text between the colons, validated but not decoded.
        case byteSequence(String)
        case boolean(Bool)
        case date(Int64)
        case displayString(String)
    }

    /// An item with its parameters, in order (a repeated key keeps its first place and its last value).
    struct Item: Hashable {
        var value: BareItem
        var parameters: [(key: String, value: BareItem)]

        static func == (lhs: Item, rhs: Item) -> Bool {
            lhs.value == rhs.value && lhs.parameters.elementsEqual(rhs.parameters) { $0 == $1 }
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(self.value)
            for parameter in self.parameters {
                hasher.combine(parameter.key)
                hasher.combine(parameter.value)
            }
        }

        /// The value of parameter `key`, if present.
        func parameter(_ key: String) -> BareItem? {
            self.parameters.first { $0.key == key }?.value
        }
    }

    /// A list member: an item, or an inner list (kept only to be skipped by callers).
    enum Member: Hashable {
        case item(Item)
        case innerList([Item])
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: some Collection<UInt8>) {
        self.bytes = Array(bytes)
    }

    /// Parses `bytes` as a List; `nil` when the field is malformed.
    static func list(utf8 bytes: some Collection<UInt8>) -> [Member]? {
        var parser = StructuredFieldParser(bytes)
        return parser.parseField()
    }

    /// Parses `text` as a List; `nil` when the field is malformed.
    static func list(parsing text: some StringProtocol) -> [Member]? {
        self.list(utf8: Array(text.utf8))
    }

    // MARK: - Field and list (RFC 9651, 4.2 and 4.2.1)

    private mutating func parseField() -> [Member]? {
        self.skipSpaces()
        guard let members = self.parseList() else { return nil }
        self.skipSpaces()
        return self.index == self.bytes.count ? members : nil
    }

    private mutating func parseList() -> [Member]? {
        var members: [Member] = []
        while self.index < self.bytes.count {
            guard let member = self.parseMember() else { return nil }
            members.append(member)
            self.skipOptionalWhitespace()
            if self.index == self.bytes.count { return members }
            guard self.bytes[self.index] == UInt8(ascii: ",") else { return nil }
            self.index += 1
            self.skipOptionalWhitespace()
            if self.index == self.bytes.count { return nil }  // a trailing comma
        }
        return members
    }

    private mutating func parseMember() -> Member? {
        if self.peek == UInt8(ascii: "(") {
            return self.parseInnerList().map(Member.innerList)
        }
        return self.parseItem().map(Member.item)
    }

    private mutating func parseInnerList() -> [Item]? {
        self.index += 1  // "("
        var items: [Item] = []
        while self.index < self.bytes.count {
            self.skipSpaces()
            if self.peek == UInt8(ascii: ")") {
                self.index += 1
                guard self.parseParameters() != nil else { return nil }
                return items
            }
            guard let item = self.parseItem() else { return nil }
            items.append(item)
            guard let next = self.peek, next == UInt8(ascii: " ") || next == UInt8(ascii: ")") else { return nil }
        }
        return nil  // no closing parenthesis
    }

    private mutating func parseItem() -> Item? {
        guard let value = self.parseBareItem(), let parameters = self.parseParameters() else { return nil }
        return Item(value: value, parameters: parameters)
    }

    private mutating func parseParameters() -> [(key: String, value: BareItem)]? {
        var parameters: [(key: String, value: BareItem)] = []
        while self.peek == UInt8(ascii: ";") {
            self.index += 1
            self.skipSpaces()
            guard let key = self.parseKey() else { return nil }
            var value = BareItem.boolean(true)
            if self.peek == UInt8(ascii: "=") {
                self.index += 1
                guard let parsed = self.parseBareItem() else { return nil }
                value = parsed
            }
            if let existing = parameters.firstIndex(where: { $0.key == key }) {
                parameters[existing].value = value
            } else {
                parameters.append((key, value))
            }
        }
        return parameters
    }

    private mutating func parseKey() -> String? {
        guard let first = self.peek, Self.isLowercaseAlpha(first) || first == UInt8(ascii: "*") else { return nil }
        let start = self.index
        while let byte = self.peek,
            Self.isLowercaseAlpha(byte) || Self.isDigit(byte) || "_-.*".utf8.contains(byte)
        {
            self.index += 1
        }
        return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
    }

    // MARK: - Bare items (4.2.3.1 onwards)

    private mutating func parseBareItem() -> BareItem? {
        guard let first = self.peek else { return nil }
        switch first {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return self.parseNumber()
        case UInt8(ascii: "\""): return self.parseString().map(BareItem.string)
        case UInt8(ascii: "*"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"):
            return self.parseToken()
        case UInt8(ascii: ":"): return self.parseByteSequence()
        case UInt8(ascii: "?"): return self.parseBoolean()
        case UInt8(ascii: "@"): return self.parseDate()
        case UInt8(ascii: "%"): return self.parseDisplayString()
        default: return nil
        }
    }

    private mutating func parseNumber() -> BareItem? {
        var negative = false
        if self.peek == UInt8(ascii: "-") {
            negative = true
            self.index += 1
        }
        guard let first = self.peek, Self.isDigit(first) else { return nil }
        var integerDigits: [UInt8] = []
        var fractionDigits: [UInt8] = []
        var isDecimal = false
        while let byte = self.peek {
            if Self.isDigit(byte) {
                if isDecimal { fractionDigits.append(byte) } else { integerDigits.append(byte) }
                self.index += 1
            } else if byte == UInt8(ascii: "."), !isDecimal {
                guard integerDigits.count <= 12 else { return nil }
                isDecimal = true
                self.index += 1
            } else {
                break
            }
            if !isDecimal, integerDigits.count > 15 { return nil }
            if isDecimal, fractionDigits.count > 3 { return nil }
        }
        if !isDecimal {
            var value: Int64 = 0
            for digit in integerDigits { value = value * 10 + Int64(digit - UInt8(ascii: "0")) }
            return .integer(negative ? -value : value)
        }
        guard !fractionDigits.isEmpty else { return nil }  // "1." is not a number
        let text =
            String(decoding: integerDigits, as: UTF8.self) + "." + String(decoding: fractionDigits, as: UTF8.self)
        guard let value = Double(text) else { return nil }
        return .decimal(negative ? -value : value)
    }

    private mutating func parseString() -> String? {
        self.index += 1  // opening quote
        var scalars: [UInt8] = []
        while let byte = self.peek {
            self.index += 1
            switch byte {
            case UInt8(ascii: "\\"):
                guard let escaped = self.peek, escaped == UInt8(ascii: "\"") || escaped == UInt8(ascii: "\\") else {
                    return nil
                }
                scalars.append(escaped)
                self.index += 1
            case UInt8(ascii: "\""):
                return String(decoding: scalars, as: UTF8.self)
            case 0x20...0x7E:
                scalars.append(byte)
            default:
                return nil
            }
        }
        return nil  // no closing quote
    }

    private mutating func parseToken() -> BareItem {
        let start = self.index
        self.index += 1
        while let byte = self.peek,
            Self.isTokenCharacter(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "/")
        {
            self.index += 1
        }
        return .token(String(decoding: self.bytes[start..<self.index], as: UTF8.self))
    }

    private mutating func parseByteSequence() -> BareItem? {
        self.index += 1
        let start = self.index
        while let byte = self.peek, byte != UInt8(ascii: ":") {
            guard Self.isAlphanumeric(byte) || "+/=".utf8.contains(byte) else { return nil }
            self.index += 1
        }
        guard self.peek == UInt8(ascii: ":") else { return nil }
        let text = String(decoding: self.bytes[start..<self.index], as: UTF8.self)
        self.index += 1
        return .byteSequence(text)
    }

    private mutating func parseBoolean() -> BareItem? {
        self.index += 1
        guard let byte = self.peek else { return nil }
        self.index += 1
        switch byte {
        case UInt8(ascii: "0"): return .boolean(false)
        case UInt8(ascii: "1"): return .boolean(true)
        default: return nil
        }
    }

    private mutating func parseDate() -> BareItem? {
        self.index += 1
        guard case .integer(let seconds) = self.parseNumber() else { return nil }
        return .date(seconds)
    }

    private mutating func parseDisplayString() -> BareItem? {
        self.index += 1
        guard self.peek == UInt8(ascii: "\"") else { return nil }
        self.index += 1
        var bytes: [UInt8] = []
        while let byte = self.peek {
            self.index += 1
            switch byte {
            case UInt8(ascii: "%"):
                guard self.index + 1 < self.bytes.count,
                    let high = Self.lowercaseHexValue(self.bytes[self.index]),
                    let low = Self.lowercaseHexValue(self.bytes[self.index + 1])
                else { return nil }
                bytes.append(high << 4 | low)
                self.index += 2
            case UInt8(ascii: "\""):
                guard let text = String(validating: bytes, as: UTF8.self) else { return nil }
                return .displayString(text)
            case 0x20...0x7E:
                bytes.append(byte)
            default:
                return nil
            }
        }
        return nil
    }

    // MARK: - Characters

    private var peek: UInt8? {
        self.index < self.bytes.count ? self.bytes[self.index] : nil
    }

    private mutating func skipSpaces() {
        while self.peek == UInt8(ascii: " ") { self.index += 1 }
    }

    private mutating func skipOptionalWhitespace() {
        while let byte = self.peek, byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { self.index += 1 }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    private static func isLowercaseAlpha(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        Self.isDigit(byte) || Self.isLowercaseAlpha(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// RFC 9110's tchar.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        Self.isAlphanumeric(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }

    private static func lowercaseHexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
