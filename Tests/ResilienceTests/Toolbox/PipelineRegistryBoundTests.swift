import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(5))) struct PipelineRegistryBoundTests {
    struct ServerDown: Error {}

    /// At most two pipelines of one breaker each, which one failure opens for a minute.
    static func breakerPipelines(clock: TestClock) throws -> ResiliencePipelineRegistry<String, CircuitBreaker> {
        try ResiliencePipelineRegistry<String, CircuitBreaker>(maximumCount: 2) { host in
            ResiliencePipeline {
                CircuitBreaker(
                    name: host,
                    configuration: try! CircuitBreakerConfiguration(
                        tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(60))),
                    clock: clock)
            }
        }
    }

    /// A host whose breaker is open is not called again just because other hosts were looked up:
    /// the breaker registry keeps open breakers at its bound; the pipeline registry should too.
    @Test func aPipelineWhoseBreakerIsOpenIsNotForgottenBeforeClosedOnes() async throws {
        let clock = TestClock()
        let registry = try Self.breakerPipelines(clock: clock)
        let callsToA = Counter()
        await #expect(throws: ServerDown.self) {
            try await registry.pipeline(for: "a").execute { () async throws -> Int in
                callsToA.increment()
                throw ServerDown()
            }
        }
        #expect(registry.pipeline(for: "a").strategies.state == .open)
        _ = try await registry.pipeline(for: "b").execute { 1 }  // healthy host, closed breaker
        _ = try await registry.pipeline(for: "c").execute { 1 }  // a third host: one pipeline must go
        await #expect(throws: CircuitBreakerOpenError.self) {
            try await registry.pipeline(for: "a").execute { () async throws -> Int in
                callsToA.increment()
                throw ServerDown()
            }
        }
        #expect(callsToA.value == 1, "the host that is down was called again within its open time")
    }

    /// The same sequence through a `CircuitBreakerRegistry`, which keeps the open breaker.
    @Test func theBreakerRegistryKeepsTheOpenBreaker() async throws {
        let clock = TestClock()
        let registry = try CircuitBreakerRegistry<String>(maximumCount: 2) { host in
            CircuitBreaker(
                name: host,
                configuration: try! CircuitBreakerConfiguration(
                    tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(60))),
                clock: clock)
        }
        await #expect(throws: ServerDown.self) {
            try await registry.breaker(for: "a").execute { () async throws -> Int in throw ServerDown() }
        }
        _ = try await registry.breaker(for: "b").execute { 1 }
        _ = try await registry.breaker(for: "c").execute { 1 }
        #expect(registry.breaker(for: "a").state == .open)
    }

    /// The standard HTTP preset's breaker sits deep in its nesting; the registry finds it there.
    @Test func aStandardHTTPPipelineWhoseBreakerIsOpenIsKept() async throws {
        let clock = TestClock()
        let tripAtOnce = try CircuitBreakerConfiguration(
            tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(60)))
        let registry = try ResiliencePipelineRegistry<String, StandardHTTPStrategies>(maximumCount: 2) { host in
            try! ResiliencePipeline.standardHTTP(
                name: host, maximumAttempts: 1, breakerConfiguration: tripAtOnce, clock: clock)
        }
        let down = registry.pipeline(for: "down")
        await #expect(throws: ServerDown.self) {
            try await down.execute { () async throws -> Int in throw ServerDown() }
        }
        _ = try await registry.pipeline(for: "b").execute { 1 }
        _ = try await registry.pipeline(for: "c").execute { 1 }
        #expect(registry.existingPipeline(for: "down") != nil, "the failing host's pipeline was forgotten")
        #expect(registry.existingPipeline(for: "b") == nil, "the closed pipeline used least recently goes")
        #expect(registry.count == 2)
    }

    /// When every pipeline held has a breaker open, the least recently used of them goes:
    /// the bound holds.
    @Test func whenEveryPipelineHasABreakerOpenTheLeastRecentlyUsedGoes() async throws {
        let clock = TestClock()
        let registry = try Self.breakerPipelines(clock: clock)
        for host in ["a", "b"] {
            await #expect(throws: ServerDown.self) {
                try await registry.pipeline(for: host).execute { () async throws -> Int in throw ServerDown() }
            }
        }
        _ = registry.pipeline(for: "c")
        #expect(registry.count == 2)
        #expect(registry.existingPipeline(for: "a") == nil)
        #expect(registry.existingPipeline(for: "b") != nil)
    }

    /// Pipelines without a breaker are forgotten least recently used first, as before.
    @Test func pipelinesWithoutABreakerAreForgottenLeastRecentlyUsedFirst() async throws {
        let registry = try ResiliencePipelineRegistry<Int, Timeout>(maximumCount: 3) { _ in
            ResiliencePipeline { try! Timeout(.seconds(5), clock: TestClock()) }
        }
        for key in [1, 2, 3] { _ = registry.pipeline(for: key) }
        _ = registry.pipeline(for: 1)
        _ = registry.pipeline(for: 4)
        #expect(registry.existingPipeline(for: 2) == nil)
        #expect(registry.existingPipeline(for: 1) != nil)
        #expect(registry.count == 3)
    }

    /// A key's bulkhead of one slot, no queue: while a call for "a" holds the slot, other keys
    /// coming and going at the bound must not hand "a" a fresh, empty limiter.
    @Test func aPipelineWhoseBulkheadHoldsACallIsNotForgotten() async throws {
        let registry = try ResiliencePipelineRegistry<String, ConcurrencyLimiter>(maximumCount: 2) { host in
            ResiliencePipeline { try! ConcurrencyLimiter(name: host, limit: 1) }
        }
        let gate = Gate()
        let running = HighWaterMark()
        let first = Task {
            try await registry.pipeline(for: "a").execute { () async throws -> Int in
                running.enter()
                await gate.wait()
                running.leave()
                return 1
            }
        }
        await gate.waitForWaiters(count: 1)
        for host in ["b", "c", "d"] {  // from "c" on, the bound lets one pipeline go each time
            _ = try await registry.pipeline(for: host).execute { 2 }
        }
        let second = await Result {
            try await registry.pipeline(for: "a").execute { () async throws -> Int in
                running.enter()
                running.leave()
                return 3
            }
        }
        gate.open()
        _ = try await first.value
        #expect(running.highest == 1, "two calls for host a ran at once through a limit of one")
        #expect(throws: LimiterRejectionError.self) { try second.get() }
        #expect(registry.count == 2)
    }

    /// Once its calls are done, a bulkhead holds nothing a fresh one lacks: its pipeline is
    /// forgotten least recently used first again.
    @Test func aPipelineWhoseBulkheadIsIdleAgainIsForgotten() async throws {
        let registry = try ResiliencePipelineRegistry<String, ConcurrencyLimiter>(maximumCount: 1) { host in
            ResiliencePipeline { try! ConcurrencyLimiter(name: host, limit: 1) }
        }
        _ = try await registry.pipeline(for: "a").execute { 1 }
        _ = registry.pipeline(for: "b")
        #expect(registry.existingPipeline(for: "a") == nil)
        #expect(registry.existingPipeline(for: "b") != nil)
    }

    /// A key that spent its only permit for a minute is not handed a fresh, full rate limiter
    /// because other keys pushed its pipeline out, as `RateLimiterRegistry` keeps such limiters.
    @Test func aPipelineWhoseRateLimiterSpentItsPermitsIsNotForgotten() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, RateLimiter>(maximumCount: 2) { host in
            ResiliencePipeline {
                try! RateLimiter(
                    .tokenBucket(capacity: 2, tokensPerPeriod: 2, period: .seconds(60)), name: host, clock: clock)
            }
        }
        for _ in 0..<2 { _ = try await registry.pipeline(for: "a").execute { 1 } }  // a's permits for a minute
        for host in ["b", "c", "d"] { _ = registry.pipeline(for: host) }  // from "c" on, one goes each time
        let again = await Result { try await registry.pipeline(for: "a").execute { 3 } }
        #expect(throws: LimiterRejectionError.self, "host a was admitted twice within one period") {
            try again.get()
        }
        #expect(registry.count == 2)
    }
}
