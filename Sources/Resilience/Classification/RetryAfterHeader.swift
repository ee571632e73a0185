public import Foundation

/// Parses the HTTP `Retry-After` header (RFC 9110, section 10.2.3).
///
/// The value is either a whole number of seconds or an HTTP date. All three date
/// forms a recipient must accept are understood:
///
/// | form | example |
/// |---|---|
/// | IMF-fixdate | `Sun, 06 Nov 1994 08:49:37 GMT` |
/// | obsolete RFC 850 | `Sunday, 06-Nov-94 08:49:37 GMT` |
/// | ANSI C `asctime()` | `Sun Nov  6 08:49:37 1994` |
///
/// A date in the past means "retry now" (zero). A malformed value yields `nil`
/// and is never fatal: negative or fractional numbers, a leading `+`, impossible
/// dates, and trailing garbage are all rejected. Values that parse but are
/// absurdly large, including numbers too large for 64 bits, are clamped to about
/// 146 years; ``RetryPolicy`` then refuses them through its `maximumRetryAfter`.
/// Only the zone `GMT` is accepted in a date, as RFC 9110's grammar has it: a
/// date ending in `UTC` or `+0000` is rejected like any other malformed value,
/// and the policy's own backoff applies.
///
/// A `Retry-After` line sent twice (a proxy and the application both set it) can
/// arrive joined into one comma-separated value: `120, 120`. The field allows one
/// value only (RFC 9110, section 5.3), but dropping such a list would let a client
/// come back at once to a server that asked it to stay away. So when every member
/// of the list parses, the longest delay counts; when any member does not, the
/// whole value is ignored. An HTTP date's own comma (`Sun, 06 Nov 1994 08:49:37 GMT`)
/// does not split it, and empty members (`120, , 120`) are skipped, as RFC 9110
/// (section 5.6.1) asks of a list's recipient.
///
/// What reaches this parser is what the HTTP stack hands over. On Linux,
/// `URLSession` (FoundationNetworking, as of Swift 6.3) joins lines whose names
/// are spelled alike (`Retry-After: 0`, then `Retry-After: 120`, arrive as
/// `0, 120`), but of lines whose names differ only in case (`Retry-After: 0`,
/// then `retry-after: 120`) it keeps one value and drops the others, and which
/// one it keeps can change from one run of the process to the next. The dropped
/// lines are gone before any response reaches the library, so the wait is the
/// kept line's. On Apple platforms this has not been measured. A server that
/// wants its hint honoured sends one line.
///
/// ```swift
/// RetryAfterHeader.delay(parsing: "120")                             // 120 seconds
/// RetryAfterHeader.delay(parsing: "Sun, 06 Nov 1994 08:49:37 GMT")  // 0: in the past
/// RetryAfterHeader.delay(parsing: "soon")                            // nil
/// ```
public enum RetryAfterHeader {
    /// The delay a `Retry-After` value asks for, counted from `receivedAt`, or `nil` when malformed.
    ///
    /// A date is measured against `receivedAt`, this device's clock; when the response has a
    /// `Date` field, ``delay(parsing:dateField:receivedAt:)`` measures it against the server's.
    ///
    /// - Parameters:
    ///   - value: The header's field value; surrounding spaces and tabs are ignored.
    ///   - receivedAt: When the response arrived; dates are measured from it.
    public static func delay(parsing value: some StringProtocol, receivedAt: Date = Date()) -> Duration? {
        self.delay(parsing: value, receivedAtSecondsSince1970: receivedAt.timeIntervalSince1970)
    }

