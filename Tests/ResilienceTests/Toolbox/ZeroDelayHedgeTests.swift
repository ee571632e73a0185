import Resilience
import ResilienceTesting
import Testing

/// A hedge due at once (a delay of zero) starts without a timer on the clock: the shared
/// watcher fires a deadline already passed when it looks, and sleeps only until a later one.
/// On a clock whose timers wake late, a sleep would hold the hedge for the lag.
@Suite("A hedge delay of zero does not sleep", .timeLimit(.minutes(5)))
struct ZeroDelayHedgeTests {
    @Test func aHedgeDueAtOnceStartsWithoutSleeping() async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let hedging = try Hedging(delay: .fixed(.zero), maximumHedges: 1, clock: late)
        let runs = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                guard runs.increment() > 1 else {
                    // The first attempt hangs until the hedge won and cancelled it.
                    try await clock.sleep(for: .seconds(3_600))
                    return 1
                }
                return 2
            }
        }
        // Should the hedge wait on a timer, move the clock past its lag so that the call ends.
        let watch = Task {
            await clock.waitForSleepRequests(count: 2)  // past the first attempt's
            if !Task.isCancelled { clock.advance(by: late.lag) }
        }
        let value = try await call.value
        watch.cancel()
        #expect(value == 2)
        #expect(clock.sleepRequests.count == 1, "the hedge waited on the clock: \(clock.sleepRequests)")
    }
}
