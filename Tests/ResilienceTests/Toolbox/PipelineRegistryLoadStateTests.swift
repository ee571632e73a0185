import Foundation
import Resilience
import ResilienceTesting
import Testing

/// What a pipeline registry keeps at its bound when a stage holds a ``RetryBudget`` or an
/// ``AdaptiveThrottle``: one that is the key's own and holds state (tokens spent, a rejection
/// probability above zero) keeps its pipeline, since a fresh one would let the key's clients
/// retry or send at full rate into the overload; one that other keys' pipelines share keeps
/// nothing, since forgetting one of them loses nothing of it.
@Suite(.timeLimit(.minutes(5))) struct PipelineRegistryLoadStateTests {
    struct ServerDown: Error {}

    /// A breaker that one failure opens for a minute.
    static func tripAtOnce() -> CircuitBreakerConfiguration {
        try! CircuitBreakerConfiguration(tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(60)))
    }

    /// Runs a call for `host` that fails every attempt with a refused connection, counting
    /// each attempt in `attempts`.
    static func failingCall<Strategies>(
        _ registry: ResiliencePipelineRegistry<String, Strategies>, _ host: String, attempts: Counter? = nil
    ) async {
        _ = await Result {
            try await registry.pipeline(for: host).execute { () async throws -> Int in
                attempts?.increment()
                throw URLError(.cannotConnectToHost)
            }
        }
    }

    /// Host a's budget of four tokens allows a retry while more than two remain: its first
    /// failing call makes two attempts and leaves two tokens, so its next one makes one.
    /// Other hosts looked up at the bound must not hand it a fresh budget, on which it would
    /// be retried into the outage again.
    @Test func aPipelineWhoseOwnRetryBudgetIsSpentIsNotForgotten() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, RetryPolicy>(maximumCount: 2) { _ in
            ResiliencePipeline {
                try! RetryPolicy(
                    maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
                    budget: try! RetryBudget(maximumTokens: 4, tokenRatio: 0.1), clock: clock)
            }
        }
        let attemptsOnA = Counter()
        await Self.failingCall(registry, "a", attempts: attemptsOnA)
        #expect(attemptsOnA.value == 2)
        for host in ["b", "c", "d"] { _ = registry.pipeline(for: host) }  // from "c" on, one goes each time
        await Self.failingCall(registry, "a", attempts: attemptsOnA)
        #expect(attemptsOnA.value == 3, "host a's spent budget was forgotten: its next call was retried again")
        #expect(registry.count == 2)
    }

    /// A budget that successes have filled again holds nothing a fresh one lacks: its pipeline
    /// goes least recently used first again.
    @Test func aPipelineWhoseOwnRetryBudgetIsFullAgainIsForgotten() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, RetryPolicy>(maximumCount: 2) { _ in
            ResiliencePipeline {
                try! RetryPolicy(
                    maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
                    budget: try! RetryBudget(maximumTokens: 4, tokenRatio: 1), clock: clock)
            }
        }
        await Self.failingCall(registry, "a")
        for _ in 0..<2 { _ = try await registry.pipeline(for: "a").execute { 1 } }
        #expect(registry.pipeline(for: "a").strategies.budget?.tokens == 4)
        _ = registry.pipeline(for: "b")
        _ = registry.pipeline(for: "c")
        #expect(registry.existingPipeline(for: "a") == nil, "the least recently used pipeline, idle, was kept")
        #expect(registry.existingPipeline(for: "b") != nil)
    }

    /// A budget every key shares (the recommended use) keeps no pipeline: the registry still
    /// prefers to keep the pipeline whose breaker is open over a healthy one that happens to
    /// hold the same, spent budget.
    @Test func aSharedRetryBudgetKeepsNoPipelineAndAnOpenBreakerIsStillKeptFirst() async throws {
        let clock = TestClock()
        let shared = try RetryBudget(maximumTokens: 4, tokenRatio: 0.1)
        // The breaker outside the policy, so that the policy never waits out its open time.
        let registry = try ResiliencePipelineRegistry<String, NestedStrategies<CircuitBreaker, RetryPolicy>>(
            maximumCount: 2
        ) { host in
            ResiliencePipeline {
                CircuitBreaker(name: host, configuration: Self.tripAtOnce(), clock: clock)
                try! RetryPolicy(
                    maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, budget: shared, clock: clock)
            }
        }
        await Self.failingCall(registry, "a")
        #expect(registry.pipeline(for: "a").strategies.outer.state == .open)
        _ = try await registry.pipeline(for: "b").execute { 1 }  // healthy, closed breaker, least recently used next
        #expect(shared.tokens < shared.maximumTokens)
        _ = registry.pipeline(for: "c")
        #expect(registry.existingPipeline(for: "a") != nil, "the pipeline whose breaker is open was forgotten")
        #expect(registry.existingPipeline(for: "b") == nil, "a shared budget kept a healthy pipeline")
        #expect(registry.count == 2)
    }

    /// A budget that only the forgotten pipeline and the one being added hold is not the
    /// forgotten one's own: the new pipeline keeps it. Here "b" has no budget and "a" and
    /// "c" share one; adding "c" forgets "a", the least recently used.
    @Test func aBudgetThePipelineBeingAddedSharesIsNotTheForgottenOnesOwn() async throws {
        let clock = TestClock()
        let shared = try RetryBudget(maximumTokens: 4, tokenRatio: 0.1)
        let registry = try ResiliencePipelineRegistry<String, RetryPolicy>(maximumCount: 2) { host in
            ResiliencePipeline {
                try! RetryPolicy(
                    maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, budget: host == "b" ? nil : shared,
                    clock: clock)
            }
        }
        await Self.failingCall(registry, "a")
        #expect(shared.tokens < shared.maximumTokens)
        _ = registry.pipeline(for: "b")
        _ = registry.pipeline(for: "c")
        #expect(registry.existingPipeline(for: "a") == nil, "a budget shared with the new pipeline kept the old one")
        #expect(registry.existingPipeline(for: "b") != nil)
    }

    /// Host a's own throttle has seen its server refuse every request, so it rejects most of a's
    /// calls locally; other hosts looked up at the bound must not hand a a fresh throttle that
    /// lets every call through to the server again.
    @Test func aPipelineWhoseOwnThrottleIsRejectingIsNotForgotten() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, AdaptiveThrottle>(maximumCount: 2) { _ in
            ResiliencePipeline { try! AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 7)) }
        }
        for _ in 0..<3 { await Self.failingCall(registry, "a") }
        let throttleOfA = registry.pipeline(for: "a").strategies
        #expect(throttleOfA.rejectionProbability > 0)
        for host in ["b", "c", "d"] { _ = registry.pipeline(for: host) }
        #expect(registry.existingPipeline(for: "a")?.strategies === throttleOfA, "host a got a fresh throttle")
        #expect(registry.count == 2)
    }

    /// Once the window has passed with nothing failing, a throttle rejects nothing: its
    /// pipeline goes least recently used first again.
    @Test func aPipelineWhoseOwnThrottleHasRecoveredIsForgotten() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, AdaptiveThrottle>(maximumCount: 2) { _ in
            ResiliencePipeline { try! AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 7)) }
        }
        await Self.failingCall(registry, "a")
        clock.advance(by: .seconds(130))
        #expect(registry.pipeline(for: "a").strategies.rejectionProbability == 0)
        _ = registry.pipeline(for: "b")
        _ = registry.pipeline(for: "c")
        #expect(registry.existingPipeline(for: "a") == nil, "the least recently used pipeline, recovered, was kept")
        #expect(registry.existingPipeline(for: "b") != nil)
    }

    /// One throttle given to two stages of one pipeline (its policy and its breaker, as the
    /// throttle's documentation suggests) is still that key's own.
    @Test func aThrottleTwoStagesOfOnePipelineShareIsStillTheKeysOwn() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, NestedStrategies<RetryPolicy, CircuitBreaker>>(
            maximumCount: 2
        ) { host in
            let throttle = try! AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 7))
            return ResiliencePipeline {
                try! RetryPolicy(maximumAttempts: 1, throttle: throttle, clock: clock)
                CircuitBreaker(name: host, configuration: .default, throttle: throttle, clock: clock)
            }
        }
        await Self.failingCall(registry, "a")
        let pipelineOfA = registry.pipeline(for: "a")
        #expect(pipelineOfA.strategies.inner.state == .closed)
        let throttleOfA = try #require(pipelineOfA.strategies.outer.throttle)
        #expect(throttleOfA.rejectionProbability > 0)
        for host in ["b", "c", "d"] { _ = registry.pipeline(for: host) }
        #expect(
            registry.existingPipeline(for: "a")?.strategies.outer.throttle === throttleOfA,
            "host a got a fresh throttle")
    }

    /// A throttle every key shares keeps no pipeline, as a shared budget keeps none.
    @Test func aSharedThrottleKeepsNoPipelineAndAnOpenBreakerIsStillKeptFirst() async throws {
        let clock = TestClock()
        let shared = try AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 7))
        let registry = try ResiliencePipelineRegistry<String, NestedStrategies<AdaptiveThrottle, CircuitBreaker>>(
            maximumCount: 2
        ) { host in
            ResiliencePipeline {
                shared
                CircuitBreaker(name: host, configuration: Self.tripAtOnce(), clock: clock)
            }
        }
        await Self.failingCall(registry, "a")
        #expect(registry.pipeline(for: "a").strategies.inner.state == .open)
        _ = await Result { try await registry.pipeline(for: "b").execute { 1 } }  // the throttle may reject it
        #expect(shared.rejectionProbability > 0)
        _ = registry.pipeline(for: "c")
        #expect(registry.existingPipeline(for: "a") != nil, "the pipeline whose breaker is open was forgotten")
        #expect(registry.existingPipeline(for: "b") == nil, "a shared throttle kept a healthy pipeline")
    }

    /// A hedging stage's budget of the key's own counts as a retry policy's does.
    @Test func aPipelineWhoseOwnHedgingBudgetIsSpentIsNotForgotten() async throws {
        let clock = TestClock()
        let registry = try ResiliencePipelineRegistry<String, Hedging>(maximumCount: 2) { _ in
            ResiliencePipeline {
                try! Hedging(delay: .fixed(.seconds(1)), budget: try! RetryBudget(maximumTokens: 4), clock: clock)
            }
        }
        let budgetOfA = try #require(registry.pipeline(for: "a").strategies.budget)
        budgetOfA.recordFailure()  // as a hedge that failed would
        for host in ["b", "c", "d"] { _ = registry.pipeline(for: host) }
        #expect(registry.existingPipeline(for: "a")?.strategies.budget === budgetOfA, "host a got a fresh budget")
    }
}