    /// The delay a response's `Retry-After` value asks for, with an HTTP date measured
    /// against the response's own `Date` field, or `nil` when the value is malformed.
    ///
    /// RFC 9110 (section 10.2.3) gives a date as the moment to come back, and the server
    /// stamps its response with the moment it made it (the `Date` field, section 6.6.1):
    /// the difference is the wait the server meant, whatever this device's clock says. A
    /// client whose clock runs an hour behind would otherwise wait an hour more than asked,
    /// and one an hour ahead would come back at once. So a date is measured from the
    /// `Date` field when it is a well-formed HTTP date, and from `receivedAt` when the
    /// field is absent or malformed: the hint itself is never dropped for the field's sake.
    /// A number of seconds is counted from receipt, whatever the field says.
    ///
    /// ```swift
    /// let wait = RetryAfterHeader.delay(
    ///     parsing: "Sun, 06 Nov 1994 08:51:37 GMT", dateField: "Sun, 06 Nov 1994 08:49:37 GMT")
    /// // 120 seconds, whatever the local clock reads
    /// ```
    ///
    /// - Parameters:
    ///   - value: The `Retry-After` field value; surrounding spaces and tabs are ignored.
    ///   - dateField: The response's `Date` field value, if it had one.
    ///   - receivedAt: When the response arrived; a date is measured from it when `dateField`
    ///     is `nil` or not an HTTP date.
    public static func delay(
        parsing value: some StringProtocol, dateField: String?, receivedAt: Date = Date()
    ) -> Duration? {
        let received = receivedAt.timeIntervalSince1970
        guard let dateField else { return self.delay(parsing: value, receivedAtSecondsSince1970: received) }
        var bytes = Array(dateField.utf8)[...]
        self.trim(&bytes)
        let origin = self.parseHTTPDate(bytes, nowSecondsSince1970: received).map(Double.init) ?? received
        return self.delay(parsing: value, receivedAtSecondsSince1970: origin)
    }

    /// The instant an HTTP date names, or `nil` when `value` is not one of the three forms.
    public static func date(parsing value: some StringProtocol, relativeTo now: Date = Date()) -> Date? {
        var bytes = Array(value.utf8)[...]
        self.trim(&bytes)
        guard let seconds = self.parseHTTPDate(bytes, nowSecondsSince1970: now.timeIntervalSince1970) else {
            return nil
        }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// The implementation behind ``delay(parsing:receivedAt:)``, with time as seconds since 1970.
    static func delay(parsing value: some StringProtocol, receivedAtSecondsSince1970 now: Double) -> Duration? {
        self.delay(utf8: value.utf8, receivedAtSecondsSince1970: now)
    }

    /// The delay a `Retry-After` field value asks for, from its raw bytes.
    ///
    /// Field values are bytes on the wire and may hold any octet; this entry point
    /// takes them as they are, with no UTF-8 validation or repair. The fuzzer uses it.
    static func delay(utf8 value: some Collection<UInt8>, receivedAtSecondsSince1970 now: Double) -> Duration? {
        let bytes = Array(value)[...]
        guard bytes.contains(UInt8(ascii: ",")) else { return self.delay(member: bytes, now: now) }
        // A list: every member must parse, and the longest delay counts.
        var longest: Duration?
        var rest = bytes
        while let member = self.nextListMember(&rest, of: bytes) {
            guard let delay = self.delay(member: member, now: now) else { return nil }
            longest = Swift.max(longest ?? delay, delay)
        }
        return longest
    }

    /// The next non-empty member of a comma-separated list, removed from `list` (the rest
    /// of `whole`), or `nil` when only empty members are left.
    ///
    /// A member that is a day name alone (`Sun`, `Sunday`) is the start of an
    /// IMF-fixdate or RFC 850 date whose own comma the split went through: it takes the
    /// next piece back, so `Sun, 06 Nov 1994 08:49:37 GMT` stays one member.
    private static func nextListMember(_ list: inout Bytes, of whole: Bytes) -> Bytes? {
        while !list.isEmpty {
            var member = self.takePiece(&list)
            self.trim(&member)
            if member.isEmpty { continue }
            if member.allSatisfy(self.isLetter), !list.isEmpty {
                let start = member.startIndex
                let date = self.takePiece(&list)
                member = whole[start..<date.endIndex]
                self.trim(&member)
            }
            return member
        }
        return nil
    }

    /// The bytes before the first comma of `list`, removing them and the comma from `list`.
    private static func takePiece(_ list: inout Bytes) -> Bytes {
        let end = list.firstIndex(of: UInt8(ascii: ",")) ?? list.endIndex
        let piece = list[..<end]
        list = end == list.endIndex ? list[end...] : list[list.index(after: end)...]
        return piece
    }

    /// The delay one value (not a list) asks for.
    private static func delay(member value: Bytes, now: Double) -> Duration? {
        var bytes = value
        self.trim(&bytes)
        guard let first = bytes.first else { return nil }
        if self.isDigit(first) {
            guard let seconds = self.parseDelaySeconds(bytes) else { return nil }
            return .clampedSeconds(Double(seconds))
        }
        guard let date = self.parseHTTPDate(bytes, nowSecondsSince1970: now), now.isFinite else { return nil }
        return .clampedSeconds(Double(date) - now)
    }

    // MARK: - Grammar

    private typealias Bytes = ArraySlice<UInt8>

    private static func trim(_ bytes: inout Bytes) {
        while let first = bytes.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") {
            bytes.removeFirst()
        }
        while let last = bytes.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            bytes.removeLast()
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
    }

