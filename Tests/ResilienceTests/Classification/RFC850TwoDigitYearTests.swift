import Foundation
import Resilience
import Testing

/// RFC 9110, section 5.6.7: a recipient of an RFC 850 date "MUST interpret a timestamp that
/// appears to be more than 50 years in the future as representing the most recent year in
/// the past that had the same last two digits". So the year is the one with those digits
/// nearest the time of reading that is not more than 50 years ahead of it: across a century
/// boundary that is the next century, not this one.
@Suite("RFC 850 two-digit years", .timeLimit(.minutes(5)))
struct RFC850TwoDigitYearTests {
    /// An RFC 850 date read at an instant, and the instant it must name.
    struct Reading: Sendable, CustomTestStringConvertible {
        let label: String
        let value: String
        /// Seconds since 1970 when it is read.
        let now: Int
        /// Seconds since 1970 of the instant it names.
        let expected: Int

        var testDescription: String { self.label }
    }

    static let readings: [Reading] = [
        Reading(
            label: "ten seconds before 2100, \"00\" is 2100", value: "Friday, 01-Jan-00 00:00:10 GMT",
            now: 4_102_444_790, expected: 4_102_444_810),
        Reading(
            label: "ten seconds before 2000, \"00\" is 2000", value: "Saturday, 01-Jan-00 00:00:10 GMT",
            now: 946_684_790, expected: 946_684_810),
        Reading(
            label: "five seconds into 2100, \"99\" is 2099", value: "Thursday, 31-Dec-99 23:59:55 GMT",
            now: 4_102_444_805, expected: 4_102_444_795),
        Reading(
            label: "five seconds into 2000, \"99\" is 1999", value: "Friday, 31-Dec-99 23:59:55 GMT",
            now: 946_684_805, expected: 946_684_795),
        Reading(
            label: "in June 2060, \"09\" is 2109, 49 years ahead", value: "Saturday, 01-Jun-09 00:00:00 GMT",
            now: 2_853_273_600, expected: 4_399_488_000),
        Reading(
            label: "in June 2060, \"10\" exactly 50 years ahead is 2110", value: "Sunday, 01-Jun-10 00:00:00 GMT",
            now: 2_853_273_600, expected: 4_431_024_000),
        Reading(
            label: "in June 2060, \"10\" a second past 50 years ahead is 2010",
            value: "Tuesday, 01-Jun-10 00:00:01 GMT", now: 2_853_273_600, expected: 1_275_350_401),
        Reading(
            label: "in November 2026, \"76\" exactly 50 years ahead is 2076",
            value: "Tuesday, 24-Nov-76 12:00:00 GMT", now: 1_795_521_600, expected: 3_373_444_800),
        Reading(
            label: "in November 2026, \"76\" a second past 50 years ahead is 1976",
            value: "Wednesday, 24-Nov-76 12:00:01 GMT", now: 1_795_521_600, expected: 217_684_801),
    ]

    @Test("The year is the nearest with those digits not more than 50 years ahead", arguments: Self.readings)
    func theYearIsTheNearestNotMoreThanFiftyYearsAhead(_ reading: Reading) throws {
        let now = Date(timeIntervalSince1970: TimeInterval(reading.now))
        let date = try #require(RetryAfterHeader.date(parsing: reading.value, relativeTo: now))
        #expect(
            date == Date(timeIntervalSince1970: TimeInterval(reading.expected)),
            "\(reading.value) read at \(now) named \(date)")
        let wait = RetryAfterHeader.delay(parsing: reading.value, receivedAt: now)
        #expect(wait == .seconds(Swift.max(reading.expected - reading.now, 0)))
    }

    /// Measured against the response's `Date` field rather than the device's clock: the field
    /// decides the century. Stamped ten seconds before 2100, "01-Jan-00 00:00:10" is 20 s on,
    /// whatever the device's clock reads.
    @Test func theDateFieldDecidesTheCenturyOfARetryAfterDate() {
        let wait = RetryAfterHeader.delay(
            parsing: "Friday, 01-Jan-00 00:00:10 GMT", dateField: "Thu, 31 Dec 2099 23:59:50 GMT",
            receivedAt: Date(timeIntervalSince1970: 1_795_000_000))
        #expect(wait == .seconds(20))
        // The `Date` field in the RFC 850 form too.
        let both = RetryAfterHeader.delay(
            parsing: "Friday, 01-Jan-00 00:00:10 GMT", dateField: "Thursday, 31-Dec-99 23:59:50 GMT",
            receivedAt: Date(timeIntervalSince1970: 4_102_444_790))
        #expect(both == .seconds(20))
    }
}
