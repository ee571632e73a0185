import Foundation
import Resilience
import ResilienceTesting
import Testing

/// An adaptive throttle counts what the server did, never what the library or the caller stopped.
@Suite("An adaptive throttle at the seams")
struct ThrottleSeamTests {
    @Test func aThrottleInsideHedgingCountsTheSupersededLoserAsNothing() async throws {
        let clock = TestClock()
        let throttle = try AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute {
                try await throttle.execute {
                    if attempts.increment() == 1 { try await clock.sleep(for: .seconds(10)) }
                    return attempts.value
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        _ = try await call.value
        #expect(throttle.counts == (1, 1), "the hedge was accepted; the loser the library cancelled says nothing")
    }
}
