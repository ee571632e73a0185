import ResilienceTesting
import Testing

@testable import Resilience

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test func aTokenBucketAdmitsItsCapacityThenRefusesWithTheTimeToTheNextRefill() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 3, tokensPerPeriod: 1, period: .seconds(1)), name: "api", clock: clock)
        for _ in 0..<3 { _ = try await limiter.execute { 1 } }
        clock.advance(by: .milliseconds(400))
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(error?.reason == .noPermit)
        #expect(error?.retryAfter == .milliseconds(600))
        let analysis = FailureAnalysis(try #require(error))
        #expect(analysis.delivery == .notSent)
        #expect(analysis.retryAfter == .milliseconds(600))
        clock.advance(by: .milliseconds(600))
        #expect(limiter.availablePermits == 1)
        _ = try await limiter.execute { 1 }
    }

    @Test func aSlidingWindowAdmitsItsLimitPerWindowAndFreesPermitsAsSegmentsPass() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(.slidingWindow(limit: 2, window: .seconds(1), segments: 4), clock: clock)
        _ = try await limiter.execute { 1 }  // segment 0
        clock.advance(by: .milliseconds(500))
        _ = try await limiter.execute { 1 }  // segment 2
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(error?.retryAfter == .milliseconds(500))  // segment 0 leaves the window at 1 s
        clock.advance(by: .milliseconds(500))
        _ = try await limiter.execute { 1 }
        await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
    }

    /// Segments are counted in whole attoseconds: on a window of a year, the last nanosecond
    /// before a segment leaves it still counts that segment's permits.
    @Test(arguments: [Duration.seconds(86_400 * 366), .seconds(86_400 * 100), .seconds(1)])
    func aLongWindowForgetsNoSegmentBeforeItHasPassed(window: Duration) async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(.slidingWindow(limit: 1, window: window, segments: 2), clock: clock)
        _ = try await limiter.execute { 1 }
        clock.advance(by: window - .nanoseconds(1))
        let early = await #expect(throws: LimiterRejectionError.self, "\(window)") { try await limiter.execute { 2 } }
        #expect(early?.retryAfter == .nanoseconds(1), "\(window)")
        clock.advance(by: .nanoseconds(1))
        #expect(try await limiter.execute { 3 } == 3, "\(window): the first segment has left the window")
    }

    @Test func aCallerAllowedToWaitGetsTheNextPermit() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), maximumWait: .seconds(2), clock: clock)
        _ = try await limiter.execute { 1 }
        let waiting = Task { try await limiter.execute { 2 } }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(1)])
        clock.advance(by: .seconds(1))
        #expect(try await waiting.value == 2)
    }

    @Test func aWaitLongerThanAllowedIsRefusedAtOnceWithoutSleeping() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(10)), maximumWait: .seconds(2), clock: clock)
        _ = try await limiter.execute { 1 }
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(error?.retryAfter == .seconds(10))
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func cancellingAWaitingCallerEndsItsWaitAtOnce() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), maximumWait: .seconds(5), clock: clock)
        _ = try await limiter.execute { 1 }
        let ran = Counter()
        let waiting = Task { try await limiter.execute { ran.increment() } }
        await clock.waitForSleepers(count: 1)
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ran.value == 0)
    }

    @Test func aClockThatJumpsBackFreesNothingAndAHugeJumpRefillsOnlyToCapacity() {
        var bucket = RateLimiterStateMachine(
            try! .tokenBucket(capacity: 2, tokensPerPeriod: 1, period: .seconds(1)), at: .seconds(100))
        #expect(bucket.acquire(at: .seconds(100)) == .granted)
        #expect(bucket.acquire(at: .seconds(100)) == .granted)
        #expect(bucket.acquire(at: .seconds(50)) != .granted)  // back in time: nothing freed
        #expect(bucket.acquire(at: .seconds(50) + .milliseconds(500)) != .granted)
        #expect(bucket.available(at: .seconds(Int64.max / 4_000_000_000)) == 2)  // a jump of decades
        var window = RateLimiterStateMachine(try! .slidingWindow(limit: 1, window: .seconds(1)), at: .seconds(10))
        #expect(window.acquire(at: .seconds(10)) == .granted)
        #expect(window.acquire(at: .seconds(5)) != .granted)
        #expect(window.acquire(at: .seconds(1_000_000_000)) == .granted)
    }

    @Test func rejectsInvalidSettingsNamingEach() {
        #expect(
            rejectedSetting {
                _ = try RateLimiterAlgorithm.tokenBucket(capacity: 0, tokensPerPeriod: 1, period: .seconds(1))
            } == "capacity")
        #expect(
            rejectedSetting {
                _ = try RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 0, period: .seconds(1))
            } == "tokensPerPeriod")
        #expect(
            rejectedSetting { _ = try RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .zero) }
                == "period")
        #expect(
            rejectedSetting {
                _ = try RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(Int64.max))
            } == "period")
        #expect(
            rejectedSetting { _ = try RateLimiterAlgorithm.slidingWindow(limit: 0, window: .seconds(1)) } == "limit")
        #expect(
            rejectedSetting { _ = try RateLimiterAlgorithm.slidingWindow(limit: 1, window: .seconds(1), segments: 0) }
                == "segments")
        #expect(
            rejectedSetting { _ = try RateLimiterAlgorithm.slidingWindow(limit: 1, window: .nanoseconds(5)) }
                == "window")
        #expect(
            rejectedSetting {
                _ = try RateLimiter(.slidingWindow(limit: 1, window: .seconds(1)), maximumWait: .seconds(-1))
            } == "maximumWait")
        #expect(
            rejectedSetting { _ = try RateLimiterRegistry<String>(maximumCount: 0) { _ in fatalError() } }
                == "maximumCount")
    }

    @Test func theRegistryGivesEachKeyOneLimiterAndKeepsAtMostItsBound() throws {
        let registry = try RateLimiterRegistry<String>(
            name: "hosts", algorithm: .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)),
            maximumCount: 2, clock: TestClock())
        let a = registry.limiter(for: "a")
        #expect(registry.limiter(for: "a") === a)
        #expect(a.name == "hosts[a]")
        _ = registry.limiter(for: "b")
        _ = registry.limiter(for: "a")  // a is now the most recently used
        _ = registry.limiter(for: "c")
        #expect(registry.count == 2)
        #expect(registry.existingLimiter(for: "b") == nil)
        #expect(registry.existingLimiter(for: "a") === a)
    }

    @Test func tenThousandConcurrentCallersNeverGetMorePermitsThanTheBucketHolds() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 100, tokensPerPeriod: 10, period: .seconds(1)), clock: clock)
        let admitted = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 {
                group.addTask { (try? await limiter.execute { 1 }) ?? 0 }
            }
            return await group.reduce(0, +)
        }
        #expect(admitted == 100)
        clock.advance(by: .seconds(1))
        #expect(limiter.availablePermits == 10)
    }

    @Test func overTenThousandSeededRequestsNoWindowEverHoldsMoreThanTheLimit() {
        var generator = SeededRandomNumberGenerator(seed: 42)
        let limit = 25
        var machine = RateLimiterStateMachine(
            try! .slidingWindow(limit: limit, window: .seconds(1), segments: 10), at: .zero)
        var now = Duration.zero
        var granted: [Duration] = []
        for _ in 0..<10_000 {
            now += .milliseconds(Int.random(in: 0...40, using: &generator))
            if machine.acquire(at: now) == .granted {
                granted.append(now)
                // Invariant, checked at every grant: counted in ten segments, the window
                // may forget a permit up to one segment early, so no 0.9 s span holds more than the limit.
                let recent = granted.reversed().prefix { now - $0 < .milliseconds(900) }.count
                #expect(recent <= limit)
                // Nor does any whole window that starts where a segment starts (every 0.1 s).
                let segment = Duration.milliseconds(100)
                let latestSegmentStart = segment * Int(now / segment)
                for back in 0..<10 {
                    let start = latestSegmentStart - segment * back
                    #expect(granted.reversed().prefix { $0 >= start }.count <= limit)
                }
            }
        }
        #expect(granted.count > 1_000)  // the limiter admits, not only refuses
    }

    /// The lock-free path on a test clock reads the clock exactly, so every call must be
    /// decided as the state machine alone decides it, refusals and their retry-after included.
    @Test(arguments: [7, 8])
    func onATestClockEveryCallIsDecidedAsTheStateMachineDecidesIt(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let algorithms: [RateLimiterAlgorithm] = [
            try .tokenBucket(capacity: 5, tokensPerPeriod: 2, period: .milliseconds(100)),
            try .tokenBucket(capacity: 3, tokensPerPeriod: 3, period: .milliseconds(30)),
            try .slidingWindow(limit: 6, window: .milliseconds(300), segments: 3),
        ]
        for algorithm in algorithms {
            let clock = TestClock()
            let limiter = try RateLimiter(algorithm, clock: clock)
            var reference = RateLimiterStateMachine(algorithm, at: .zero)
            var now = Duration.zero
            for _ in 0..<500 {
                let step = Duration.microseconds(Int.random(in: 0...40_000, using: &generator))
                clock.advance(by: step)
                now += step
                let expected = reference.acquire(at: now)
                do {
                    _ = try await limiter.execute { 1 }
                    #expect(expected == .granted, "\(algorithm) at \(now)")
                } catch let rejection as LimiterRejectionError {
                    #expect(expected == .denied(retryAfter: rejection.retryAfter ?? .zero), "\(algorithm) at \(now)")
                }
            }
        }
    }

    /// On the system clock, permits are taken lock-free against a coarse reading of the
    /// clock; a span or bound that let it take one more than the bucket holds fails this.
    @Test func onTheSystemClockTenThousandCallersNeverGetMoreThanTheBucketHolds() async throws {
        let limiter = try RateLimiter(.tokenBucket(capacity: 50, tokensPerPeriod: 1, period: .seconds(3_600)))
        let admitted = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 {
                group.addTask { (try? await limiter.execute { 1 }) ?? 0 }
            }
            return await group.reduce(0, +)
        }
        #expect(admitted == 50)
        #expect(limiter.availablePermits == 0)
        let window = try RateLimiter(.slidingWindow(limit: 50, window: .seconds(3_600), segments: 2))
        let admittedByWindow = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 {
                group.addTask { (try? await window.execute { 1 }) ?? 0 }
            }
            return await group.reduce(0, +)
        }
        #expect(admittedByWindow == 50)
    }
}
