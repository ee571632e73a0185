import Resilience
import ResilienceTesting
import Testing

/// Decorrelated jitter grows from the previous sleep (the AWS formula's `sleep * 3`): when a
/// server's retry-after hint made that sleep longer than the draw, the next draw grows from
/// the wait the call actually made.
@Suite(.timeLimit(.minutes(5)))
struct DecorrelatedAfterHintTests {
    static let backoff = Backoff.exponential(initial: .seconds(1), maximum: .seconds(100))

    @Test func theDrawAfterAHintedWaitGrowsFromThatWait() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: Self.backoff, jitter: .decorrelated, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 7))
        let calls = Counter()
        let call = Task {
            await policy.outcome { () async throws -> Int in
                switch calls.increment() {
                case 1: throw StatusError(status: 503, hint: .seconds(20))
                case 2: throw TransientError()
                default: return 1
                }
            }
        }
        await advanceThroughSleeps(clock, count: 2)
        let outcome = await call.value
        #expect(outcome.stopReason == .succeeded)

        // The same draws, replayed: the first from no previous sleep, the second from the 20 s wait.
        var generator = SeededRandomNumberGenerator(seed: 7)
        let first = Jitter.decorrelated.delay(for: Self.backoff, attempt: 0, previous: nil, using: &generator)
        #expect(first < .seconds(20))  // the hint, not the draw, set the first wait
        var replay = generator
        let fromTheWait = Jitter.decorrelated.delay(
            for: Self.backoff, attempt: 1, previous: .seconds(20), using: &replay)
        let fromTheDraw = Jitter.decorrelated.delay(for: Self.backoff, attempt: 1, previous: first, using: &generator)
        #expect(fromTheWait != fromTheDraw)
        #expect(clock.sleepRequests == [.seconds(20), fromTheWait])
    }
}
