import Testing

@testable import Resilience

/// A key whose `hash(into:)` and `==` record, every time they run, whether the
/// registry's lock was held; its hash collides for every key of the same length.
private struct ProbingKey: Hashable, Sendable {
    let name: String
    let probe: LockProbe

    static func == (lhs: ProbingKey, rhs: ProbingKey) -> Bool {
        lhs.probe.check()
        return lhs.name == rhs.name
    }

    func hash(into hasher: inout Hasher) {
        self.probe.check()
        hasher.combine(self.name.count)  // collides on purpose: "a1" and "b2" share a hash
    }
}

@Suite struct BoundedRegistryTests {
    @Test func aKeysHashAndEqualityNeverRunUnderTheLockAndCollidingKeysKeepTheirOwnValues() throws {
        let probe = LockProbe()
        let made = Lock(0)
        let registry = try BoundedRegistry<ProbingKey, Int>(maximumCount: 3) { _ in
            made.withLock { count in
                count += 1
                return count
            }
        }
        probe.watch { [weak registry] in registry?.isLockHeld ?? false }
        let a = ProbingKey(name: "a1", probe: probe)
        let b = ProbingKey(name: "b2", probe: probe)
        let c = ProbingKey(name: "c3", probe: probe)
        let d = ProbingKey(name: "d4", probe: probe)
        let valueOfA = registry.value(for: a)
        let valueOfB = registry.value(for: b)
        let valueOfC = registry.value(for: c)
        #expect(Set([valueOfA, valueOfB, valueOfC]).count == 3, "colliding keys share a value")
        #expect(registry.value(for: a) == valueOfA)
        #expect(registry.value(for: c) == valueOfC)
        // All in one chain; `b` is the least recently used, so a fourth key forgets it.
        let valueOfD = registry.value(for: d)
        #expect(registry.count == 3)
        #expect(registry.existingValue(for: b) == nil)
        #expect(registry.existingValue(for: a) == valueOfA)
        #expect(registry.existingValue(for: c) == valueOfC)
        #expect(registry.existingValue(for: d) == valueOfD)
        #expect(registry.value(for: b) != valueOfB, "a forgotten key gets a fresh value")
        #expect(probe.runs > 0, "the probe never ran")
        #expect(probe.runsUnderTheLock == 0)
    }

    @Test func aKeyUsedAloneInItsChainCountsAsUsed() throws {
        let registry = try BoundedRegistry<Int, Int>(maximumCount: 2) { $0 * 10 }
        #expect(registry.value(for: 1) == 10)
        #expect(registry.value(for: 2) == 20)
        #expect(registry.value(for: 1) == 10)  // 1 is now the most recently used
        #expect(registry.value(for: 3) == 30)
        #expect(registry.existingValue(for: 2) == nil)
        #expect(registry.existingValue(for: 1) == 10)
        #expect(registry.count == 2)
    }

    @Test func concurrentFirstUsesOfAKeyShareOneValue() async throws {
        let made = Lock(0)
        let registry = try BoundedRegistry<String, Int>(maximumCount: 10) { _ in
            made.withLock { count in
                count += 1
                return count
            }
        }
        let values = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<64 { group.addTask { registry.value(for: "shared") } }
            return await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(values.count == 1)
        #expect(registry.count == 1)
    }
}
