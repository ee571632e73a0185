import Resilience
import ResilienceTesting
import Testing

/// Counts calls to a fake service and answers from a script.
final class ScriptedService: Sendable {
    private let state: Lock<(calls: Int, script: [(any Error)?])>

    /// `script[n]` is the error call n throws, or `nil` for success; calls past the end use the last entry.
    init(_ script: [(any Error)?]) {
        self.state = Lock((0, script))
    }

    var calls: Int { self.state.withLock { $0.calls } }

    func call() throws -> String {
        let failure = self.state.withLock { state -> (any Error)? in
            let index = min(state.calls, state.script.count - 1)
            state.calls += 1
            return state.script[index]
        }
        if let failure { throw failure }
        return "ok"
    }
}

/// Both nestings of ``RetryPolicy`` and ``CircuitBreaker``, as documented on ``CircuitBreaker``.
@Suite(.timeLimit(.minutes(5)))
struct CircuitBreakerRetryPolicyTests {
    @Test func retryAroundBreakerWaitsOutTheOpenTimeAndThenSucceeds() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(5)), clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(100)), jitter: .none, clock: clock)
        let service = ScriptedService([HTTPFailure(status: 503), nil])

        let call = Task {
            try await policy.execute { try await breaker.execute { try service.call() } }
        }
        // Attempt 1 fails with 503 and trips the breaker; the policy backs off 100 ms.
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.milliseconds(100)])
        clock.advance(by: .milliseconds(100))
        // Attempt 2 is rejected with 4.9 s left; the policy honours that hint.
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.milliseconds(100), .milliseconds(4_900)])
        #expect(service.calls == 1)
        clock.advance(by: .milliseconds(4_900))
        // Attempt 3 is the half-open probe, and it succeeds.
        #expect(try await call.value == "ok")
        #expect(service.calls == 2)
        #expect(breaker.state == .closed)
    }

    @Test func retryAroundBreakerStopsWhenTheOpenTimeExceedsTheLongestHonouredHint() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(300)), clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 5, backoff: .constant(.milliseconds(100)), jitter: .none,
            maximumRetryAfter: .seconds(60), clock: clock)
        await breaker.fail()

        let outcome = await policy.outcome { try await breaker.execute { "unreachable" } }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(outcome.retryAfter == .seconds(300))
        #expect(throws: CircuitBreakerOpenError.self) { try outcome.get() }
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func retryAroundAnIsolatedBreakerStopsAtOnce() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "api", clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 5, clock: clock)
        breaker.isolate()
        let outcome = await policy.outcome { try await breaker.execute { "unreachable" } }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notRetryable)
    }

    @Test func breakerAroundRetryCountsOneFailurePerExhaustedCall() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(2), openDuration: .fixed(.seconds(30)), clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(100)), jitter: .none, clock: clock)
        let service = ScriptedService([HTTPFailure(status: 503)])

        for expectedCalls in [3, 6] {
            let call = Task {
                try await breaker.execute { try await policy.execute { try service.call() } }
            }
            for _ in 0..<2 {
                await clock.waitForSleepers(count: 1)
                clock.advance(by: .milliseconds(100))
            }
            await #expect(throws: HTTPFailure.self) { try await call.value }
            #expect(service.calls == expectedCalls)
        }
        #expect(breaker.state == .open)

        // While open, a call costs no attempts at all.
        await #expect(throws: CircuitBreakerOpenError.self) {
            try await breaker.execute { try await policy.execute { try service.call() } }
        }
        #expect(service.calls == 6)
    }

    @Test func breakerAroundRetryCountsARetriedSuccessAsOneSuccess() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "api", tripRule: .consecutiveFailures(2), clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(100)), jitter: .none, clock: clock)
        await breaker.fail()
        let service = ScriptedService([HTTPFailure(status: 503), HTTPFailure(status: 503), nil])

        let call = Task {
            try await breaker.execute { try await policy.execute { try service.call() } }
        }
        for _ in 0..<2 {
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .milliseconds(100))
        }
        #expect(try await call.value == "ok")
        // Two failed attempts inside one successful call: the earlier run of failures is reset.
        #expect(breaker.snapshot().consecutiveFailures == 0)
    }

    @Test func breakerAroundRetryOpensOnA429sHintWithoutRetrying() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "api", tripRule: .consecutiveFailures(5), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
        let service = ScriptedService([HTTPFailure(status: 429, retryAfter: .seconds(5))])

        await #expect(throws: HTTPFailure.self) {
            try await breaker.execute { try await policy.execute { try service.call() } }
        }
        #expect(service.calls == 1)
        #expect(breaker.snapshot().remainingOpenTime == .seconds(5))
    }
}
