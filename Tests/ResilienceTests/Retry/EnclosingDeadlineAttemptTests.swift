import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(5)))
/// A time-limited attempt nested in a call whose deadline has already passed does not start.
struct EnclosingDeadlineAttemptTests {
    @Test func aNestedTimeLimitedAttemptDoesNotStartOnceTheEnclosingDeadlinePassed() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 1, deadline: .seconds(5), clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let ran = Counter()
        let innerOutcome = Lock<RetryOutcome<Int>?>(nil)
        _ = await outer.outcome { () async throws -> Int in
            clock.advance(by: .seconds(6))  // slow work before the nested call: the deadline passes
            let outcome = await inner.outcome(attemptTimeout: .seconds(2)) { () async throws -> Int in
                _ = ran.increment()
                try await clock.sleep(for: .seconds(100))
                return 1
            }
            innerOutcome.withLock { $0 = outcome }
            return try outcome.get()
        }
        let outcome = try #require(innerOutcome.withLock { $0 })
        #expect(ran.value == 0, "nothing was sent")
        #expect(outcome.stopReason == .deadlineExceeded)
        let error = try #require(outcome.result.failureValue as? LimiterRejectionError)
        #expect(error.reason == .noTimeLeft, "refused before it ran, not timed out")
        #expect(clock.sleepRequests.isEmpty, "no retry was scheduled past the deadline")
    }

    @Test func withTimeLeftTheNestedAttemptRunsWithinIt() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 1, deadline: .seconds(5), clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let value = try await outer.execute {
            clock.advance(by: .seconds(4))
            return try await inner.execute(attemptTimeout: .seconds(2)) { 7 }
        }
        #expect(value == 7)
    }

    /// However many attempts the nested policy allows, it stops at the passed deadline, not as
    /// out of attempts.
    @Test(arguments: [1, 3])
    func aNestedPolicyStopsAtThePassedDeadlineWhateverItsAttempts(attempts: Int) async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 1, deadline: .seconds(5), clock: clock)
        let inner = try RetryPolicy(
            maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let innerOutcome = Lock<RetryOutcome<Int>?>(nil)
        _ = await outer.outcome { () async throws -> Int in
            clock.advance(by: .seconds(6))
            let outcome = await inner.outcome(attemptTimeout: .seconds(2)) { () async throws -> Int in 1 }
            innerOutcome.withLock { $0 = outcome }
            return try outcome.get()
        }
        let outcome = try #require(innerOutcome.withLock { $0 })
        #expect(outcome.stopReason == .deadlineExceeded, "\(attempts) attempts: \(outcome.stopReason)")
        #expect(outcome.attempts == 0)
    }

    /// A breaker around the time-limited call does not count an attempt that never started.
    @Test func anAttemptThatNeverStartedIsNoFailureOfTheDependency() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(
            maximumAttempts: 1, deadline: .seconds(5), clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let inner = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 2))
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let runs = Counter()
        let outcome = await outer.outcome {
            // The caller's own work used up the outer call's time.
            clock.advance(by: .seconds(6))
            return try await breaker.execute {
                try await inner.execute(attemptTimeout: .seconds(1)) {
                    runs.increment()
                    return 1
                }
            }
        }
        #expect(runs.value == 0, "the attempt did not start")
        #expect((try? outcome.get()) == nil)
        let snapshot = breaker.snapshot()
        #expect(
            snapshot.consecutiveFailures == 0 && snapshot.state == .closed,
            "the breaker counted an attempt that never reached the dependency: \(snapshot.state), \(snapshot.consecutiveFailures) failures"
        )
    }

    /// A call declared not idempotent stops at the passed deadline too, and the layer around
    /// it does not read the attempt that never started as possibly sent.
    @Test(arguments: [Idempotency.idempotent, Idempotency.notIdempotent])
    func aPassedEnclosingDeadlineStopsTheCallAtThatDeadline(idempotency: Idempotency) async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(
            maximumAttempts: 1, deadline: .seconds(5), clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 2))
        let runs = Counter()
        let reasons = Lock<[RetryStopReason]>([])
        let outerOutcome = await outer.outcome { () async throws -> Int in
            clock.advance(by: .seconds(6))
            let outcome = await inner.outcome(attemptTimeout: .seconds(1), idempotency: idempotency) {
                runs.increment()
                return 1
            }
            reasons.withLock { $0.append(outcome.stopReason) }
            return try outcome.get()
        }
        #expect(runs.value == 0)
        #expect(reasons.withLock { $0 } == [.deadlineExceeded])
        #expect(
            outerOutcome.stopReason != .notIdempotent, "nothing was sent, yet the outer call reads it as possibly sent")
    }
}
