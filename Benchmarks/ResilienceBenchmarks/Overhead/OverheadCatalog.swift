import Resilience

/// Every row of the overhead suite, in table order.
///
/// To add a row, add an ``OverheadBenchmark`` to the right list: the runner,
/// tables, JSON, charts and the CI check pick it up from here. Circuit breaker
/// rows go in `OverheadCatalog+CircuitBreaker.swift`.
enum OverheadCatalog {
    /// The baseline every row is compared with: awaiting the operation directly.
    static let baseline = OverheadBenchmark("direct", OverheadConfiguration.bothCallers) { DirectCall() }

    /// The plain baseline, measured beside the strict one: awaiting a plain nonisolated
    /// `async` function directly, as other libraries' benchmarks usually do.
    static let plainBaseline = OverheadBenchmark("direct.plain", OverheadConfiguration.bothCallers) {
        PlainDirectCall()
    }

    /// The whole suite, or the rows whose name contains `filter`: the direct call in every
    /// configuration any other row uses, then the library's rows, then the comparators.
    static func all(filter: String? = nil) -> [OverheadBenchmark] {
        let measured = (Self.library + Self.circuitBreaker + Self.toolbox + Self.comparators).filter { benchmark in
            filter.map { benchmark.name.contains($0) } ?? true
        }
        var configurations: [OverheadConfiguration] = []
        for configuration in measured.flatMap(\.configurations) where !configurations.contains(configuration) {
            configurations.append(configuration)
        }
        if configurations.isEmpty { configurations = OverheadConfiguration.bothCallers }
        return [Self.baseline.with(configurations: configurations)] + measured
    }

    /// The library's retry rows.
    static let library: [OverheadBenchmark] = [
        OverheadBenchmark("retry.success", OverheadConfiguration.bothCallers) {
            RetrySuccess(policy: RetryPolicy())
        },
        // The full path: a policy whose settings keep even a first-attempt success in the retry loop.
        OverheadBenchmark("retry.success.deadline", OverheadConfiguration.bothCallers) {
            RetryFullPathSuccess(policy: try RetryFullPathFixtures.deadline())
        },
        OverheadBenchmark("retry.success.not-idempotent", OverheadConfiguration.bothCallers) {
            RetryFullPathSuccess(policy: try RetryFullPathFixtures.notIdempotent())
        },
        OverheadBenchmark("retry.success.declared-not-idempotent", OverheadConfiguration.bothCallers) {
            RetryDeclaredNotIdempotentSuccess(policy: RetryPolicy())
        },
        OverheadBenchmark("retry.success.observer", OverheadConfiguration.bothCallers) {
            RetryFullPathSuccess(policy: try RetryFullPathFixtures.observed())
        },
        OverheadBenchmark("pipeline.retry-deadline.success", OverheadConfiguration.bothCallers) {
            RetryDeadlinePipelineSuccess(pipeline: try RetryFullPathFixtures.deadlinePipeline())
        },
    ]

    /// The comparators, written in the benchmark target: the seed design, a hand-written tutorial design
    /// (state behind a serial `DispatchQueue`, retry as a plain loop) and a naive
    /// actor that runs every call.
    static let comparators: [OverheadBenchmark] = [
        OverheadBenchmark("seed-design.retry.success", OverheadConfiguration.bothCallers) {
            SeedDesignRetrySuccess()
        },
        OverheadBenchmark(
            "seed-design.breaker.success", OverheadConfiguration.bothCallers + OverheadConfiguration.contention
        ) {
            SeedDesignBreakerSuccess()
        },
        OverheadBenchmark("seed-design.retry+breaker.success", OverheadConfiguration.bothCallers) {
            SeedDesignRetryAroundBreakerSuccess()
        },
        OverheadBenchmark("seed-design.breaker.rejection", OverheadConfiguration.bothCallers) {
            SeedDesignBreakerRejection()
        },
        OverheadBenchmark("actor-per-call.retry.success", OverheadConfiguration.bothCallers) {
            ActorPerCallRetrySuccess()
        },
        OverheadBenchmark(
            "actor-per-call.breaker.success", OverheadConfiguration.bothCallers + OverheadConfiguration.contention
        ) {
            ActorPerCallBreakerSuccess()
        },
        OverheadBenchmark("actor-per-call.retry+breaker.success", OverheadConfiguration.bothCallers) {
            ActorPerCallRetryAroundBreakerSuccess()
        },
        OverheadBenchmark("actor-per-call.breaker.rejection", OverheadConfiguration.bothCallers) {
            await ActorPerCallBreakerRejection.make()
        },
    ]
}
