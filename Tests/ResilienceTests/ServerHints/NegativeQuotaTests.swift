import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A parsed `RateLimit` field never holds a negative quota, but `ServiceLimit` has a public
/// initializer and a public `remaining`: one made by hand with a negative quota counts as no
/// quota left, wherever the package reads it, and never traps.
@Suite("RateLimit quotas below zero", .timeLimit(.minutes(5)))
struct NegativeQuotaTests {
    /// Recorded for the first of two requests, the gate takes the second as spent from the
    /// quota: `Int64.min - 1` must not trap. The quota is spent, so a request waits for the
    /// reset. Checked in a child process, where a trap fails the test instead of the run.
    @Test func theLeastQuotaRecordedForAnEarlierRequestIsSpentAndDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let clock = TestClock()
            let gate = try RateLimitGate(clock: clock)
            let first = gate.ticket()
            _ = gate.ticket()  // a later request went before the first one's answer came
            gate.record([RateLimitHeader.ServiceLimit(policy: "p", remaining: .min, reset: .seconds(5))], for: first)
            guard gate.reserve() == .seconds(5) else { exit(EXIT_FAILURE) }
        }
    }

    @Test(arguments: [Int64.min, -1])
    func aNegativeQuotaRecordedWithoutATicketIsSpent(remaining: Int64) throws {
        let gate = try RateLimitGate(clock: TestClock())
        gate.record([RateLimitHeader.ServiceLimit(policy: "p", remaining: remaining, reset: .seconds(5))])
        #expect(gate.reserve() == .seconds(5))
    }

    @Test(arguments: [Int64.min, -1])
    func aNegativeQuotaIsExhausted(remaining: Int64) {
        let limits = [
            RateLimitHeader.ServiceLimit(policy: "minute", remaining: 3, reset: .seconds(60)),
            RateLimitHeader.ServiceLimit(policy: "burst", remaining: remaining, reset: .seconds(5)),
        ]
        #expect(RateLimitHeader.exhaustedFor(limits) == .seconds(5))
    }
}
