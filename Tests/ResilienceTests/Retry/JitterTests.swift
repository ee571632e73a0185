import Resilience
import ResilienceTesting
import Testing

@Suite("Jitter")
struct JitterTests {
    static let backoff = Backoff.exponential(initial: .milliseconds(100), maximum: .seconds(5))

    /// Seconds as a `Duration`, rounded to the nanosecond as the library rounds.
    static func seconds(_ value: Double) -> Duration {
        let whole = value.rounded(.down)
        return .seconds(Int64(whole)) + .nanoseconds(Int64(((value - whole) * 1e9).rounded()))
    }

    static func secondsOf(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    /// The schedule `jitter` gives from `seed`, against the formula applied to the same random draws.
    @Test func fullJitterDrawsUniformlyBelowTheBackoffDelay() {
        var expected = SeededRandomNumberGenerator(seed: 1)
        let schedule = RetryDelays(
            backoff: Self.backoff, jitter: .full, generator: SeededRandomNumberGenerator(seed: 1))
        let actual = Array(schedule.prefix(8))
        let formula = (0..<8).map { n in
            Self.seconds(Double.random(in: 0...Self.secondsOf(Self.backoff.delay(forAttempt: n)), using: &expected))
        }
        #expect(actual == formula)
    }

    @Test func equalJitterKeepsHalfAndRandomizesHalf() {
        var expected = SeededRandomNumberGenerator(seed: 2)
        let schedule = RetryDelays(
            backoff: Self.backoff, jitter: .equal, generator: SeededRandomNumberGenerator(seed: 2))
        let actual = Array(schedule.prefix(8))
        let formula = (0..<8).map { n in
            let half = Self.secondsOf(Self.backoff.delay(forAttempt: n)) / 2
            return Self.seconds(half + Double.random(in: 0...half, using: &expected))
        }
        #expect(actual == formula)
    }

    @Test func proportionalJitterScalesByOnePlusOrMinusTheRatio() {
        var expected = SeededRandomNumberGenerator(seed: 3)
        let schedule = RetryDelays(
            backoff: Self.backoff, jitter: .proportional(0.25), generator: SeededRandomNumberGenerator(seed: 3))
        let actual = Array(schedule.prefix(8))
        let formula = (0..<8).map { n in
            let t = Self.secondsOf(Self.backoff.delay(forAttempt: n))
            return Self.seconds(t * (1 + Double.random(in: -0.25...0.25, using: &expected)))
        }
        #expect(actual == formula)
    }

    @Test func decorrelatedJitterGrowsFromThePreviousDelay() {
        var expected = SeededRandomNumberGenerator(seed: 4)
        let schedule = RetryDelays(
            backoff: Self.backoff, jitter: .decorrelated, generator: SeededRandomNumberGenerator(seed: 4))
        let actual = Array(schedule.prefix(12))
        var previous = 0.1
        let formula = (0..<12).map { _ in
            let next = min(5, Double.random(in: 0.1...max(0.1, previous * 3), using: &expected))
            previous = Self.secondsOf(Self.seconds(next))
            return Self.seconds(next)
        }
        #expect(actual == formula)
    }

    @Test func noJitterIsExactlyTheBackoff() {
        let schedule = RetryDelays(
            backoff: Self.backoff, jitter: .none, generator: SeededRandomNumberGenerator(seed: 5))
        #expect(Array(schedule.prefix(7)) == (0..<7).map(Self.backoff.delay(forAttempt:)))
    }

    @Test(arguments: [Jitter.none, .full, .equal, .proportional(0.2), .proportional(1), .decorrelated])
    func everyDelayStaysInItsDocumentedRange(jitter: Jitter) {
        var generator = SeededRandomNumberGenerator(seed: 99)
        var previous: Duration?
        for attempt in 0..<2_000 {
            let n = attempt % 40
            let delay = jitter.delay(for: Self.backoff, attempt: n, previous: previous, using: &generator)
            let range = jitter.range(for: Self.backoff, attempt: n)
            #expect(range.contains(delay), "\(jitter) attempt \(n): \(delay) outside \(range)")
            #expect(delay >= .zero)
            previous = delay
        }
    }

    @Test func sameSeedGivesTheSameScheduleAndAnotherSeedDoesNot() {
        let a = Array(
            RetryDelays(backoff: Self.backoff, jitter: .full, generator: SeededRandomNumberGenerator(seed: 10)).prefix(
                6))
        let b = Array(
            RetryDelays(backoff: Self.backoff, jitter: .full, generator: SeededRandomNumberGenerator(seed: 10)).prefix(
                6))
        let c = Array(
            RetryDelays(backoff: Self.backoff, jitter: .full, generator: SeededRandomNumberGenerator(seed: 11)).prefix(
                6))
        #expect(a == b)
        #expect(a != c)
    }

    @Test func jitteredDelayAtAttemptTenThousandIsWithinTheCap() {
        var generator = SeededRandomNumberGenerator(seed: 12)
        for jitter in [Jitter.none, .full, .equal, .decorrelated] {
            let delay = jitter.delay(for: Self.backoff, attempt: 10_000, previous: .seconds(5), using: &generator)
            #expect(delay <= .seconds(5))
        }
        #expect(Jitter.none.delay(for: Self.backoff, attempt: 10_000, previous: nil, using: &generator) == .seconds(5))
    }
}
