import Foundation
import Resilience
import ResilienceTesting
import Testing

/// What a breaker registry with a throttle per key keeps at its bound: a closed breaker whose
/// own throttle rejects calls is kept, as an open one is, since forgetting it would hand its
/// host's clients a throttle that lets everything through; a throttle other keys share keeps
/// nothing, since forgetting one of its breakers loses nothing of it.
@Suite(.timeLimit(.minutes(5))) struct CircuitBreakerRegistryThrottleBoundTests {
    private static func throttle(clock: some Clock<Duration>) -> AdaptiveThrottle? {
        try? AdaptiveThrottle(
            window: .seconds(120), floor: 0, clock: clock, generator: SeededRandomNumberGenerator(seed: 7))
    }

    /// A registry of two breakers, each with a throttle of its own.
    private static func registry(clock: some Clock<Duration>) throws -> CircuitBreakerRegistry<String> {
        try CircuitBreakerRegistry<String>(
            name: "hosts", maximumCount: 2, makeThrottle: { _ in Self.throttle(clock: clock) }, clock: clock)
    }

    /// Host a's server refused its requests: its throttle rejects some of a's calls, while its
    /// breaker, which counts no failure the throttle recorded, stays closed.
    private static func overload(_ registry: CircuitBreakerRegistry<String>, _ host: String) throws -> AdaptiveThrottle
    {
        let throttle = try #require(registry.breaker(for: host).throttle)
        for _ in 0..<5 { throttle.recordRejected() }
        #expect(throttle.rejectionProbability > 0)
        return throttle
    }

    @Test func aClosedBreakerWhoseOwnThrottleRejectsIsNotForgotten() throws {
        let clock = TestClock()
        let registry = try Self.registry(clock: clock)
        let breakerOfA = registry.breaker(for: "a")
        let throttleOfA = try Self.overload(registry, "a")
        for host in ["b", "c", "d"] { _ = registry.breaker(for: host) }
        #expect(registry.existingBreaker(for: "a") === breakerOfA, "host a got a fresh throttle")
        #expect(registry.breaker(for: "a").throttle === throttleOfA)
        #expect(registry.existingBreaker(for: "c") == nil, "the least recently used breaker not kept goes")
        #expect(registry.count == 2)
    }

    /// Once the window has passed with nothing failing, the throttle rejects nothing: its
    /// breaker goes least recently used first again.
    @Test func aBreakerWhoseOwnThrottleHasRecoveredIsForgotten() throws {
        let clock = TestClock()
        let registry = try Self.registry(clock: clock)
        let throttleOfA = try Self.overload(registry, "a")
        clock.advance(by: .seconds(130))
        #expect(throttleOfA.rejectionProbability == 0)
        _ = registry.breaker(for: "b")
        _ = registry.breaker(for: "c")
        #expect(registry.existingBreaker(for: "a") == nil, "the least recently used breaker, recovered, was kept")
        #expect(registry.existingBreaker(for: "b") != nil)
    }

    /// One throttle every key shares keeps no breaker: the others, and the key's next breaker,
    /// still use it.
    @Test func aSharedThrottleKeepsNoBreaker() throws {
        let clock = TestClock()
        let shared = try #require(Self.throttle(clock: clock))
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts", maximumCount: 2, makeThrottle: { _ in shared }, clock: clock)
        _ = registry.breaker(for: "a")
        for _ in 0..<5 { shared.recordRejected() }
        #expect(shared.rejectionProbability > 0)
        _ = registry.breaker(for: "b")
        _ = registry.breaker(for: "c")
        #expect(registry.existingBreaker(for: "a") == nil, "a shared throttle kept a breaker")
        #expect(registry.breaker(for: "a").throttle === shared)
    }

    /// When every breaker held is kept (an open one, one whose own throttle rejects), the least
    /// recently used of them goes, so that the registry never grows past its bound.
    @Test func whenEveryBreakerIsKeptTheLeastRecentlyUsedGoes() throws {
        let clock = TestClock()
        let registry = try Self.registry(clock: clock)
        _ = try Self.overload(registry, "a")
        registry.breaker(for: "b").isolate()
        _ = registry.breaker(for: "c")
        #expect(registry.existingBreaker(for: "a") == nil)
        #expect(registry.existingBreaker(for: "b") != nil)
        #expect(registry.count == 2)
    }

    /// A throttle's clock may be the app's: the registry judges throttles at the bound without
    /// reading it under its lock.
    @Test func theRegistryNeverReadsAThrottlesClockUnderItsLock() throws {
        let probe = LockProbe()
        let clock = ProbedClock(base: TestClock(), probe: probe)
        let registry = try Self.registry(clock: clock)
        probe.watch { registry.isLockHeld }
        let breakerOfA = registry.breaker(for: "a")
        _ = try Self.overload(registry, "a")
        for host in ["b", "c", "d", "e"] { _ = registry.breaker(for: host) }
        #expect(registry.existingBreaker(for: "a") === breakerOfA)
        #expect(probe.runs > 0)
        #expect(probe.runsUnderTheLock == 0)
    }
}
