import Foundation

@testable import Resilience

/// Fuzzes the `Retry-After` parser with arbitrary bytes.
///
/// Each input is parsed three ways: as raw bytes (no UTF-8 repair, as a header
/// arrives on the wire), as a `String` decoded with repair, and as a `Substring`
/// with a non-zero start; each against several receipt times, including NaN,
/// infinite and far-off ones. Invariants, checked on every input:
/// - an accepted delay is in `0...Duration.resilienceMaximum`;
/// - an accepted date lies between year -100 and the end of year 10049 (four-digit
///   years up to 9999, and two-digit RFC 850 years read within 50 years of a receipt
///   time, before one as early as year 1 and up to 50 years after one as late as the
///   end of year 9999);
/// - the three views agree (the grammar is ASCII, so UTF-8 repair cannot change a verdict);
/// - a value that parses as a date gives the delay from the receipt time to that date, clamped;
/// - an all-digit value is its number of seconds, and one too large for 64 bits is the maximum;
/// - a value that parses, sent twice (two header lines joined by a comma), asks for the same delay.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRetryAfterHeader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: raw, as: UTF8.self)
    // A Substring whose start is not the start of its base; dropped by scalar, not by
    // Character, so that a leading combining mark in the input stays in the slice.
    let sliced = Substring(("x" + text).unicodeScalars.dropFirst())

    for now in receiptTimes {
        let fromBytes = RetryAfterHeader.delay(utf8: raw, receivedAtSecondsSince1970: now)
        let fromString = RetryAfterHeader.delay(parsing: text, receivedAtSecondsSince1970: now)
        let fromSubstring = RetryAfterHeader.delay(parsing: sliced, receivedAtSecondsSince1970: now)
        require(
            fromBytes == fromString,
            "bytes gave \(String(describing: fromBytes)), string \(String(describing: fromString))")
        require(fromString == fromSubstring, "substring disagrees: \(String(describing: fromSubstring))")
        if let delay = fromString {
            require(delay >= .zero && delay <= .resilienceMaximum, "delay \(delay) out of range")
        }

        if let delay = fromString {
            let twice = RetryAfterHeader.delay(parsing: text + ", " + text, receivedAtSecondsSince1970: now)
            require(twice == delay, "sent twice, asks for \(String(describing: twice)) instead of \(delay)")
        }

        let date = RetryAfterHeader.date(parsing: text, relativeTo: Date(timeIntervalSince1970: now))
        if let date {
            let seconds = date.timeIntervalSince1970
            require(seconds.isFinite && seconds >= earliestDate && seconds < latestDate, "date \(seconds) out of range")
            if now.isFinite {
                require(fromString == .clampedSeconds(seconds - now), "date and delay disagree at \(now)")
            }
        }
    }

    let trimmed = text.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
    if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
        let significant = trimmed.drop { $0 == "0" }
        let expected: Duration =
            significant.count <= 18 ? .clampedSeconds(Double(Int64(significant) ?? 0)) : .resilienceMaximum
        let parsed = RetryAfterHeader.delay(parsing: text, receivedAtSecondsSince1970: 0)
        require(parsed == expected, "digits parsed as \(String(describing: parsed)), expected \(expected)")
    }
    return 0
}

/// Receipt times in seconds since 1970: ordinary, edge and nonsensical.
private let receiptTimes: [Double] = [
    1_735_689_600, 0, -62_135_596_800, 253_402_300_799, 1e300, -1e300, .nan, .infinity, -.infinity,
]

/// -0100-01-01T00:00:00Z: year 0000 at the earliest, or an RFC 850 two-digit year
/// taken as the most recent past year against a receipt time in year 1.
private let earliestDate: Double = -65_322_979_200
/// 10050-01-01T00:00:00Z plus a leap second's slack: an RFC 850 year read at the end of
/// 9999 may be up to 50 years ahead (`Sunday, 06-Feb-00 09:49:37 GMT` is in 10000).
private let latestDate: Double = 254_980_224_001
