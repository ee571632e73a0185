import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A call that may not run twice sends a `POST` that succeeds, and its next step then fails in a
/// way that proves that step's own request never left (an open breaker, a host it could not
/// reach, a full bulkhead). The failure speaks for that step alone: the `POST` of the same attempt
/// reached the server, so the call, declared not idempotent, must not run the attempt again,
/// though the rules let a not-idempotent call retry a request that was never sent.
@Suite("A not-sent failure after a not-idempotent success is not retried", .timeLimit(.minutes(5)))
struct NotSentAfterNotIdempotentSuccessTests {
    /// The failure of the step after the `POST`, each proving its own request never left.
    enum NotSent: String, CaseIterable, Sendable {
        /// An open circuit breaker refuses the step.
        case breakerOpen
        /// The connection to the host could not be made.
        case cannotConnect
        /// A bulkhead's queue was full.
        case bulkheadFull
    }

    /// The call around the attempt, the one that may not run twice.
    enum Outer: String, CaseIterable, Sendable {
        /// A policy that retries everything, its call declared `.notIdempotent`.
        case declaredPolicy
        /// A policy with a deadline, undeclared, inside a `Timeout` declared `.notIdempotent`.
        case scopedPolicyInADeclaredTimeout
        /// A policy with a deadline, undeclared, whose classifier declares its calls not idempotent.
        case scopedPolicyWithANotIdempotentClassifier
        /// A pipeline whose retry stage retries everything, called with `.notIdempotent`.
        case declaredPipeline
        /// A plain policy around a `Timeout` declared `.notIdempotent`.
        case declaredTimeout
        /// A plain policy around a `Hedging` call declared `.notIdempotent`.
        case declaredHedging
        /// A plain policy around a pipeline with no retry stage, called with `.notIdempotent`.
        case declaredPipelineInAPlainPolicy
    }

    /// A classifier that retries everything the rules let it, and says its calls are not idempotent.
    struct NotIdempotentRetryEverything: RetryClassifier {
        var declaredIdempotency: Idempotency? { .notIdempotent }
        func decision(for error: any Error, context: RetryContext) -> RetryDecision? { .retry }
    }

    static func retryEverything(deadline: Duration? = nil, clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, deadline: deadline, clock: clock)
    }

    /// The attempt: a `POST` declared not idempotent through a policy of its own, which succeeds,
    /// then a step that fails with `failure`.
    static func attempt(
        _ failure: NotSent, clock: TestClock, sends: Counter
    ) -> @Sendable () async throws -> Int {
        {
            let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
            _ = try await inner.execute(idempotency: .notIdempotent) { () async throws -> Int in
                sends.increment()
                return 201
            }
            switch failure {
            case .breakerOpen:
                let breaker = try CircuitBreaker(name: "inventory", clock: clock)
                breaker.isolate()
                return try await breaker.execute { 1 }
            case .cannotConnect:
                throw URLError(.cannotConnectToHost)
            case .bulkheadFull:
                throw LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull)
            }
        }
    }

    /// The outcome of `body`.
    static func capture(_ body: () async throws -> Int) async -> Result<Int, any Error> {
        do {
            return .success(try await body())
        } catch {
            return .failure(error)
        }
    }

    /// Runs `attempt` under `outer`; returns the result and the stop reasons of the policy that
    /// would retry it.
    static func run(
        _ outer: Outer, clock: TestClock, _ attempt: @escaping @Sendable () async throws -> Int
    ) async throws -> (result: Result<Int, any Error>, stops: [RetryStopReason: Int]) {
        let result: Result<Int, any Error>
        let policy: RetryPolicy
        switch outer {
        case .declaredPolicy:
            policy = try Self.retryEverything(clock: clock)
            result = await policy.outcome(idempotency: .notIdempotent) { try await attempt() }.result
        case .scopedPolicyInADeclaredTimeout:
            policy = try Self.retryEverything(deadline: .seconds(3_600), clock: clock)
            let timeout = try Timeout(.seconds(3_600), clock: clock)
            result = await Self.capture {
                try await timeout.execute(idempotency: .notIdempotent) {
                    try await policy.execute { try await attempt() }
                }
            }
        case .scopedPolicyWithANotIdempotentClassifier:
            policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
                classifier: NotIdempotentRetryEverything(), deadline: .seconds(3_600), clock: clock)
            result = await policy.outcome { try await attempt() }.result
        case .declaredPipeline:
            policy = try Self.retryEverything(clock: clock)
            let pipeline = ResiliencePipeline { policy }
            result = await Self.capture {
                try await pipeline.execute(idempotency: .notIdempotent) { try await attempt() }
            }
        case .declaredTimeout:
            policy = try Self.retryEverything(clock: clock)
            let timeout = try Timeout(.seconds(3_600), clock: clock)
            result = await policy.outcome {
                try await timeout.execute(idempotency: .notIdempotent) { try await attempt() }
            }.result
        case .declaredHedging:
            policy = try Self.retryEverything(clock: clock)
            let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
            result = await policy.outcome {
                try await hedging.execute(idempotency: .notIdempotent) { try await attempt() }
            }.result
        case .declaredPipelineInAPlainPolicy:
            policy = try Self.retryEverything(clock: clock)
            let pipeline = ResiliencePipeline { try! CircuitBreaker(name: "orders", clock: clock) }
            result = await policy.outcome {
                try await pipeline.execute(idempotency: .notIdempotent) { try await attempt() }
            }.result
        }
        return (result, await policy.statistics.stopReasons)
    }

    /// The `POST` is sent once, and the policy that would have run the attempt again stops with
    /// `notIdempotent`, ending with the step's failure.
    @Test(arguments: Outer.allCases, NotSent.allCases)
    func theSucceededPostIsNotSentAgain(outer: Outer, failure: NotSent) async throws {
        let clock = TestClock()
        let sends = Counter()
        let (result, stops) = try await Self.run(outer, clock: clock, Self.attempt(failure, clock: clock, sends: sends))
        let context = "\(outer), \(failure): \(result), stops \(stops)"
        #expect(sends.value == 1, "sent \(sends.value) times: \(context)")
        #expect(stops == [.notIdempotent: 1], "\(context)")
        switch failure {
        case .breakerOpen: #expect(result.failureValue is CircuitBreakerOpenError, "\(context)")
        case .cannotConnect: #expect((result.failureValue as? URLError)?.code == .cannotConnectToHost, "\(context)")
        case .bulkheadFull: #expect(result.failureValue is LimiterRejectionError, "\(context)")
        }
    }

    /// The control: with no `POST` before it, a not-sent failure is retried under every outer call,
    /// as the rules allow for a request that never left.
    @Test(arguments: Outer.allCases)
    func aNotSentFailureAloneIsRetried(outer: Outer) async throws {
        let clock = TestClock()
        let tries = Counter()
        let (result, _) = try await Self.run(outer, clock: clock) {
            if tries.increment() < 3 { throw URLError(.cannotConnectToHost) }
            return 7
        }
        #expect(tries.value == 3, "\(outer): \(result)")
        #expect((try? result.get()) == 7, "\(outer): \(result)")
    }
}
