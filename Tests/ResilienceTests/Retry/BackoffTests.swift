import Resilience
import Testing

@Suite("Backoff")
struct BackoffTests {
    @Test func constantReturnsTheSameDelayForEveryAttempt() {
        let backoff = Backoff.constant(.milliseconds(250))
        #expect((0..<5).map(backoff.delay(forAttempt:)) == Array(repeating: .milliseconds(250), count: 5))
    }

    @Test func linearGrowsByItsIncrementUntilTheCap() {
        let backoff = Backoff.linear(initial: .seconds(1), increment: .milliseconds(500), maximum: .seconds(2))
        let delays = (0..<5).map(backoff.delay(forAttempt:))
        #expect(delays == [.seconds(1), .milliseconds(1_500), .seconds(2), .seconds(2), .seconds(2)])
    }

    @Test func exponentialDoublesUntilTheCap() {
        let backoff = Backoff.exponential(initial: .milliseconds(100), maximum: .seconds(1))
        let delays = (0..<6).map(backoff.delay(forAttempt:))
        #expect(
            delays == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1),
                .seconds(1),
            ])
    }

    @Test func exponentialHonoursItsMultiplier() {
        let backoff = Backoff.exponential(initial: .seconds(1), multiplier: 3, maximum: .seconds(100))
        #expect((0..<4).map(backoff.delay(forAttempt:)) == [.seconds(1), .seconds(3), .seconds(9), .seconds(27)])
    }

    @Test(arguments: [10_000, 1_000_000, Int.max])
    func hugeAttemptNumbersYieldTheCap(attempt: Int) {
        let exponential = Backoff.exponential(initial: .milliseconds(1), multiplier: 1.5, maximum: .seconds(30))
        let linear = Backoff.linear(initial: .seconds(1), increment: .seconds(1), maximum: .seconds(30))
        #expect(exponential.delay(forAttempt: attempt) == .seconds(30))
        #expect(linear.delay(forAttempt: attempt) == .seconds(30))
    }

    @Test func negativeAttemptIsTreatedAsTheFirstRetry() {
        let backoff = Backoff.exponential(initial: .seconds(1), maximum: .seconds(8))
        #expect(backoff.delay(forAttempt: -3) == .seconds(1))
    }

    @Test func previewSequenceWithoutJitterIsTheBackoffSchedule() {
        let delays = RetryDelays(backoff: .exponential(initial: .seconds(1), maximum: .seconds(8)), jitter: .none)
        #expect(Array(delays.prefix(5)) == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8)])
    }
}

@Suite("Backoff beyond 64-bit seconds")
struct BackoffHugeDurationTests {
    @Test func initialDelayBeyondInt64SecondsIsClampedNotFatal() {
        let huge = Duration.seconds(Int64.max) * 4
        let backoff = Backoff.exponential(initial: huge, maximum: huge)
        let delay = backoff.delay(forAttempt: 3)
        #expect(delay > .seconds(1_000_000_000))
        #expect(delay <= .seconds(Int64.max))
        let linear = Backoff.linear(initial: huge, increment: huge, maximum: huge)
        #expect(linear.delay(forAttempt: 1) > .seconds(1_000_000_000))
    }
}
