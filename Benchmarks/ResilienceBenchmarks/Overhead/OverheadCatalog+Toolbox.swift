extension OverheadCatalog {
    /// The toolbox rows: the success path of each strategy, of the standard HTTP
    /// pipeline and of a pipeline of every inline strategy, from both callers, and the `taskgroup.child` reference. The subjects
    /// are in `ToolboxSubjects.swift`.
    static let toolbox: [OverheadBenchmark] = [
        OverheadBenchmark("taskgroup.child", OverheadConfiguration.bothCallers) { TaskGroupChild() },
        OverheadBenchmark("fallback.success", OverheadConfiguration.bothCallers) { FallbackSuccess() },
        Self.timeoutSuccess,
        OverheadBenchmark("retry.attempt-timeout.success", OverheadConfiguration.bothCallers) {
            AttemptTimeoutSuccess(policy: ToolboxFixtures.attemptTimeoutPolicy())
        },
        OverheadBenchmark("bulkhead.success", OverheadConfiguration.bothCallers) {
            BulkheadSuccess(limiter: try ToolboxFixtures.bulkhead())
        },
        OverheadBenchmark("ratelimiter.success", OverheadConfiguration.bothCallers) {
            RateLimiterSuccess(limiter: try ToolboxFixtures.rateLimiter())
        },
        OverheadBenchmark("ratelimiter.registry.success", OverheadConfiguration.bothCallers) {
            RateLimiterRegistrySuccess(registry: try ToolboxFixtures.rateLimiterRegistry())
        },
        OverheadBenchmark("hedging.success", OverheadConfiguration.bothCallers) {
            HedgingSuccess(hedging: try ToolboxFixtures.hedging())
        },
        // Its goal is stated against `timeout.success`, which is timed beside it in every repetition.
        OverheadBenchmark("pipeline.standard.success", OverheadConfiguration.bothCallers) {
            StandardPipelineSuccess(pipeline: try ToolboxFixtures.standardPipeline())
        }.timed(against: Self.timeoutSuccess),
        OverheadBenchmark("pipeline.inline.success", OverheadConfiguration.bothCallers) {
            InlinePipelineSuccess(pipeline: try ToolboxFixtures.inlinePipeline())
        },
    ]

    /// `timeout.success`: a row of its own, and the reference timed beside `pipeline.standard.success`.
    static let timeoutSuccess = OverheadBenchmark("timeout.success", OverheadConfiguration.bothCallers) {
        TimeoutSuccess(timeout: try ToolboxFixtures.timeout())
    }
}
