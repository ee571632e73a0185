import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite("Retry-After header")
struct RetryAfterHeaderTests {
    /// 1994-11-06 08:49:37 UTC, the instant of RFC 9110's example dates.
    static let exampleInstant = Date(timeIntervalSince1970: 784_111_777)

    @Test func delaySecondsAreSecondsFromReceipt() {
        #expect(RetryAfterHeader.delay(parsing: "120") == .seconds(120))
        #expect(RetryAfterHeader.delay(parsing: "0") == .zero)
        #expect(RetryAfterHeader.delay(parsing: " 7\t") == .seconds(7))
        #expect(RetryAfterHeader.delay(parsing: "007") == .seconds(7))
    }

    @Test(arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
        "Sunday, 06-Nov-94 08:49:37 GMT",  // obsolete RFC 850
        "Sun Nov  6 08:49:37 1994",  // asctime
    ])
    func allThreeDateFormsNameTheSameInstant(value: String) {
        let receivedAt = Self.exampleInstant.addingTimeInterval(-90)
        #expect(RetryAfterHeader.delay(parsing: value, receivedAt: receivedAt) == .seconds(90))
        let date = RetryAfterHeader.date(parsing: value, relativeTo: receivedAt)
        #expect(date == Self.exampleInstant)
    }

    @Test func asctimeWithATwoDigitDay() {
        let receivedAt = Date(timeIntervalSince1970: 784_111_777 + 10 * 86_400 - 60)
        #expect(RetryAfterHeader.delay(parsing: "Wed Nov 16 08:49:37 1994", receivedAt: receivedAt) == .seconds(60))
    }

    @Test func dateInThePastMeansRetryNow() {
        let receivedAt = Self.exampleInstant.addingTimeInterval(3_600)
        #expect(RetryAfterHeader.delay(parsing: "Sun, 06 Nov 1994 08:49:37 GMT", receivedAt: receivedAt) == .zero)
    }

    @Test func rfc850TwoDigitYearsAreInterpretedWithinFiftyYears() {
        let now = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11
        let date = RetryAfterHeader.date(parsing: "Monday, 23-Nov-26 10:00:00 GMT", relativeTo: now)
        let expected = Date(timeIntervalSince1970: 1_795_428_000)  // 2026-11-23 10:00:00 UTC
        #expect(date == expected)
        // "94" is more than 50 years ahead as 2094, so it means 1994.
        #expect(
            RetryAfterHeader.date(parsing: "Sunday, 06-Nov-94 08:49:37 GMT", relativeTo: now) == Self.exampleInstant)
    }

    /// RFC 9110, section 5.6.7: a two-digit year that appears more than 50 years in the
    /// future is the most recent past year with those digits. Read in November 2023,
    /// 31 December 2073 is 50 years and six weeks ahead, so "73" is 1973, although 2073
    /// is only 50 years ahead by its year alone.
    @Test func anRFC850DateMoreThanFiftyYearsAheadIsInThePast() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        let value = "Sunday, 31-Dec-73 23:59:59 GMT"
        #expect(RetryAfterHeader.delay(parsing: value, receivedAt: now) == .zero)
        let date = try #require(RetryAfterHeader.date(parsing: value, relativeTo: now))
        #expect(date == Date(timeIntervalSince1970: 126_230_399))  // 1973-12-31 23:59:59 UTC
        // A date less than 50 years ahead stays in this century: 1 November 2073.
        let soon = RetryAfterHeader.date(parsing: "Wednesday, 01-Nov-73 00:00:00 GMT", relativeTo: now)
        #expect(soon == Date(timeIntervalSince1970: 3_276_720_000))
    }

    /// A `Retry-After` line sent twice arrives joined into a list (`120, 120`). When every
    /// member parses, the longest delay counts; an HTTP date's own comma does not split it,
    /// and empty members are skipped.
    @Test(arguments: [
        ("120, 120", 120),
        ("30,120", 120),
        ("120 ,\t30", 120),
        ("120, , 120,", 120),
        ("30, Sun, 06 Nov 1994 08:51:37 GMT", 120),
        ("Sun, 06 Nov 1994 08:49:47 GMT, Sunday, 06-Nov-94 08:50:37 GMT", 60),
        ("Sun Nov  6 08:50:07 1994, 5", 30),
    ])
    func aListOfValuesThatAllParseAsksForTheLongest(value: String, seconds: Int) {
        let delay = RetryAfterHeader.delay(parsing: value, receivedAt: Self.exampleInstant)
        #expect(delay == .seconds(seconds))
    }

    /// A list with any member that does not parse is ignored whole.
    @Test(arguments: [
        "120, soon",
        "120, -1",
        ",",
        " , ,",
        "120, Sun",
        "Sun, 120",
        "120, Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 06 Nov 1994 08:49:37 GMT Sun, 06 Nov 1994 08:49:37 GMT",
    ])
    func aListWithAMalformedMemberIsIgnored(value: String) {
        #expect(RetryAfterHeader.delay(parsing: value, receivedAt: Self.exampleInstant) == nil)
    }

    @Test func leapDayIsAcceptedOnlyInLeapYears() {
        #expect(RetryAfterHeader.date(parsing: "Thu, 29 Feb 2024 00:00:00 GMT") != nil)
        #expect(RetryAfterHeader.date(parsing: "Sat, 29 Feb 2025 00:00:00 GMT") == nil)
    }

    @Test(arguments: [
        "",  // empty
        "   ",  // only spaces
        "-1",  // negative
        "+5",  // explicit sign
        "1.5",  // fractional
        "120s",  // unit suffix
        "12 0",  // inner space
        "0x10",  // hexadecimal
        "1e3",  // exponent notation
        "9999999999999999999999a",  // overflow-sized, then garbage
        "soon",  // garbage
        "Sun, 06 Nov 1994 08:49:37 UTC",  // wrong zone: only GMT is in the grammar
        "Sun, 06 Nov 1994 08:49:37 +0000",  // a numeric zone, outside the grammar too
        "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day in IMF-fixdate
        "Sun, 06 nov 1994 08:49:37 GMT",  // lower-case month
        "Sun, 31 Nov 1994 08:49:37 GMT",  // impossible day
        "Sun, 06 Nov 1994 24:00:00 GMT",  // impossible hour
        "Sun, 06 Nov 1994 08:49:37 GMT extra",  // trailing garbage
        "Funday, 06-Nov-94 08:49:37 GMT",  // unknown day name
        "Sun Nov 6 08:49:37 1994",  // asctime without the padding space
        "١٢٠",  // non-ASCII digits
    ])
    func malformedValuesAreIgnored(value: String) {
        #expect(RetryAfterHeader.delay(parsing: value, receivedAt: Self.exampleInstant) == nil)
    }

    /// An all-digit value too large for 64 bits is read as "a very long time", as RFC 9111
    /// has caches do with `delta-seconds`, so that a policy refuses it rather than
    /// ignoring it and retrying at once against a server that asked for a pause.
    @Test func overflowSizedDelayIsClampedAndThePolicyRefusesIt() async throws {
        let delay = try #require(RetryAfterHeader.delay(parsing: "99999999999999999999999"))
        #expect(delay > .seconds(1_000_000_000))
        #expect(delay <= .seconds(Int64.max / 1_000_000_000))
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let outcome = await policy.outcome { () async throws -> Int in
            throw StatusError(status: 503, hint: delay)
        }
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(outcome.attempts == 1)
    }

    @Test func hugeButValidDelayIsClampedNotFatal() throws {
        let delay = try #require(RetryAfterHeader.delay(parsing: "9223372036854775807"))
        #expect(delay > .seconds(1_000_000_000))
        #expect(delay <= .seconds(Int64.max / 1_000_000_000))
    }

    /// A date measured against the response's `Date` field rather than the local clock.
    @Test func aDateIsMeasuredAgainstTheDateFieldInEveryForm() {
        let slow = Date(timeIntervalSince1970: 784_111_777 - 7_200)  // two hours behind the server
        let fast = Date(timeIntervalSince1970: 784_111_777 + 7_200)  // two hours ahead
        for receivedAt in [slow, fast] {
            func delay(_ value: String, _ date: String?) -> Duration? {
                RetryAfterHeader.delay(parsing: value, dateField: date, receivedAt: receivedAt)
            }
            let imf = "Sun, 06 Nov 1994 08:49:37 GMT"
            #expect(delay("Sun, 06 Nov 1994 08:51:37 GMT", imf) == .seconds(120))
            #expect(delay("Sunday, 06-Nov-94 08:51:37 GMT", imf) == .seconds(120))
            #expect(delay("Sun Nov  6 08:51:37 1994", imf) == .seconds(120))
            #expect(delay("Sun, 06 Nov 1994 08:51:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT") == .seconds(120))
            #expect(delay("Sun, 06 Nov 1994 08:51:37 GMT", "  Sun Nov  6 08:49:37 1994\t") == .seconds(120))
            #expect(delay("Sun, 06 Nov 1994 08:00:00 GMT", imf) == .zero)  // before the server's now
            #expect(delay("30, Sun, 06 Nov 1994 08:51:37 GMT", imf) == .seconds(120))  // a list: the longest
            #expect(delay("90", imf) == .seconds(90))  // seconds count from receipt
            #expect(delay("soon", imf) == nil)  // a malformed hint stays malformed
        }
        // A malformed `Date` field: measured from receipt, as without one.
        #expect(
            RetryAfterHeader.delay(parsing: "Sun, 06 Nov 1994 08:51:37 GMT", dateField: "now", receivedAt: slow)
                == RetryAfterHeader.delay(parsing: "Sun, 06 Nov 1994 08:51:37 GMT", receivedAt: slow))
    }
}
