import Resilience

extension OverheadCatalog {
    /// The library's circuit breaker rows: the success path under each trip rule, retry
    /// around breaker, and a rejection while open, from both callers; the consecutive
    /// rule also with 2 and 64 tasks through one breaker (contention), the time window with
    /// 64; and a registry lookup by host followed by a call, with the same host value each
    /// time and with equal hosts stored apart. The subjects and
    /// fixtures are in `BreakerSubjects.swift`.
    static let circuitBreaker: [OverheadBenchmark] = [
        OverheadBenchmark(
            "breaker.success.consecutive", OverheadConfiguration.bothCallers + OverheadConfiguration.contention
        ) {
            BreakerSuccess(breaker: try BreakerFixtures.consecutive())
        },
        OverheadBenchmark(
            "breaker.success.window", OverheadConfiguration.bothCallers + [OverheadConfiguration.tasks(64)]
        ) {
            BreakerSuccess(breaker: try BreakerFixtures.timeWindow())
        },
        OverheadBenchmark("registry.success", OverheadConfiguration.bothCallers) {
            RegistrySuccess(registry: try BreakerFixtures.registry())
        },
        OverheadBenchmark("registry.success.equal-key", OverheadConfiguration.bothCallers) {
            RegistryEqualKeySuccess(registry: try BreakerFixtures.registry())
        },
        OverheadBenchmark("retry+breaker.success", OverheadConfiguration.bothCallers) {
            RetryAroundBreakerSuccess(policy: RetryPolicy(), breaker: try BreakerFixtures.consecutive())
        },
        OverheadBenchmark("breaker.rejection", OverheadConfiguration.bothCallers) {
            try await BreakerRejection.make()
        },
        OverheadBenchmark("breaker.failure", OverheadConfiguration.bothCallers) {
            BreakerFailure(breaker: try BreakerFixtures.neverTripping())
        },
    ]
}
