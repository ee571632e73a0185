// EXTENSION POINT: bytes per circuit breaker and per registry entry.
//
// Empty until the CircuitBreaker lands. Then add, for example:
//
//   MemoryBenchmark(name: "breaker", detail: "CircuitBreaker() with the defaults") {
//       try CircuitBreaker()
//   },
//   MemoryBenchmark(name: "registry-entry", detail: "one key's breaker in a registry") {
//       // Keep one registry outside the closure and return the breaker for a new key each
//       // time: the count then includes the registry's own storage per entry.
//       registry.breaker(for: UniqueKey.next())
//   },
//
// and add the names to REQUIRED_MEMORY_ROWS in `.ci/steps/40-benchmark.sh`.

extension MemoryCatalog {
    /// Bytes per circuit breaker and per registry entry; empty until the breaker lands.
    static let circuitBreaker: [MemoryBenchmark] = []
}
