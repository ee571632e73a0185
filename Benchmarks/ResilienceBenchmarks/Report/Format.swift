import Foundation

/// Number formatting shared by tables, JSON and charts.
enum Format {
    /// `value` with `digits` decimals, always with a dot, or `n/a` when not finite.
    static func decimal(_ value: Double, _ digits: Int) -> String {
        guard value.isFinite else { return "n/a" }
        return String(format: "%.\(digits)f", locale: Locale(identifier: "en_US_POSIX"), value)
    }

    /// A nanosecond figure with a precision that suits its size: `12.3`, `456`, `3,812`.
    static func nanoseconds(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        if value < 100 { return Self.decimal(value, 1) }
        return Self.grouped(Int(value.rounded()))
    }

    /// A duration in milliseconds, shown as `13.4 ms` below a second and `31.25 s` above.
    static func milliseconds(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        if value < 1_000 { return Self.decimal(value, 1) + " ms" }
        return Self.decimal(value / 1_000, 2) + " s"
    }

    /// An integer with thousands separators: `2,420`.
    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return value < 0 ? "-" + result : result
    }
}

/// Progress lines on standard error, so that standard output stays clean for tables or JSON.
struct Progress: Sendable {
    /// Whether to print anything.
    var isEnabled: Bool

    /// Prints `line` to standard error.
    func note(_ line: String) {
        guard self.isEnabled else { return }
        FileHandle.standardError.write(Data(("· " + line + "\n").utf8))
    }
}
