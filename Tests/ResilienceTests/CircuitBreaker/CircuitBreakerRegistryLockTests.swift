import Resilience
import ResilienceTesting
import Testing

/// A key whose `hash(into:)` and `==` check, every time they run, that the
/// registry's lock is free; its hash collides for every key of the same length.
private struct LockProbingKey: Hashable, Sendable, CustomStringConvertible {
    let name: String
    let probe: LockProbe

    static func == (lhs: LockProbingKey, rhs: LockProbingKey) -> Bool {
        lhs.probe.check()
        return lhs.name == rhs.name
    }

    func hash(into hasher: inout Hasher) {
        self.probe.check()
        hasher.combine(self.name.count)  // collides on purpose: "a1" and "b2" share a hash
    }

    var description: String { self.name }
}

@Suite struct CircuitBreakerRegistryLockTests {
    @Test func aKeysHashAndEqualityNeverRunUnderTheRegistrysLock() throws {
        let probe = LockProbe()
        let registry = try CircuitBreakerRegistry<LockProbingKey>(
            name: "probed", configuration: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(1)),
            maximumCount: 4, clock: TestClock())
        probe.watch { [weak registry] in registry?.isLockHeld ?? false }
        let names = ["a1", "b2", "c3", "d4", "e5", "f6", "g7"]  // one hash value for all
        var handed: [String: CircuitBreaker] = [:]
        for round in 0..<3 {
            for name in names.prefix(round == 0 ? 4 : names.count) {
                let key = LockProbingKey(name: name, probe: probe)
                let breaker = registry.breaker(for: key)
                if round == 0 { handed[name] = breaker }
                #expect(registry.existingBreaker(for: key) === breaker)
            }
        }
        // Within the bound, colliding keys still get breakers of their own.
        #expect(Set(handed.values.map(ObjectIdentifier.init)).count == 4)
        #expect(registry.count == 4)
        #expect(registry.snapshots().count == 4)
        #expect(probe.runs > 0, "the probe never ran")
        #expect(probe.runsUnderTheLock == 0)
    }

    @Test func collidingKeysKeepTheirOwnBreakersAndTheBoundEvictsAcrossAChain() async throws {
        let probe = LockProbe()
        let registry = try CircuitBreakerRegistry<LockProbingKey>(
            name: "probed", configuration: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(1)),
            maximumCount: 2, clock: TestClock())
        probe.watch { [weak registry] in registry?.isLockHeld ?? false }
        let first = LockProbingKey(name: "a1", probe: probe)
        let second = LockProbingKey(name: "b2", probe: probe)
        let third = LockProbingKey(name: "c3", probe: probe)
        let firstBreaker = registry.breaker(for: first)
        let secondBreaker = registry.breaker(for: second)
        #expect(firstBreaker !== secondBreaker)
        #expect(registry.breaker(for: first) === firstBreaker)  // now the most recent
        _ = registry.breaker(for: third)  // forgets the least recently used: `second`
        #expect(registry.existingBreaker(for: second) == nil)
        #expect(registry.existingBreaker(for: first) === firstBreaker)
        #expect(registry.count == 2)
        #expect(registry.breaker(for: second) !== secondBreaker, "a forgotten key gets a fresh breaker")
        // `second` now heads the chain and is the newest; using `third` (behind it in the
        // chain) makes `second` the least recently used, so the next new key forgets it.
        #expect(registry.existingBreaker(for: first) == nil)
        let thirdBreaker = try #require(registry.existingBreaker(for: third))
        #expect(registry.breaker(for: third) === thirdBreaker)
        let newestSecond = registry.breaker(for: second)
        #expect(registry.breaker(for: third) === thirdBreaker)
        _ = registry.breaker(for: LockProbingKey(name: "d4", probe: probe))
        #expect(registry.existingBreaker(for: second) == nil)
        #expect(registry.existingBreaker(for: third) === thirdBreaker)
        _ = newestSecond
        #expect(probe.runsUnderTheLock == 0)
    }
}
