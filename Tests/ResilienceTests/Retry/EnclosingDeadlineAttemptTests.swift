import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
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
        let error = try #require(outcome.result.failureValue as? AttemptTimeoutError)
        #expect(error.timeout == .zero, "no negative limit")
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
}
