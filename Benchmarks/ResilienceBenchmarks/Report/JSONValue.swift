import Foundation

/// A JSON value whose objects keep their keys in the order written, so the
/// document reads in the order Docs/Benchmarks.md documents.
indirect enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case integer(Int)
    case number(Double, digits: Int)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    /// A number with `digits` decimals, or `null` when it is not finite.
    static func decimal(_ value: Double?, _ digits: Int = 3) -> JSONValue {
        guard let value, value.isFinite else { return .null }
        return .number(value, digits: digits)
    }

    /// The serialized document, pretty-printed with two-space indentation.
    func serialized(indent: Int = 0) -> String {
        let padding = String(repeating: "  ", count: indent)
        let inner = String(repeating: "  ", count: indent + 1)
        switch self {
        case .null:
            return "null"
        case .bool(let value):
            return value ? "true" : "false"
        case .integer(let value):
            return String(value)
        case .number(let value, let digits):
            // Trim trailing zeros so that 1.000 prints as 1.0, keeping it a JSON number.
            var text = Format.decimal(value, digits)
            while text.contains(".") && text.hasSuffix("0") && !text.hasSuffix(".0") { text.removeLast() }
            return text
        case .string(let value):
            return Self.quoted(value)
        case .array(let values):
            guard !values.isEmpty else { return "[]" }
            // Arrays of scalars and small objects print one element per line.
            let items = values.map { inner + $0.serialized(indent: indent + 1) }
            return "[\n" + items.joined(separator: ",\n") + "\n" + padding + "]"
        case .object(let members):
            guard !members.isEmpty else { return "{}" }
            if members.allSatisfy({ $0.1.isScalar }) {
                let items = members.map { Self.quoted($0.0) + ": " + $0.1.serialized(indent: indent + 1) }
                return "{" + items.joined(separator: ", ") + "}"
            }
            let items = members.map { inner + Self.quoted($0.0) + ": " + $0.1.serialized(indent: indent + 1) }
            return "{\n" + items.joined(separator: ",\n") + "\n" + padding + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: false
        default: true
        }
    }

    private static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                result += String(format: "\\u%04x", control.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
