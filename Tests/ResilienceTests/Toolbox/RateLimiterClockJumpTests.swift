import ResilienceTesting
import Testing

@testable import Resilience

/// A clock that goes back counts as having stood still: the limiter re-bases its marks
/// onto the new readings, so no caller waits out the jump and no permit is freed by it.
@Suite("Rate limiter on a clock that goes back")
struct RateLimiterClockJumpTests {
    @Test func aTokenBucketRefusesWithOnePeriodNotTheJumpAfterTheClockGoesBackAnHour() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(.tokenBucket(capacity: 2, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        clock.advance(by: .seconds(100))
        for _ in 0..<2 { _ = try await limiter.execute { 1 } }
        clock.rewind(by: .seconds(3_600))
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(error?.retryAfter == .seconds(1), "the next token is one period away, as before the jump")
        clock.advance(by: .milliseconds(999))
        #expect(limiter.availablePermits == 0, "the jump freed nothing")
        clock.advance(by: .milliseconds(1))
        _ = try await limiter.execute { 1 }
        let next = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(next?.retryAfter == .seconds(1))
    }

    @Test func aSlidingWindowFreesItsPermitsOneWindowAfterTheyWereTakenWhateverTheJump() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(.slidingWindow(limit: 2, window: .seconds(1), segments: 10), clock: clock)
        clock.advance(by: .seconds(10))
        for _ in 0..<2 { _ = try await limiter.execute { 1 } }
        clock.rewind(by: .seconds(86_400))
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(error?.retryAfter == .seconds(1))
        clock.advance(by: .milliseconds(500))
        let later = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(later?.retryAfter == .milliseconds(500))
        clock.advance(by: .milliseconds(500))
        for _ in 0..<2 { _ = try await limiter.execute { 1 } }
        await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
    }

    @Test func aCallerThatWaitsAfterTheClockWentBackSleepsOnePeriodAndGetsThePermit() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), maximumWait: .seconds(2), clock: clock)
        clock.advance(by: .seconds(100))
        _ = try await limiter.execute { 1 }
        clock.rewind(by: .seconds(3_600))
        // Checked first, without taking a permit: a refusal naming the jump would never sleep.
        try #require(limiter.tryAcquire() == .seconds(1))
        let waiting = Task { try await limiter.execute { 2 } }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(1)])
        clock.advance(by: .seconds(1))
        #expect(try await waiting.value == 2)
    }

    @Test func availablePermitsCountTheTimeSinceTheJumpNotSinceTheLatestReading() throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 5, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        clock.advance(by: .seconds(50))
        #expect(limiter.availablePermits == 5)
        for _ in 0..<5 { _ = limiter.tryAcquire() }
        clock.rewind(by: .seconds(40))
        #expect(limiter.availablePermits == 0)
        clock.advance(by: .seconds(3))
        #expect(limiter.availablePermits == 3)
    }

    @Test func aReadingTakenBeforeTheLimiterReBasedCountsAsNoTimeElapsed() throws {
        let clock = TestClock()
        let storage = RateLimiterStorage(
            RateLimiterStateMachine(try .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), at: .zero),
            clock: ElapsedClock(clock))
        clock.advance(by: .seconds(100))
        #expect(storage.step(at: storage.read()) { $0.acquire(at: $1) }.result == .granted)
        let beforeTheJump = storage.read()  // a caller reads the clock, then is held up
        clock.advance(by: .seconds(5))
        clock.rewind(by: .seconds(3_600))
        let first = storage.step(at: storage.read()) { $0.acquire(at: $1) }
        let observed = try #require(first.behind)
        let rebased = storage.step(at: storage.read(), rebasingFrom: observed) { $0.acquire(at: $1) }
        #expect(rebased.result == .denied(retryAfter: .seconds(1)))
        // Taken before the jump, 3,595 s ahead of the re-based time: it must not refill the bucket.
        #expect(storage.step(at: beforeTheJump) { $0.available(at: $1) }.result == 0)
        #expect(storage.step(at: storage.read()) { $0.available(at: $1) }.result == 0)
        clock.advance(by: .seconds(1))
        #expect(storage.step(at: storage.read()) { $0.acquire(at: $1) }.result == .granted)
    }

    /// The clock runs forwards and now and then far back; counted in the time that really
    /// passed (the forward moves only), no stretch ever holds more grants than the bucket's
    /// capacity and its refills allow, every refusal names at most one period, and waiting
    /// that long always brings a permit.
    @Test(arguments: [3, 11, 29])
    func underRandomJumpsBackNoCallerWaitsLongerThanAPeriodAndNoStretchAdmitsMore(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let capacity = 4
        let period = Duration.milliseconds(100)
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: capacity, tokensPerPeriod: 1, period: period), clock: clock)
        var elapsed = Duration.zero  // the forward moves only: the time that really passed
        var grants: [Duration] = []
        var jumps = 0
        for _ in 0..<2_000 {
            if Int.random(in: 0..<50, using: &generator) == 0 {
                clock.rewind(by: .seconds(Int64.random(in: 1...100_000, using: &generator)))
                jumps += 1
            } else {
                let step = Duration.milliseconds(Int64.random(in: 0...60, using: &generator))
                clock.advance(by: step)
                elapsed += step
            }
            if let retryAfter = limiter.tryAcquire() {
                #expect(retryAfter > .zero && retryAfter <= period, "refused with \(retryAfter)")
                clock.advance(by: retryAfter)
                elapsed += retryAfter
                #expect(limiter.tryAcquire() == nil, "a permit frees after the wait it named")
            }
            grants.append(elapsed)
            // In any stretch of whole periods the bucket gives at most its capacity plus one
            // token per period.
            let stretch = period * 10
            let recent = grants.reversed().prefix { elapsed - $0 < stretch }.count
            #expect(recent <= capacity + 10, "\(recent) grants in \(stretch)")
        }
        #expect(jumps > 10)
    }
}
