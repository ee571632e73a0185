import ResilienceTesting
import Testing

@testable import Resilience

/// What a rate limiter registry forgets at its bound: never a limiter whose key would get a
/// full allowance early from a fresh one, while a limiter back at its full allowance is there.
@Suite(.timeLimit(.minutes(5))) struct RateLimiterRegistryBoundTests {
    static let bucket = try! RateLimiterAlgorithm.tokenBucket(capacity: 2, tokensPerPeriod: 2, period: .seconds(10))
    static let window = try! RateLimiterAlgorithm.slidingWindow(limit: 2, window: .seconds(10), segments: 2)

    /// A key the registry cannot find without its lock, so that every lookup stamps its use
    /// in order (lock-free hits are stamped together at the next locked operation).
    struct Host: Hashable, Sendable, ExpressibleByStringLiteral {
        var name: String
        init(stringLiteral name: String) { self.name = name }
    }

    /// Whether the limiter for `key` admits a call now.
    static func admits<Key>(_ registry: RateLimiterRegistry<Key>, _ key: Key) async -> Bool {
        (try? await registry.limiter(for: key).execute { true }) ?? false
    }

    /// Takes every permit of `key`'s limiter.
    static func exhaust<Key>(_ registry: RateLimiterRegistry<Key>, _ key: Key) async {
        while await Self.admits(registry, key) {}
    }

    @Test(arguments: [bucket, window])
    func aKeyWithNoPermitsLeftGetsNoneBackByOtherKeysPushingItPastTheBound(
        algorithm: RateLimiterAlgorithm
    ) async throws {
        let clock = TestClock()
        let registry = try RateLimiterRegistry<String>(
            name: "hosts", algorithm: algorithm, maximumCount: 2, clock: clock)
        await Self.exhaust(registry, "a")
        let a = try #require(registry.existingLimiter(for: "a"))
        clock.advance(by: .seconds(1))
        for key in ["b", "c", "d", "e"] { _ = registry.limiter(for: key) }
        #expect(registry.count == 2)
        #expect(registry.existingLimiter(for: "a") === a, "a limiter with permits taken is kept")
        #expect(!(await Self.admits(registry, "a")), "no permit for a before its refill")
        clock.advance(by: .seconds(9))
        #expect(await Self.admits(registry, "a"), "refilled on time")
    }

    @Test(arguments: [bucket, window])
    func aLimiterBackAtItsFullAllowanceIsForgottenFirst(algorithm: RateLimiterAlgorithm) async throws {
        let clock = TestClock()
        let registry = try RateLimiterRegistry<Host>(
            name: "hosts", algorithm: algorithm, maximumCount: 2, clock: clock)
        await Self.exhaust(registry, "a")
        await Self.exhaust(registry, "b")
        clock.advance(by: .seconds(10))  // both full again; a used least recently
        #expect(await Self.admits(registry, "b"))  // b has one permit taken again
        _ = registry.limiter(for: "a")  // a full, and now the most recently used
        _ = registry.limiter(for: "c")
        #expect(registry.existingLimiter(for: "a") == nil, "the full limiter goes, though used more recently")
        #expect(registry.existingLimiter(for: "b") != nil)
    }

    /// When every limiter held has permits taken, the bound still holds: the least recently
    /// used goes. A fresh limiter is full, so the next insertion forgets it before the others.
    @Test(arguments: [bucket, window])
    func whenEveryLimiterIsInUseTheLeastRecentlyUsedGoes(algorithm: RateLimiterAlgorithm) async throws {
        let clock = TestClock()
        let registry = try RateLimiterRegistry<String>(
            name: "hosts", algorithm: algorithm, maximumCount: 2, clock: clock)
        await Self.exhaust(registry, "a")
        await Self.exhaust(registry, "b")
        _ = registry.limiter(for: "c")
        #expect(registry.count == 2)
        #expect(registry.existingLimiter(for: "a") == nil, "the least recently used of the busy ones")
        #expect(registry.existingLimiter(for: "b") != nil)
        _ = registry.limiter(for: "d")
        #expect(registry.count == 2)
        #expect(registry.existingLimiter(for: "c") == nil, "c, still full, goes before busy b")
        #expect(registry.existingLimiter(for: "b") != nil)
        #expect(!(await Self.admits(registry, "b")))
    }

    /// Limiters made by the caller's own closure each count on a clock of their own, which the
    /// registry cannot read under its lock: they are judged at the latest time they counted at.
    @Test func limitersFromACustomClosureAreJudgedAtTheLatestTimeTheyCounted() async throws {
        let clock = TestClock()
        let registry = try RateLimiterRegistry<String>(maximumCount: 2) { host in
            try! RateLimiter(Self.bucket, name: host, clock: clock)
        }
        await Self.exhaust(registry, "a")
        let a = try #require(registry.existingLimiter(for: "a"))
        for key in ["b", "c", "d"] { _ = registry.limiter(for: key) }
        #expect(registry.existingLimiter(for: "a") === a)
        #expect(!(await Self.admits(registry, "a")))
        // Refilled since, but not called: a is still judged by its last count, and kept.
        clock.advance(by: .seconds(10))
        _ = registry.limiter(for: "e")
        #expect(registry.existingLimiter(for: "a") === a)
        #expect(a.availablePermits == 2)  // a counts at the new time, and is not marked as used
        _ = registry.limiter(for: "f")
        #expect(registry.existingLimiter(for: "a") == nil, "judged full once it counted again")
    }

    static let single = try! RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(60))

    /// A registry of one-token buckets refilled each minute, whose callers wait up to two
    /// minutes, with `a`'s token taken at t = 0 and a caller waiting on `a` for the refill at
    /// t = 60 (a task on the main actor, so it runs only when the test suspends).
    @MainActor
    static func registryWithAWaiterOnA(
        clock: TestClock, admitted: Counter
    ) async throws -> (RateLimiterRegistry<Host>, Task<Void, any Error>) {
        let registry = try RateLimiterRegistry<Host>(
            name: "hosts", algorithm: Self.single, maximumWait: .seconds(120), maximumCount: 2, clock: clock)
        try #require(registry.limiter(for: "a").tryAcquire() == nil)
        admitted.increment()
        let waiter = Task { @MainActor in
            try await registry.limiter(for: "a").execute { _ = admitted.increment() }
        }
        await clock.waitForSleepers(count: 1)
        return (registry, waiter)
    }

    /// A caller waiting for the refill holds no permit: woken at t = 60, it finds the bucket
    /// full and takes its token only when it runs. Forgotten in between, the limiter would
    /// hand the key a fresh, full one, and the key would get two permits at t = 60.
    @MainActor @Test func aLimiterWithACallerWaitingIsKeptThoughFullAtItsRefill() async throws {
        let clock = TestClock()
        let admitted = Counter()
        let (registry, waiter) = try await Self.registryWithAWaiterOnA(clock: clock, admitted: admitted)
        let a = try #require(registry.existingLimiter(for: "a"))
        _ = registry.limiter(for: "b")  // full, and used more recently than a
        clock.advance(by: .seconds(60))  // the waiter is woken, and waits for the main actor
        _ = registry.limiter(for: "c")  // at the bound
        #expect(registry.existingLimiter(for: "a") === a, "a limiter with a caller waiting is kept")
        #expect(registry.existingLimiter(for: "b") == nil, "the full limiter with no one waiting goes")
        try await waiter.value  // takes the refilled token
        #expect(admitted.value == 2)
        #expect(registry.limiter(for: "a").tryAcquire() != nil, "no second permit for a at t = 60")
    }

    /// A waiting caller cancelled stops counting as waiting: its limiter, full again, is
    /// forgotten first once more.
    @MainActor @Test func aLimiterWhoseWaitingCallerIsCancelledCanBeForgottenAgain() async throws {
        let clock = TestClock()
        let admitted = Counter()
        let (registry, waiter) = try await Self.registryWithAWaiterOnA(clock: clock, admitted: admitted)
        let a = try #require(registry.existingLimiter(for: "a"))
        waiter.cancel()  // the waiter ends only when it runs
        clock.advance(by: .seconds(60))
        try #require(registry.limiter(for: "b").tryAcquire() == nil)  // b busy
        _ = registry.limiter(for: "a")  // a full, and used more recently than b
        _ = registry.limiter(for: "c")
        #expect(registry.existingLimiter(for: "a") === a, "still waited on, a is kept; busy b goes")
        #expect(registry.existingLimiter(for: "b") == nil)
        #expect(await waiter.result.isCancellation)
        _ = registry.limiter(for: "d")  // a and c full; a used less recently
        #expect(registry.existingLimiter(for: "a") == nil, "no one waits on a any more: it goes")
        #expect(registry.existingLimiter(for: "c") != nil)
        #expect(admitted.value == 1)
    }

    /// The injected clock is user code: the registry reads it before it takes its lock.
    @Test func theRegistryNeverReadsTheClockUnderItsLock() async throws {
        let probe = LockProbe()
        let clock = ProbedClock(base: TestClock(), probe: probe)
        let registry = try RateLimiterRegistry<String>(
            name: "hosts", algorithm: Self.bucket, maximumCount: 2, clock: clock)
        probe.watch { registry.registry.isLockHeld }
        await Self.exhaust(registry, "a")
        for key in ["b", "c", "d", "e"] { _ = registry.limiter(for: key) }
        #expect(probe.runs > 0)
        #expect(probe.runsUnderTheLock == 0)
    }
}

extension Result {
    /// Whether this is a `CancellationError`.
    fileprivate var isCancellation: Bool {
        if case .failure(let error) = self { return error is CancellationError }
        return false
    }
}

/// A test clock whose every reading is counted by a ``LockProbe``.
struct ProbedClock: Clock {
    typealias Instant = TestClock.Instant
    let base: TestClock
    let probe: LockProbe

    var now: Instant {
        self.probe.check()
        return self.base.now
    }

    var minimumResolution: Duration { self.base.minimumResolution }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await self.base.sleep(until: deadline, tolerance: tolerance)
    }
}
