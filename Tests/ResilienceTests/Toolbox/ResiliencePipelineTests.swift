import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A stage that records when the call enters and leaves it.
struct RecordingStage: ResilienceStrategy {
    let name: String
    let log: Recorder<String>

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        self.log.record("\(self.name)>")
        defer { self.log.record("<\(self.name)") }
        return try await operation.run()
    }
}

@Suite("Resilience pipeline")
struct ResiliencePipelineTests {
    @Test func stagesRunInTheDeclaredOrderOutermostFirst() async throws {
        let log = Recorder<String>()
        let pipeline = ResiliencePipeline {
            RecordingStage(name: "a", log: log)
            RecordingStage(name: "b", log: log)
            RecordingStage(name: "c", log: log)
        }
        let value = try await pipeline.execute {
            log.record("operation")
            return 1
        }
        #expect(value == 1)
        #expect(log.values == ["a>", "b>", "c>", "operation", "<c", "<b", "<a"])
    }

    @Test func retryAroundABreakerAroundAnAttemptTimeoutRetriesTimeOutsAndCountsThem() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "b", tripRule: .consecutiveFailures(5), clock: clock)
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
            breaker
            try Timeout(.seconds(1), name: "attempt", clock: clock)
        }
        let attempts = Counter()
        let call = Task {
            try await pipeline.execute { () async throws -> Int in
                let attempt = attempts.increment()
                if attempt < 3 { try await clock.sleep(for: .seconds(10)) }
                return attempt
            }
        }
        for _ in 0..<2 {
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(1))
        }
        #expect(try await call.value == 3)
        let snapshot = breaker.snapshot()
        #expect(snapshot.state == .closed)
        #expect(attempts.value == 3)
    }

    @Test func anOpenBreakerInsideARetryIsWaitedOutForItsRetryAfterThenProbed() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)), clock: clock)
        _ = try? await breaker.execute { () async throws -> Int in throw TransientError() }
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
            breaker
        }
        let call = Task { try await pipeline.execute { 1 } }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests.last == .seconds(30))  // the rejection's retry-after, honoured
        clock.advance(by: .seconds(30))
        #expect(try await call.value == 1)
    }

    @Test func aFallbackOutsideThePipelineAnswersItsRejection() async throws {
        let breaker = try CircuitBreaker(name: "b", tripRule: .consecutiveFailures(1), clock: TestClock())
        _ = try? await breaker.execute { () async throws -> Int in throw TransientError() }
        let pipeline = ResiliencePipeline { breaker }
        let fallback = Fallback<Int> { context in context.isRejection ? -1 : -2 }
        let value = try await fallback.execute {
            try await pipeline.execute(operation: { 1 })
        }
        #expect(value == -1)
    }

    @Test @MainActor func aMainActorCallersOperationRunsOnTheMainActor() async throws {
        let pipeline = try ResiliencePipeline {
            try ConcurrencyLimiter(limit: 2, clock: TestClock())
            try Timeout(.seconds(5), clock: TestClock())
        }
        let onMain = try await pipeline.execute {
            MainActor.assertIsolated()
            return true
        }
        #expect(onMain)
    }

    @Test func theStandardHTTPPresetNamesAnInvalidSetting() {
        #expect(rejectedSetting { _ = try ResiliencePipeline.standardHTTP(concurrencyLimit: 0) } == "concurrencyLimit")
        #expect(rejectedSetting { _ = try ResiliencePipeline.standardHTTP(totalTimeout: .zero) } == "totalTimeout")
        #expect(
            rejectedSetting { _ = try ResiliencePipeline.standardHTTP(attemptTimeout: .seconds(-1)) }
                == "attemptTimeout")
        #expect(rejectedSetting { _ = try ResiliencePipeline.standardHTTP(maximumAttempts: 0) } == "maximumAttempts")
        #expect(rejectedSetting { _ = try ResiliencePipeline.standardHTTP() } == nil)
    }

    /// With several invalid settings, the one named is the first in the parameters' order.
    @Test func theStandardHTTPPresetNamesTheFirstInvalidSettingInParameterOrder() {
        #expect(
            rejectedSetting {
                _ = try ResiliencePipeline.standardHTTP(maximumAttempts: 0, attemptTimeout: .zero)
            } == "maximumAttempts")
        #expect(
            rejectedSetting {
                _ = try ResiliencePipeline.standardHTTP(totalTimeout: .zero, maximumAttempts: 0)
            } == "totalTimeout")
        #expect(
            rejectedSetting {
                _ = try ResiliencePipeline.standardHTTP(concurrencyLimit: 0, totalTimeout: .zero)
            } == "concurrencyLimit")
    }

    /// An attempt allowed longer than the whole call could never use its time, as .NET's
    /// standard handler also refuses; an attempt allowed the whole call's time is accepted.
    @Test func theStandardHTTPPresetRefusesAnAttemptTimeoutLongerThanTheTotal() {
        #expect(
            rejectedSetting {
                _ = try ResiliencePipeline.standardHTTP(totalTimeout: .seconds(5), attemptTimeout: .seconds(10))
            } == "attemptTimeout")
        #expect(
            rejectedSetting {
                _ = try ResiliencePipeline.standardHTTP(totalTimeout: .seconds(10), attemptTimeout: .seconds(10))
            } == nil)
        let error = #expect(throws: ConfigurationError.self) {
            _ = try ResiliencePipeline.standardHTTP(totalTimeout: .seconds(5), attemptTimeout: .seconds(10))
        }
        #expect(error.map { "\($0)".contains("totalTimeout") } == true, "the message says what the limit is")
    }

    @Test func theStandardHTTPPresetHasTheDocumentedStagesInOrder() throws {
        let pipeline = try ResiliencePipeline.standardHTTP(name: "api")
        let stages = pipeline.strategies
        #expect(stages.outer.limit == 1_000)
        #expect(stages.inner.outer.duration == .seconds(30))
        #expect(stages.inner.inner.outer.maximumAttempts == 4)
        #expect(stages.inner.inner.inner.outer.name == "api.breaker")
        #expect(stages.inner.inner.inner.inner.duration == .seconds(10))
    }

    @Test func theRegistryGivesEachHostItsOwnPipelineWithinItsBound() throws {
        let registry = try ResiliencePipelineRegistry<String, StandardHTTPStrategies>(maximumCount: 2) { host in
            try! ResiliencePipeline.standardHTTP(name: host)
        }
        let a = registry.pipeline(for: "a")
        #expect(registry.pipeline(for: "a").strategies.inner.inner.inner.outer === a.strategies.inner.inner.inner.outer)
        _ = registry.pipeline(for: "b")
        _ = registry.pipeline(for: "c")
        #expect(registry.count == 2)
        #expect(registry.existingPipeline(for: "a") == nil)
        #expect(
            rejectedSetting {
                _ = try ResiliencePipelineRegistry<String, StandardHTTPStrategies>(maximumCount: 0) { _ in fatalError()
                }
            } == "maximumCount")
    }

    @Test func tenThousandCallsThroughALimitedPipelineNeverExceedTheLimit() async throws {
        let pipeline = try ResiliencePipeline {
            try ConcurrencyLimiter(limit: 16, queueLimit: 10_000, clock: TestClock())
            try Timeout(.seconds(60), clock: TestClock())
        }
        let inFlight = HighWaterMark()
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10_000 {
                group.addTask {
                    try await pipeline.execute {
                        inFlight.enter()
                        await Task.yield()
                        inFlight.leave()
                        return index
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(sum == (0..<10_000).reduce(0, +))
        #expect(inFlight.highest <= 16)
    }
}
