import Foundation
import Resilience
import ResilienceTesting
import Testing

@testable import Resilience

// User code the library calls (a key's hash, == and deinit, a factory, an observer, a clock)
// that calls back into the same object. "Never hold a lock across user code": each must finish.
// A scenario runs on a thread of its own, so that a deadlock blocks that thread only and is
// reported as a failure after a few seconds instead of hanging the suite.

/// Runs `body` on a fresh thread; false when it did not finish within `seconds`.
private func finishes(within seconds: Double = 5, _ body: @escaping @Sendable () -> Void) async -> Bool {
    let done = DispatchSemaphore(value: 0)
    Thread {
        body()
        done.signal()
    }.start()
    return await signalled(done, within: seconds)
}

/// Runs async `body` on an actor whose executor is a thread of its own; false when it did not
/// finish within `seconds` (a deadlocked lock blocks that thread only).
private func finishesAsync(
    within seconds: Double = 5, _ body: @escaping @Sendable () async -> Void
) async -> Bool {
    let actor = IsolatedRunner()
    let done = DispatchSemaphore(value: 0)
    Task {
        await actor.run(body)
        done.signal()
    }
    return await signalled(done, within: seconds)
}

/// Whether `done` is signalled within `seconds`. Another thread waits for it, so a deadlock
/// blocks no thread of the shared pool.
private func signalled(_ done: DispatchSemaphore, within seconds: Double) async -> Bool {
    await withCheckedContinuation { continuation in
        Thread {
            continuation.resume(returning: done.wait(timeout: .now() + seconds) == .success)
        }.start()
    }
}

private actor IsolatedRunner {
    let executor = DedicatedThreadExecutor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { self.executor.asUnownedSerialExecutor() }
    func run(_ body: @Sendable () async -> Void) async { await body() }
}

/// A hook settable after the object it calls into exists.
final class ReentrantHook: Sendable {
    private let body = Lock<(@Sendable () -> Void)?>(nil)
    private let calls = Lock(0)
    func set(_ body: @escaping @Sendable () -> Void) { self.body.withLock { $0 = body } }
    func fire() {
        // One level deep: a hook that reads the clock again does not call itself forever.
        guard Thread.current.threadDictionary["reentrantHook"] == nil else { return }
        Thread.current.threadDictionary["reentrantHook"] = true
        defer { Thread.current.threadDictionary["reentrantHook"] = nil }
        self.calls.withLock { $0 += 1 }
        self.body.withLock { $0 }?()
    }
    var count: Int { self.calls.withLock { $0 } }
}

/// Fires the hook from its deinit.
final class DeinitHookTracker: Sendable {
    let hook: ReentrantHook
    init(_ hook: ReentrantHook) { self.hook = hook }
    deinit { self.hook.fire() }
}

/// A key whose hash(into:) and == call the hook, and whose last copy's death does too.
struct HookedKey: Hashable, Sendable, CustomStringConvertible {
    let id: Int
    let hook: ReentrantHook
    let tracker: DeinitHookTracker?
    init(_ id: Int, _ hook: ReentrantHook, tracksDeinit: Bool = false) {
        self.id = id
        self.hook = hook
        self.tracker = tracksDeinit ? DeinitHookTracker(hook) : nil
    }
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.hook.fire()
        return lhs.id == rhs.id
    }
    func hash(into hasher: inout Hasher) {
        self.hook.fire()
        hasher.combine(self.id)
    }
    var description: String { "k\(self.id)" }
}

/// A clock whose `now` calls the hook.
struct ReentrantClock: Clock {
    typealias Duration = Swift.Duration
    typealias Instant = TestClock.Instant
    let base: TestClock
    let hook: ReentrantHook
    var now: Instant {
        self.hook.fire()
        return self.base.now
    }
    var minimumResolution: Swift.Duration { .zero }
    func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
        self.hook.fire()
        try await self.base.sleep(until: deadline, tolerance: tolerance)
    }
}

