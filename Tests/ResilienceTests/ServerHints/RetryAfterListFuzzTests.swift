import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A seeded fuzz of the `Retry-After` list reading: every well-formed member of a list, in
/// any of the three date forms or as seconds, joined as a recipient joins lines sent twice,
/// gives the longest of the members' own delays; a list with one malformed member gives `nil`.
@Suite(.timeLimit(.minutes(5)))
struct RetryAfterListFuzzTests {
    static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func member(_ generator: inout SeededRandomNumberGenerator, now: Date) -> String {
        let form = Int.random(in: 0..<4, using: &generator)
        if form == 0 { return String(Int.random(in: 0...100_000, using: &generator)) }
        let offset = Double(Int.random(in: -86_400...86_400, using: &generator))
        let date = now.addingTimeInterval(offset)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let time = String(format: "%02d:%02d:%02d", c.hour!, c.minute!, c.second!)
        let weekday = c.weekday! - 1
        switch form {
        case 1:
            return "\(days[weekday]), \(String(format: "%02d", c.day!)) \(months[c.month! - 1]) \(c.year!) \(time) GMT"
        case 2:
            return
                "\(longDays[weekday]), \(String(format: "%02d", c.day!))-\(months[c.month! - 1])-\(String(format: "%02d", c.year! % 100)) \(time) GMT"
        default:
            let day = c.day! < 10 ? " \(c.day!)" : "\(c.day!)"
            return "\(days[weekday]) \(months[c.month! - 1]) \(day) \(time) \(c.year!)"
        }
    }

    @Test func everyWellFormedListGivesItsLongestMember() {
        var generator = SeededRandomNumberGenerator(seed: 0x5EED)
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let separators = [",", ", ", " ,", " , ", ",\t", ", , ", ",,"]
        var mismatches: [String] = []
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...4, using: &generator)
            let members = (0..<count).map { _ in Self.member(&generator, now: now) }
            var value = members[0]
            for member in members.dropFirst() {
                value += separators.randomElement(using: &generator)! + member
            }
            if Bool.random(using: &generator) { value += separators.randomElement(using: &generator)! }
            let singles = members.map { RetryAfterHeader.delay(parsing: $0, receivedAt: now) }
            if singles.contains(where: { $0 == nil }) {
                mismatches.append("member unreadable alone: \(members)")
                continue
            }
            let expected = singles.compactMap { $0 }.max()
            let got = RetryAfterHeader.delay(parsing: value, receivedAt: now)
            if got != expected {
                mismatches.append(
                    "\(value.debugDescription): \(String(describing: got)) != \(String(describing: expected))")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches, first: \(mismatches.prefix(3))")
    }
}
