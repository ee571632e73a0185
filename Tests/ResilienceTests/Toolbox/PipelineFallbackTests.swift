import Resilience
import ResilienceTesting
import Testing

@Suite("Fallback as a pipeline stage")
struct PipelineFallbackTests {
    @Test func aFallbackStageAnswersInItsPlaceInTheDeclaredOrder() async throws {
        let log = Recorder<String>()
        let pipeline = ResiliencePipeline {
            RecordingStage(name: "outer", log: log)
            Fallback<Int> { context in
                log.record("fallback \(context.error)")
                return -1
            }
            RecordingStage(name: "inner", log: log)
        }
        let value = try await pipeline.execute { () async throws -> Int in
            log.record("operation")
            throw TransientError(id: 4)
        }
        #expect(value == -1)
        #expect(
            log.values == ["outer>", "inner>", "operation", "<inner", "fallback TransientError(id: 4)", "<outer"])
    }

    @Test func aFallbackStageLetsASuccessThroughUntouched() async throws {
        let used = Counter()
        let pipeline = try ResiliencePipeline {
            Fallback<Int> { _ in
                used.increment()
                return -1
            }
            try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        }
        #expect(try await pipeline.execute { 7 } == 7)
        #expect(used.value == 0)
    }

    @Test func aFallbackStageAnswersAnOpenBreakerWithoutRunningTheOperation() async throws {
        let breaker = try CircuitBreaker(name: "down", tripRule: .consecutiveFailures(1), clock: TestClock())
        _ = try? await breaker.execute { () async throws -> Int in throw TransientError() }
        let pipeline = ResiliencePipeline {
            Fallback<Int> { context in
                #expect(context.error is CircuitBreakerOpenError)
                return context.isRejection ? -1 : -2
            }
            breaker
        }
        let ran = Counter()
        let value = try await pipeline.execute { () async throws -> Int in
            ran.increment()
            return 1
        }
        #expect(value == -1)
        #expect(ran.value == 0)
    }

    @Test func aFallbackStageAnswersAFullConcurrencyLimiter() async throws {
        let limiter = try ConcurrencyLimiter(name: "uploads", limit: 1, clock: TestClock())
        let pipeline = ResiliencePipeline {
            Fallback<Int> { context in
                #expect((context.error as? LimiterRejectionError)?.reason == .queueFull)
                return context.isRejection ? -1 : -2
            }
            limiter
        }
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        #expect(try await pipeline.execute { 1 } == -1)
        gate.open()
        try await holder.value
        #expect(try await pipeline.execute { 1 } == 1)
    }

    @Test func aFallbackStageAnswersARateLimitersRefusalWithItsRetryAfterAtHand() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        let hints = Recorder<Duration?>()
        let pipeline = ResiliencePipeline {
            Fallback<Int> { context in
                hints.record(context.analysis.retryAfter)
                return context.isRejection ? -1 : -2
            }
            limiter
        }
        #expect(try await pipeline.execute { 1 } == 1)
        #expect(try await pipeline.execute { 2 } == -1)
        #expect(hints.values == [.seconds(1)])
        clock.advance(by: .seconds(1))
        #expect(try await pipeline.execute { 3 } == 3)
    }

    @Test func aFallbackStageNeverTurnsTheCallersCancellationIntoAValue() async throws {
        let used = Counter()
        let events = EventCounter()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 1, observer: events, clock: TestClock())
        let pipeline = ResiliencePipeline {
            Fallback<Int> { _ in
                used.increment()
                return -1
            }
            limiter
        }
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        let queued = Task { try await pipeline.execute { 1 } }
        await events.waitFor(.queued, count: 1)
        queued.cancel()
        await #expect(throws: CancellationError.self) { try await queued.value }
        #expect(used.value == 0)
        gate.open()
        try await holder.value
    }

    @Test func aFallbackStageNeverAnswersACancelledRetryWait() async throws {
        let clock = TestClock()
        let used = Counter()
        let pipeline = try ResiliencePipeline {
            Fallback<Int>.value(-1)
            try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(10)), jitter: .none, clock: clock)
        }
        let call = Task {
            try await pipeline.execute { () async throws -> Int in
                used.increment()
                throw TransientError()
            }
        }
        await clock.waitForSleepers(count: 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(used.value == 1)  // one attempt, then the cancelled wait, and no fallback value
    }

    @Test func aFallbackStageAnswersATimeoutInsideIt() async throws {
        let clock = TestClock()
        let pipeline = try ResiliencePipeline {
            Fallback<Int> { context in context.error is TimeoutError ? -1 : -2 }
            try Timeout(.seconds(1), clock: clock)
        }
        let call = Task {
            try await pipeline.execute { () async throws -> Int in
                try await clock.sleep(for: .seconds(10))
                return 1
            }
        }
        await clock.waitForSleepers(count: 2)  // the operation and the timer
        clock.advance(by: .seconds(1))
        #expect(try await call.value == -1)  // the library's limit, not the caller: answered
    }

    @Test func aFallbackForAnotherValueTypeLeavesTheFailureUnchanged() async throws {
        let used = Counter()
        let pipeline = ResiliencePipeline {
            Fallback<Int> { _ in
                used.increment()
                return -1
            }
        }
        await #expect(throws: TransientError(id: 9)) {
            try await pipeline.execute { () async throws -> String in throw TransientError(id: 9) }
        }
        #expect(used.value == 0)
        #expect(try await pipeline.execute { () async throws -> Int in throw TransientError() } == -1)
    }
}