    /// `delay-seconds = 1*DIGIT`, saturating at `Int64.max` when it does not fit in 63 bits.
    ///
    /// A number too large to represent is still a well-formed request for a very
    /// long wait, so it saturates (as RFC 9111 section 1.2.2 has caches do with
    /// `delta-seconds`) rather than being dropped: dropping it would let a client
    /// retry at once against a server that asked it to stay away.
    private static func parseDelaySeconds(_ bytes: Bytes) -> Int64? {
        guard !bytes.isEmpty else { return nil }
        var total: Int64 = 0
        for byte in bytes {
            guard self.isDigit(byte) else { return nil }
            let (shifted, overflow1) = total.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            total = overflow1 || overflow2 ? .max : sum
        }
        return total
    }

    /// Seconds since 1970 for any of the three HTTP-date forms.
    private static func parseHTTPDate(_ bytes: Bytes, nowSecondsSince1970 now: Double) -> Int64? {
        var scanner = Scanner(bytes: bytes)
        guard let dayName = scanner.letters(), !dayName.isEmpty else { return nil }
        if scanner.consume(UInt8(ascii: ",")) {
            if dayName.count == 3 {
                guard self.shortDayNames.contains(dayName) else { return nil }
                return self.parseIMFFixdate(&scanner)
            }
            guard self.longDayNames.contains(dayName) else { return nil }
            return self.parseRFC850(&scanner, now: now)
        }
        guard self.shortDayNames.contains(dayName) else { return nil }
        return self.parseASCTime(&scanner)
    }

    /// `SP day SP month SP year SP time SP "GMT"` after `day-name ","`.
    private static func parseIMFFixdate(_ scanner: inout Scanner) -> Int64? {
        guard scanner.consume(UInt8(ascii: " ")), let day = scanner.digits(exactly: 2),
            scanner.consume(UInt8(ascii: " ")), let month = scanner.month(),
            scanner.consume(UInt8(ascii: " ")), let year = scanner.digits(exactly: 4),
            scanner.consume(UInt8(ascii: " ")), let time = scanner.time(),
            scanner.consume(UInt8(ascii: " ")), scanner.consumeGMT(), scanner.isAtEnd
        else { return nil }
        return self.secondsSince1970(year: year, month: month, day: day, time: time)
    }

    /// `SP day "-" month "-" 2DIGIT SP time SP "GMT"` after `day-name-l ","`.
    private static func parseRFC850(_ scanner: inout Scanner, now: Double) -> Int64? {
        guard scanner.consume(UInt8(ascii: " ")), let day = scanner.digits(exactly: 2),
            scanner.consume(UInt8(ascii: "-")), let month = scanner.month(),
            scanner.consume(UInt8(ascii: "-")), let shortYear = scanner.digits(exactly: 2),
            scanner.consume(UInt8(ascii: " ")), let time = scanner.time(),
            scanner.consume(UInt8(ascii: " ")), scanner.consumeGMT(), scanner.isAtEnd
        else { return nil }
        // RFC 9110: a two-digit year that appears more than 50 years in the future
        // means the most recent past year with the same last two digits. So the year is
        // the latest with those digits that is not more than 50 years ahead of now: the
        // one nearest now, in the next century when now is at the end of this one
        // ("00" read on 31 December 2099 is 2100). Candidates start a century ahead and
        // step back. The whole instant is compared, not the year alone: the same date and
        // time 50 years earlier is after now exactly when the date is more than 50 years
        // ahead. (Taken as days from civil without checking the day, so that 29 February
        // of a leap year compares as 1 March of the year 50 years earlier, which has none.)
        let (currentYear, reference) = self.year(ofSecondsSince1970: now)
        let secondOfDay = Double(time.hour * 3_600 + time.minute * 60 + time.second)
        func isMoreThanFiftyYearsAhead(_ year: Int) -> Bool {
            let fiftyYearsEarlier = Double(self.daysSince1970(year: year - 50, month: month, day: day)) * 86_400
            return fiftyYearsEarlier + secondOfDay > reference
        }
        var year = (currentYear / 100) * 100 + 100 + shortYear
        while isMoreThanFiftyYearsAhead(year) { year -= 100 }
        return self.secondsSince1970(year: year, month: month, day: day, time: time)
    }

