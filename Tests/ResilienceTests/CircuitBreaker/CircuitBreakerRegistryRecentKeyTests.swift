import Resilience
import ResilienceTesting
import Testing

/// A key that counts the runs of its `hash(into:)` and `==`.
private struct CountingKey: Hashable, Sendable, CustomStringConvertible {
    let name: String
    let counter: KeyRunCounter

    static func == (lhs: CountingKey, rhs: CountingKey) -> Bool {
        lhs.counter.count()
        return lhs.name == rhs.name
    }

    func hash(into hasher: inout Hasher) {
        self.counter.count()
        hasher.combine(self.name)
    }

    var description: String { self.name }
}

private final class KeyRunCounter: Sendable {
    private let runs = Lock(0)

    func count() { self.runs.withLock { $0 += 1 } }

    var value: Int { self.runs.withLock { $0 } }
}

@Suite struct CircuitBreakerRegistryRecentKeyTests {
    /// A struct key may have padding or unused payload bytes, whose reading is
    /// undefined: it skips the bit-for-bit cache and is hashed and compared every time
    /// (outside the lock), and still finds its one breaker.
    @Test func aKeyOfAStructTypeSkipsTheBitCacheAndKeepsItsBreaker() throws {
        let counter = KeyRunCounter()
        let registry = try CircuitBreakerRegistry<CountingKey>(name: "hosts", clock: TestClock())
        let key = CountingKey(name: "a.example", counter: counter)
        let breaker = registry.breaker(for: key)
        var runs = counter.value
        #expect(runs > 0, "the first use hashes the key")
        for _ in 0..<10 {
            #expect(registry.breaker(for: key) === breaker)
            #expect(counter.value > runs, "each lookup hashes and compares the key")
            runs = counter.value
        }
        #expect(registry.existingBreaker(for: key) === breaker)
        #expect(registry.count == 1)
    }

    @Test func anEqualKeyWithOtherBitsFindsTheSameBreaker() throws {
        let registry = try CircuitBreakerRegistry<String>(name: "hosts", clock: TestClock())
        // Longer than 15 UTF-8 bytes, so each string has storage of its own.
        let first = String(repeating: "a", count: 20) + ".example.com"
        let second = String(repeating: "a", count: 20) + ".example" + ".com"
        let breaker = registry.breaker(for: first)
        #expect(registry.breaker(for: second) === breaker)
        #expect(registry.breaker(for: first) === breaker)
        #expect(registry.count == 1)
    }

    @Test func aRememberedKeyGetsAFreshBreakerOnceItsBreakerIsForgotten() throws {
        let registry = try CircuitBreakerRegistry<Int>(name: "ids", maximumCount: 2, clock: TestClock())
        let forgotten = registry.breaker(for: 1)
        #expect(registry.breaker(for: 1) === forgotten)
        _ = registry.breaker(for: 2)
        _ = registry.breaker(for: 3)  // forgets 1, the least recently used
        #expect(registry.existingBreaker(for: 1) == nil)
        let fresh = registry.breaker(for: 1)
        #expect(fresh !== forgotten)
        #expect(registry.breaker(for: 1) === fresh)
        #expect(registry.count == 2)
    }

    @Test func manyKeysSharingCacheSlotsKeepTheirOwnBreakers() throws {
        let registry = try CircuitBreakerRegistry<Int>(name: "ids", maximumCount: 1_000, clock: TestClock())
        let breakers = (0..<200).map { registry.breaker(for: $0) }
        var generator = SeededRandomNumberGenerator(seed: 7)
        for _ in 0..<3 {
            for key in (0..<200).shuffled(using: &generator) {
                #expect(registry.breaker(for: key) === breakers[key])
            }
        }
        #expect(registry.count == 200)
    }
}
