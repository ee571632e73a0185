// EXTENSION POINT: the circuit breaker rows of the overhead suite.
//
// The CircuitBreaker is not in this tree yet, so this list is empty and no
// breaker row is printed or emitted. When it lands, fill in `circuitBreaker`
// with one subject per row (see `RetrySubjects.swift` for the shape: a struct
// holding the fixture, with the call written once for each caller) and add the
// row names to `.ci/steps/40-benchmark.sh` (REQUIRED_OVERHEAD_ROWS). The rows
// the issue asks for:
//
//   OverheadBenchmark("breaker.success.consecutive",
//                     OverheadConfiguration.bothCallers + OverheadConfiguration.contention) {
//       BreakerSuccess(breaker: try CircuitBreaker(/* consecutive-failure rule */))
//   },
//   OverheadBenchmark("breaker.success.window", OverheadConfiguration.bothCallers) {
//       BreakerSuccess(breaker: try CircuitBreaker(/* time-window rule */))
//   },
//   OverheadBenchmark("retry+breaker.success", OverheadConfiguration.bothCallers) {
//       RetryAroundBreakerSuccess(policy: try RetryPolicy(), breaker: try CircuitBreaker())
//   },
//   OverheadBenchmark("breaker.rejection", OverheadConfiguration.bothCallers) {
//       try await BreakerRejection.make()   // a breaker forced or tripped open; catch the rejection
//   },
//
// `OverheadConfiguration.contention` adds the 2- and 64-task rows ("contention:
// 1, 2 and 64 tasks through one breaker"); the direct baseline is measured in
// every configuration automatically. Bytes per breaker and per registry entry go
// in `MemoryCatalog+CircuitBreaker.swift`; the outage-with-breaker row goes in
// `SimulationCatalog+CircuitBreaker.swift`.

extension OverheadCatalog {
    /// The library's circuit breaker rows; empty until the breaker lands.
    static let circuitBreaker: [OverheadBenchmark] = []
}
