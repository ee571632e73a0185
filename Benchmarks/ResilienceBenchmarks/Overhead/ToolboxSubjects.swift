import Resilience

/// The strategies the toolbox rows measure, built as a user would build them, with
/// limits no benchmark loop reaches, so every call takes the success path.
enum ToolboxFixtures {
    static func timeout() throws -> Timeout { try Timeout(.seconds(3_600)) }
    static func attemptTimeoutPolicy() -> RetryPolicy { RetryPolicy() }
    static func bulkhead() throws -> ConcurrencyLimiter { try ConcurrencyLimiter(limit: 1_000_000) }
    static func rateLimiter() throws -> RateLimiter {
        try RateLimiter(
            .tokenBucket(capacity: 1_000_000_000, tokensPerPeriod: 1_000_000_000, period: .seconds(1)))
    }
    /// A ``RateLimiterRegistry`` keyed by host, holding 100 hosts with the `rateLimiter()` bucket.
    static func rateLimiterRegistry() throws -> RateLimiterRegistry<String> {
        let registry = try RateLimiterRegistry<String>(
            name: "hosts",
            algorithm: .tokenBucket(capacity: 1_000_000_000, tokensPerPeriod: 1_000_000_000, period: .seconds(1)))
        for index in 0..<100 {
            _ = registry.limiter(for: "host-\(index).example.com")
        }
        return registry
    }
    static func hedging() throws -> Hedging { try Hedging(delay: .fixed(.seconds(3_600))) }
    static func standardPipeline() throws -> ResiliencePipeline<StandardHTTPStrategies> {
        try ResiliencePipeline.standardHTTP(name: "benchmark")
    }
    static func inlinePipeline() throws -> ResiliencePipeline<InlineStrategies> {
        try ResiliencePipeline {
            Fallback<Int>.value(0)
            try RetryPolicy(maximumAttempts: 3)
            CircuitBreaker(name: "benchmark")
            try bulkhead()
            try rateLimiter()
        }
    }
}

/// The stages of `pipeline.inline.success`, outermost first: every strategy that runs the
/// operation inline, and no timeout.
typealias InlineStrategies = NestedStrategies<
    Fallback<Int>,
    NestedStrategies<RetryPolicy, NestedStrategies<CircuitBreaker, NestedStrategies<ConcurrencyLimiter, RateLimiter>>>
>

/// `taskgroup.child`: the operation run in one child task of a task group, the least a
/// strategy that watches a clock while the operation runs can cost.
struct TaskGroupChild: OverheadSubject {
    func call(_ input: Int) async -> Int {
        await withTaskGroup(of: Int.self) { group in
            group.addTask { (try? await Workload.operation(input)) ?? input }
            return await group.next() ?? input
        }
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        await withTaskGroup(of: Int.self) { group in
            group.addTask { (try? await Workload.operation(input)) ?? input }
            return await group.next() ?? input
        }
    }
}

/// `fallback.success`: a ``Fallback`` around an operation that succeeds.
struct FallbackSuccess: OverheadSubject {
    let fallback = Fallback<Int>.value(0)

    func call(_ input: Int) async -> Int {
        (try? await self.fallback.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.fallback.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `timeout.success`: a ``Timeout`` that never fires.
struct TimeoutSuccess: OverheadSubject {
    let timeout: Timeout

    func call(_ input: Int) async -> Int {
        (try? await self.timeout.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.timeout.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `retry.attempt-timeout.success`: a default ``RetryPolicy``'s `execute(attemptTimeout:)` with a
/// one-hour limit, whose first attempt succeeds.
struct AttemptTimeoutSuccess: OverheadSubject {
    let policy: RetryPolicy

    func call(_ input: Int) async -> Int {
        (try? await self.policy.execute(attemptTimeout: .seconds(3_600)) { try await Workload.operation(input) })
            ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.policy.execute(attemptTimeout: .seconds(3_600)) { try await Workload.operation(input) })
            ?? input
    }
}

/// `bulkhead.success`: a ``ConcurrencyLimiter`` with a free slot.
struct BulkheadSuccess: OverheadSubject {
    let limiter: ConcurrencyLimiter

    func call(_ input: Int) async -> Int {
        (try? await self.limiter.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.limiter.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `ratelimiter.success`: a token bucket ``RateLimiter`` with a permit free.
struct RateLimiterSuccess: OverheadSubject {
    let limiter: RateLimiter

    func call(_ input: Int) async -> Int {
        (try? await self.limiter.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.limiter.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `ratelimiter.registry.success`: looking a host's limiter up in a ``RateLimiterRegistry``
/// keyed by `String`, then a call through it, as a client that does not keep the limiter would.
///
/// The host is the same value on every call, so the registry finds it among the keys it
/// remembers bit for bit, as `registry.success` does for breakers.
struct RateLimiterRegistrySuccess: OverheadSubject {
    let registry: RateLimiterRegistry<String>
    let host = "host-42.example.com"

    func call(_ input: Int) async -> Int {
        (try? await self.registry.limiter(for: self.host).execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.registry.limiter(for: self.host).execute { try await Workload.operation(input) }) ?? input
    }
}

/// `hedging.success`: ``Hedging`` whose delay never passes, so no hedge fires.
struct HedgingSuccess: OverheadSubject {
    let hedging: Hedging

    func call(_ input: Int) async -> Int {
        (try? await self.hedging.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.hedging.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `pipeline.standard.success`: the standard HTTP pipeline (limiter, total timeout, retry,
/// breaker, attempt timeout) around an operation that succeeds.
struct StandardPipelineSuccess: OverheadSubject {
    let pipeline: ResiliencePipeline<StandardHTTPStrategies>

    func call(_ input: Int) async -> Int {
        (try? await self.pipeline.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.pipeline.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `pipeline.inline.success`: fallback, retry policy, breaker, concurrency limiter and
/// token-bucket rate limiter, outermost first, around an operation that succeeds; no timeout.
struct InlinePipelineSuccess: OverheadSubject {
    let pipeline: ResiliencePipeline<InlineStrategies>

    func call(_ input: Int) async -> Int {
        (try? await self.pipeline.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.pipeline.execute { try await Workload.operation(input) }) ?? input
    }
}