struct HookedBreakerObserver: CircuitBreakerObserver {
    let hook: ReentrantHook
    func stateChanged(_ event: CircuitBreakerStateChangeEvent) { self.hook.fire() }
    func callRejected(_ event: CircuitBreakerRejectionEvent) { self.hook.fire() }
}

struct HookedStrategyObserver: StrategyObserver {
    let hook: ReentrantHook
    func observe(_ event: StrategyEvent) { self.hook.fire() }
}

/// A pipeline stage whose deinit calls the hook.
struct DeinitTrackedStage: ResilienceStrategy {
    let tracker: DeinitHookTracker
    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await operation.run()
    }
}

@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .disabled(
        if: runsUnderThreadSanitizer,
        "threads that wait on timers starve under ThreadSanitizer; runs in the plain test step"))
struct ReentrancyTests {
    // MARK: Keys

    @Test func breakerRegistryKeyHashAndEqualsCallBackIntoTheRegistry() async throws {
        let hook = ReentrantHook()
        let registry = try CircuitBreakerRegistry<HookedKey>(maximumCount: 2) { key in
            CircuitBreaker(name: "b\(key.id)")
        }
        let plain = ReentrantHook()
        hook.set {
            _ = registry.count
            _ = registry.existingBreaker(for: HookedKey(99, plain))
            _ = registry.breaker(for: HookedKey(100, plain))
            _ = registry.snapshots()
        }
        let ok = await finishes {
            for id in 0..<6 { _ = registry.breaker(for: HookedKey(id % 4, hook)) }
            _ = registry.existingBreaker(for: HookedKey(1, hook))
            _ = registry.snapshots()
        }
        #expect(ok, "a key's hash/== that calls back into the CircuitBreakerRegistry deadlocked")
        if ok { #expect(registry.count <= 2) }
    }

    @Test func rateLimiterRegistryKeyHashAndEqualsCallBackIntoTheRegistry() async throws {
        let hook = ReentrantHook()
        let clock = TestClock()
        let registry = try RateLimiterRegistry<HookedKey>(maximumCount: 2) { key in
            try! RateLimiter(.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        }
        let plain = ReentrantHook()
        hook.set {
            _ = registry.count
            _ = registry.existingLimiter(for: HookedKey(99, plain))
            _ = registry.limiter(for: HookedKey(100, plain))
        }
        let ok = await finishes {
            for id in 0..<6 { _ = registry.limiter(for: HookedKey(id % 4, hook)) }
            _ = registry.existingLimiter(for: HookedKey(1, hook))
        }
        #expect(ok, "a key's hash/== that calls back into the RateLimiterRegistry deadlocked")
        if ok { #expect(registry.count <= 2) }
    }

    @Test func pipelineRegistryKeyHashAndEqualsCallBackIntoTheRegistry() async throws {
        let hook = ReentrantHook()
        let registry = try ResiliencePipelineRegistry<HookedKey, CircuitBreaker>(maximumCount: 2) { key in
            ResiliencePipeline(strategies: CircuitBreaker(name: "p\(key.id)"))
        }
        let plain = ReentrantHook()
        hook.set {
            _ = registry.count
            _ = registry.existingPipeline(for: HookedKey(99, plain))
            _ = registry.pipeline(for: HookedKey(100, plain))
        }
        let ok = await finishes {
            for id in 0..<6 { _ = registry.pipeline(for: HookedKey(id % 4, hook)) }
            _ = registry.existingPipeline(for: HookedKey(1, hook))
        }
        #expect(ok, "a key's hash/== that calls back into the ResiliencePipelineRegistry deadlocked")
        if ok { #expect(registry.count <= 2) }
    }

    /// A key whose last copy dies when the registry forgets it at the bound, and whose deinit looks the registry up.
    @Test func evictedKeysDeinitCallsBackIntoEachRegistry() async throws {
        let breakerHook = ReentrantHook()
        let breakers = try CircuitBreakerRegistry<HookedKey>(maximumCount: 1) { key in
            CircuitBreaker(name: "b\(key.id)")
        }
        let plain = ReentrantHook()
        breakerHook.set {
            _ = breakers.count
            _ = breakers.existingBreaker(for: HookedKey(7, plain))
        }
        #expect(
            await finishes {
                for id in 0..<4 { _ = breakers.breaker(for: HookedKey(id, breakerHook, tracksDeinit: true)) }
            }, "CircuitBreakerRegistry: an evicted key's deinit ran under the lock")
        #expect(breakerHook.count >= 3 * 2)

        let limiterHook = ReentrantHook()
        let clock = TestClock()
        let limiters = try RateLimiterRegistry<HookedKey>(maximumCount: 1) { _ in
            try! RateLimiter(.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        }
        limiterHook.set {
            _ = limiters.count
            _ = limiters.existingLimiter(for: HookedKey(7, plain))
        }
        #expect(
            await finishes {
                for id in 0..<4 { _ = limiters.limiter(for: HookedKey(id, limiterHook, tracksDeinit: true)) }
            }, "RateLimiterRegistry: an evicted key's deinit ran under the lock")

        let pipelineHook = ReentrantHook()
        let stageHook = ReentrantHook()
        let pipelines = try ResiliencePipelineRegistry<HookedKey, DeinitTrackedStage>(maximumCount: 1) {
            _ in
            ResiliencePipeline(strategies: DeinitTrackedStage(tracker: DeinitHookTracker(stageHook)))
        }
        let reenter: @Sendable () -> Void = {
            _ = pipelines.count
            _ = pipelines.existingPipeline(for: HookedKey(7, plain))
        }
        pipelineHook.set(reenter)
        stageHook.set(reenter)
        #expect(
            await finishes {
                for id in 0..<4 {
                    _ = pipelines.pipeline(for: HookedKey(id, pipelineHook, tracksDeinit: true))
                }
            }, "ResiliencePipelineRegistry: an evicted key's or pipeline's deinit ran under the lock")
        #expect(stageHook.count >= 3, "the evicted pipelines' stages were not released")
        #expect(limiterHook.count >= 3)
    }

    /// A key whose hash waits until another thread has looked up a different key: a lock held across
    /// the hash would make that lookup wait for it, and neither would finish.
    @Test func aSlowKeyDoesNotHoldTheLockOtherLookupsNeed() async throws {
        let gate = DispatchSemaphore(value: 0)
        let hook = ReentrantHook()
        let registry = try CircuitBreakerRegistry<HookedKey>(maximumCount: 4) { key in
            CircuitBreaker(name: "b\(key.id)")
        }
        let limiters = try RateLimiterRegistry<HookedKey>(maximumCount: 4) { _ in
            try! RateLimiter(.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), clock: TestClock())
        }
        let plain = ReentrantHook()
        _ = registry.breaker(for: HookedKey(1, hook))
        _ = limiters.limiter(for: HookedKey(1, hook))
        hook.set { _ = gate.wait(timeout: .now() + 4) }
        let slow = Thread {
            _ = registry.breaker(for: HookedKey(1, hook))
            _ = limiters.limiter(for: HookedKey(1, hook))
        }
        slow.start()
        let ok = await finishes(within: 3) {
            _ = registry.breaker(for: HookedKey(2, plain))
            gate.signal()
            _ = limiters.limiter(for: HookedKey(2, plain))
            gate.signal()
        }
        #expect(ok, "a lookup waited for another key's slow hash/==")
        gate.signal()
        gate.signal()
    }

    @Test func factoriesThatLookUpTheirOwnRegistry() async throws {
        let breakersBox = Lock<CircuitBreakerRegistry<Int>?>(nil)
        let breakers = try CircuitBreakerRegistry<Int>(maximumCount: 3) { key in
            if key > 0, let registry = breakersBox.withLock({ $0 }) {
                _ = registry.breaker(for: key - 1)
                _ = registry.count
            }
            return CircuitBreaker(name: "b\(key)")
        }
        breakersBox.withLock { $0 = breakers }
        let limitersBox = Lock<RateLimiterRegistry<Int>?>(nil)
        let clock = TestClock()
        let limiters = try RateLimiterRegistry<Int>(maximumCount: 3) { key in
            if key > 0, let registry = limitersBox.withLock({ $0 }) {
                _ = registry.limiter(for: key - 1)
                _ = registry.count
            }
            return try! RateLimiter(.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        }
        limitersBox.withLock { $0 = limiters }
        let pipelinesBox = Lock<ResiliencePipelineRegistry<Int, CircuitBreaker>?>(nil)
        let pipelines = try ResiliencePipelineRegistry<Int, CircuitBreaker>(maximumCount: 3) { key in
            if key > 0, let registry = pipelinesBox.withLock({ $0 }) {
                _ = registry.pipeline(for: key - 1)
                _ = registry.count
            }
            return ResiliencePipeline(strategies: CircuitBreaker(name: "p\(key)"))
        }
        pipelinesBox.withLock { $0 = pipelines }
        let ok = await finishes {
            _ = breakers.breaker(for: 5)
            _ = limiters.limiter(for: 5)
            _ = pipelines.pipeline(for: 5)
        }
        #expect(ok, "a factory that looks up its own registry deadlocked")
        if ok {
            #expect(breakers.count <= 3)
            #expect(limiters.count <= 3)
            #expect(pipelines.count <= 3)
            // The key asked for is held and answers the same object twice.
            #expect(breakers.breaker(for: 5) === breakers.breaker(for: 5))
            #expect(limiters.limiter(for: 5) === limiters.limiter(for: 5))
        }
    }

    /// Keys that break Hashable's contract (never equal to themselves; a hash that changes):
    /// the registry still keeps its bound and does not hang.
    @Test func inconsistentKeysKeepTheBound() async throws {
        struct NeverEqual: Hashable, Sendable {
            let id: Int
            static func == (lhs: Self, rhs: Self) -> Bool { false }
            func hash(into hasher: inout Hasher) { hasher.combine(0) }
        }
        final class Flip: Sendable {
            let n = Lock(0)
            func next() -> Int {
                self.n.withLock {
                    $0 += 1
                    return $0
                }
            }
        }
        struct Drifting: Hashable, Sendable {
            let id: Int
            let flip: Flip
            static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }
            func hash(into hasher: inout Hasher) { hasher.combine(self.flip.next()) }
        }
        let flip = Flip()
        let clock = TestClock()
        let breakers = try CircuitBreakerRegistry<NeverEqual>(maximumCount: 3) { _ in CircuitBreaker(name: "x") }
        let limiters = try RateLimiterRegistry<NeverEqual>(maximumCount: 3) { _ in
            try! RateLimiter(.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        }
        let drifting = try CircuitBreakerRegistry<Drifting>(maximumCount: 3) { _ in CircuitBreaker(name: "y") }
        let pipelines = try ResiliencePipelineRegistry<Drifting, CircuitBreaker>(maximumCount: 3) { _ in
            ResiliencePipeline(strategies: CircuitBreaker(name: "z"))
        }
        let ok = await finishes {
            for id in 0..<50 {
                _ = breakers.breaker(for: NeverEqual(id: id % 2))
                _ = limiters.limiter(for: NeverEqual(id: id % 2))
                _ = drifting.breaker(for: Drifting(id: id % 2, flip: flip))
                _ = pipelines.pipeline(for: Drifting(id: id % 2, flip: flip))
                _ = breakers.existingBreaker(for: NeverEqual(id: 0))
                _ = breakers.snapshots()
            }
        }
        #expect(ok)
        if ok {
            #expect(breakers.count <= 3)
            #expect(limiters.count <= 3)
            #expect(drifting.count <= 3)
            #expect(pipelines.count <= 3)
        }
    }

    // MARK: Clocks and observers

    @Test func breakerClockAndObserverCallBackIntoTheBreaker() async throws {
        let clockHook = ReentrantHook()
        let observerHook = ReentrantHook()
        let base = TestClock()
        let breaker = try CircuitBreaker(
            name: "reentrant", tripRule: .consecutiveFailures(2), openDuration: .fixed(.seconds(1)),
            observer: HookedBreakerObserver(hook: observerHook),
            clock: ReentrantClock(base: base, hook: clockHook))
        let reenter: @Sendable () -> Void = {
            _ = breaker.snapshot()
            _ = breaker.state
        }
        clockHook.set(reenter)
        observerHook.set(reenter)
        let ok = await finishesAsync {
            for round in 0..<3 {
                for _ in 0..<3 {
                    _ = try? await breaker.execute { () async throws -> Int in throw StatusError(status: 503) }
                }
                base.advance(by: .seconds(2))
                _ = try? await breaker.execute { round }
            }
            breaker.isolate()
            _ = try? await breaker.execute { 0 }
            breaker.reset()
        }
        #expect(ok, "a breaker's clock or observer that reads the breaker deadlocked")
        #expect(observerHook.count > 0)
    }

    @Test func breakerRegistryClockAndObserverCallBackIntoTheRegistry() async throws {
        let hook = ReentrantHook()
        let base = TestClock()
        let registry = try CircuitBreakerRegistry<Int>(
            name: "r", configuration: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(1)),
            maximumCount: 2, observer: HookedBreakerObserver(hook: hook),
            clock: ReentrantClock(base: base, hook: hook))
        hook.set {
            _ = registry.count
            _ = registry.snapshots()
            _ = registry.breaker(for: 1000)
        }
        let ok = await finishesAsync {
            for key in 0..<6 {
                _ = try? await registry.breaker(for: key % 3).execute { () async throws -> Int in
                    throw StatusError(status: 503)
                }
            }
        }
        #expect(ok, "a registry's clock or observer that calls the registry deadlocked")
    }

    @Test func rateLimiterClockAndObserverCallBackIntoTheLimiter() async throws {
        let hook = ReentrantHook()
        let base = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)),
            observer: HookedStrategyObserver(hook: hook),
            clock: ReentrantClock(base: base, hook: hook))
        hook.set { _ = limiter.availablePermits }
        let ok = await finishesAsync {
            for _ in 0..<4 { _ = try? await limiter.execute { 1 } }
            base.advance(by: .seconds(1))
            _ = limiter.availablePermits
        }
        #expect(ok, "a rate limiter's clock or observer that reads the limiter deadlocked")
    }

    @Test func rateLimiterRegistryClockCallsBackIntoTheRegistry() async throws {
        let hook = ReentrantHook()
        let base = TestClock()
        let registry = try RateLimiterRegistry<Int>(
            name: "r", algorithm: .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)),
            maximumCount: 2, observer: HookedStrategyObserver(hook: hook),
            clock: ReentrantClock(base: base, hook: hook))
        hook.set {
            _ = registry.count
            _ = registry.existingLimiter(for: 1)
            _ = registry.limiter(for: 500)
        }
        let ok = await finishesAsync {
            for key in 0..<8 { _ = try? await registry.limiter(for: key % 4).execute { 1 } }
        }
        #expect(ok, "a rate limiter registry's clock or observer that calls the registry deadlocked")
        #expect(registry.count <= 2)
    }

    @Test func concurrencyLimiterClockAndObserverCallBackIntoTheLimiter() async throws {
        let hook = ReentrantHook()
        let base = TestClock()
        let limiter = try ConcurrencyLimiter(
            limit: 1, queueLimit: 1, queueTimeout: .seconds(1), observer: HookedStrategyObserver(hook: hook),
            clock: ReentrantClock(base: base, hook: hook))
        hook.set {
            _ = limiter.queued
            _ = limiter.inFlight
        }
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        try await yieldUntil { limiter.inFlight > 0 }
        let ok = await finishesAsync {
            async let queued: Void? = try? await limiter.execute { () }
            while limiter.queued == 0, !Task.isCancelled { await Task.yield() }
            _ = try? await limiter.execute { () }  // queue full: rejected
            await base.waitForSleepers(count: 1)
            base.advance(by: .seconds(1))  // the queued caller times out
            _ = await queued
        }
        gate.open()
        _ = try await holder.value
        #expect(ok, "a bulkhead's clock or observer that reads the bulkhead deadlocked")
        #expect(hook.count >= 3)
    }
}
