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

    /// Finding the entry to forget asks the sparing test (a walk of a pipeline's stages, under
    /// the lock) only of entries that could still be the victim, not of every entry held; the
    /// choice stays exact: the least recently used entry not spared, else the least recently
    /// used of all.
    @Test func findingAnEntryToForgetAsksTheSparingTestOfFewEntries() throws {
        let asked = Lock(0)
        let sparing: BoundedRegistry<Int, Int>.Sparing? = {
            { value, _ in
                asked.withLock { $0 += 1 }
                return value % 2 == 0  // even values are spared
            }
        }
        let registry = try BoundedRegistry<Int, Int>(maximumCount: 1_000, preparingSparing: sparing) { $0 }
        for key in 0..<1_000 { _ = registry.value(for: key) }
        #expect(asked.withLock { $0 } == 0, "asked below the bound")
        for key in 1_000..<1_010 { _ = registry.value(for: key) }
        // Each of the ten insertions forgets the oldest odd key: 1, 3, ..., 19.
        #expect((0..<10).allSatisfy { registry.existingValue(for: 2 * $0 + 1) == nil })
        #expect((0..<10).allSatisfy { registry.existingValue(for: 2 * $0) != nil })
        #expect(registry.count == 1_000)
        #expect(asked.withLock { $0 } < 1_000, "the sparing test was asked of every entry at each insertion")
    }
}