    /// `SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time SP year` after `day-name`.
    private static func parseASCTime(_ scanner: inout Scanner) -> Int64? {
        guard scanner.consume(UInt8(ascii: " ")), let month = scanner.month(), scanner.consume(UInt8(ascii: " "))
        else { return nil }
        let day: Int
        if scanner.consume(UInt8(ascii: " ")) {
            guard let digit = scanner.digits(exactly: 1) else { return nil }
            day = digit
        } else {
            guard let digits = scanner.digits(exactly: 2) else { return nil }
            day = digits
        }
        guard scanner.consume(UInt8(ascii: " ")), let time = scanner.time(),
            scanner.consume(UInt8(ascii: " ")), let year = scanner.digits(exactly: 4), scanner.isAtEnd
        else { return nil }
        return self.secondsSince1970(year: year, month: month, day: day, time: time)
    }

    private static let shortDayNames: Set<String> = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDayNames: Set<String> = [
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
    ]
    fileprivate static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    private static func secondsSince1970(
        year: Int, month: Int, day: Int, time: (hour: Int, minute: Int, second: Int)
    ) -> Int64? {
        guard day >= 1, day <= self.daysInMonth(year: year, month: month),
            time.hour <= 23, time.minute <= 59, time.second <= 60
        else { return nil }
        let days = self.daysSince1970(year: year, month: month, day: day)
        return Int64(days) * 86_400 + Int64(time.hour * 3_600 + time.minute * 60 + time.second)
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2:
            let isLeap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return isLeap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (Hinnant's days-from-civil).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year of an instant, with the instant itself; for an instant too far off to
    /// place (or not a number), the year 2000 and its first instant instead.
    private static func year(ofSecondsSince1970 seconds: Double) -> (year: Int, reference: Double) {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return (2000, 946_684_800) }
        let days = Int((seconds / 86_400).rounded(.down))
        // Hinnant's civil-from-days, year only.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthPrime = (5 * dayOfYear + 2) / 153
        let month = monthPrime < 10 ? monthPrime + 3 : monthPrime - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), seconds)
    }
}

/// A cursor over the bytes of a header value.
private struct Scanner {
    var bytes: ArraySlice<UInt8>

    var isAtEnd: Bool { self.bytes.isEmpty }

    mutating func consume(_ byte: UInt8) -> Bool {
        guard self.bytes.first == byte else { return false }
        self.bytes.removeFirst()
        return true
    }

    /// ASCII letters, possibly none.
    mutating func letters() -> String? {
        var result = ""
        while let byte = self.bytes.first,
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
        {
            result.unicodeScalars.append(Unicode.Scalar(byte))
            self.bytes.removeFirst()
            if result.count > 9 { return nil }
        }
        return result
    }

    mutating func digits(exactly count: Int) -> Int? {
        guard self.bytes.count >= count else { return nil }
        var value = 0
        for _ in 0..<count {
            let byte = self.bytes.removeFirst()
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// A case-sensitive three-letter month name, as 1...12.
    mutating func month() -> Int? {
        guard self.bytes.count >= 3 else { return nil }
        let name = String(decoding: self.bytes.prefix(3), as: UTF8.self)
        guard let index = RetryAfterHeader.monthNames.firstIndex(of: name) else { return nil }
        self.bytes.removeFirst(3)
        return index + 1
    }

    /// `hour ":" minute ":" second`, two digits each.
    mutating func time() -> (hour: Int, minute: Int, second: Int)? {
        guard let hour = self.digits(exactly: 2), self.consume(UInt8(ascii: ":")),
            let minute = self.digits(exactly: 2), self.consume(UInt8(ascii: ":")),
            let second = self.digits(exactly: 2)
        else { return nil }
        return (hour, minute, second)
    }

    mutating func consumeGMT() -> Bool {
        guard self.bytes.starts(with: "GMT".utf8) else { return false }
        self.bytes.removeFirst(3)
        return true
    }
}