@Suite("Inline pipeline isolation")
struct InlinePipelineIsolationTests {
    /// Every inline stage, in the order the benchmark's `pipeline.inline.success` row uses.
    static func inlinePipeline(clock: TestClock) throws -> ResiliencePipeline<
        NestedStrategies<
            Fallback<Int>,
            NestedStrategies<
                RetryPolicy,
                NestedStrategies<
                    CircuitBreaker,
                    NestedStrategies<ConcurrencyLimiter, NestedStrategies<RateLimiter, AdaptiveThrottle>>
                >
            >
        >
    > {
        try ResiliencePipeline {
            Fallback<Int>.value(-1)
            try RetryPolicy(maximumAttempts: 3, clock: clock)
            try CircuitBreaker(name: "inline", tripRule: .consecutiveFailures(5), clock: clock)
            try ConcurrencyLimiter(limit: 4, clock: clock)
            try RateLimiter(.tokenBucket(capacity: 10, tokensPerPeriod: 10, period: .seconds(1)), clock: clock)
            try AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        }
    }

    @Test @MainActor func aMainActorCallRunsTheOperationOnceWithoutLeavingTheMainActor() async throws {
        let pipeline = try Self.inlinePipeline(clock: TestClock())
        var log: [String] = []
        // Queued on the main actor before the call: it can run only if the call suspends.
        let other = Task { @MainActor in log.append("other job") }
        let value = try await pipeline.execute {
            MainActor.assertIsolated()
            log.append("operation")
            return 42
        }
        log.append("returned")
        #expect(value == 42)
        #expect(log == ["operation", "returned"])  // once, and nothing ran on the main actor in between
        await other.value
        #expect(log == ["operation", "returned", "other job"])
    }

    @Test func anActorsCallRunsTheOperationInTheActorsIsolation() async throws {
        actor Account {
            var balance = 0
            func deposit(through pipeline: ResiliencePipeline<some ResilienceStrategy>) async throws -> Int {
                try await pipeline.execute {
                    self.assertIsolated()
                    self.balance += 10  // the actor's own state, without a hop
                    return self.balance
                }
            }
        }
        let pipeline = try InlinePipelineIsolationTests.inlinePipeline(clock: TestClock())
        let account = Account()
        #expect(try await account.deposit(through: pipeline) == 10)
        #expect(try await account.deposit(through: pipeline) == 20)
    }
}
