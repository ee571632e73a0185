// EXTENSION POINT: the outage simulation with a circuit breaker.
//
// Empty until the CircuitBreaker lands. Then add a variant whose caller puts a
// breaker, on the simulation's clock, in each client's call path, for example
// retry around breaker:
//
//   OutageSimulation.Variant(budget: true, breaker: true) { clock, seed in
//       RetryAroundBreakerCaller(
//           policy: try RetryPolicy(maximumAttempts: OutageSimulation.maximumAttempts,
//                                   budget: try RetryBudget(), clock: clock,
//                                   generator: SeededRandomNumberGenerator(seed: seed)),
//           breaker: try CircuitBreaker(/* consecutive rule */, clock: clock))
//   }
//
// where `RetryAroundBreakerCaller: SimulatedCaller` sends each attempt through
// `breaker.execute` inside `policy.outcome`. Attempts the breaker rejects never
// reach the server, so the client does not count them; recovery_ms then shows how
// long the open breaker delays the first success after the server recovers. The
// row appears in the outage table and in JSON with "breaker": true; add it to the
// required simulation rows in `.ci/steps/40-benchmark.sh`.

extension SimulationCatalog {
    /// Outage variants with a circuit breaker; empty until the breaker lands.
    static let circuitBreakerOutageVariants: [OutageSimulation.Variant] = []
}
