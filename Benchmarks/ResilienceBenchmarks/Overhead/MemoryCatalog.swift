import Resilience

/// Every row of the memory table, in order. Circuit breaker rows go in `MemoryCatalog+CircuitBreaker.swift`.
enum MemoryCatalog {
    /// The whole table.
    static func all() -> [MemoryBenchmark] {
        Self.library + Self.circuitBreaker + Self.comparators
    }

    /// The library's retry objects.
    static let library: [MemoryBenchmark] = [
        MemoryBenchmark(name: "retry-policy", detail: "RetryPolicy() with the defaults") {
            RetryPolicy()
        },
        MemoryBenchmark(name: "retry-budget", detail: "RetryBudget() with the defaults") {
            try RetryBudget()
        },
    ]

    /// The comparators' objects.
    static let comparators: [MemoryBenchmark] = [
        MemoryBenchmark(name: "seed-design.breaker", detail: "class + serial DispatchQueue") {
            SeedDesignCircuitBreaker()
        },
        MemoryBenchmark(name: "actor-per-call.breaker", detail: "actor") {
            ActorPerCallCircuitBreaker()
        },
    ]
}
