import Resilience
import Synchronization

extension MemoryCatalog {
    /// Bytes per circuit breaker (with each trip rule) and per registry entry.
    static let circuitBreaker: [MemoryBenchmark] = [
        MemoryBenchmark(name: "breaker", detail: "CircuitBreaker(name:) with the defaults") {
            CircuitBreaker(name: "benchmark")
        },
        MemoryBenchmark(name: "breaker.time-window", detail: "failure rate over 30 s in 10 buckets") {
            try BreakerFixtures.timeWindow()
        },
        MemoryBenchmark(name: "registry-entry", detail: "one more key in a CircuitBreakerRegistry") {
            try RegistryEntryFixture.shared.breakerForNewKey()
        },
    ]
}

/// One registry that the `registry-entry` row fills with new keys.
///
/// Each object the row makes is the breaker for a key the registry has not seen,
/// so the bytes counted per object are the breaker (default settings, named
/// `"hosts[<key>]"` by the registry) plus the registry's own storage for the
/// entry: its dictionary slot and its node on the recency list, with the
/// amortized growth of both. The bound is far above the count, so nothing is evicted.
final class RegistryEntryFixture: Sendable {
    /// The fixture the memory row uses.
    static let shared = RegistryEntryFixture()

    private let registry: CircuitBreakerRegistry<Int>?
    private let nextKey = Atomic<Int>(0)

    private init() {
        self.registry = try? CircuitBreakerRegistry<Int>(name: "hosts", maximumCount: 1_000_000)
    }

    /// The breaker for a key the registry does not hold yet.
    func breakerForNewKey() throws -> CircuitBreaker {
        guard let registry = self.registry else { throw FixtureError("the registry rejected its settings") }
        let key = self.nextKey.wrappingAdd(1, ordering: .relaxed).newValue
        return registry.breaker(for: key)
    }
}
