import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite("RetryBudget")
struct RetryBudgetTests {
    @Test func startsFullAndAllowsRetriesWhileMoreThanHalfRemains() throws {
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        #expect(budget.tokens == 10)
        for _ in 0..<4 { budget.recordFailure() }
        #expect(budget.tokens == 6)
        #expect(budget.allowsRetry)
        budget.recordFailure()
        #expect(budget.tokens == 5)
        #expect(!budget.allowsRetry, "exactly half is not more than half")
    }

    @Test func successesRefundTheRatioUpToTheMaximum() throws {
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        for _ in 0..<5 { budget.recordFailure() }
        budget.recordSuccess()
        #expect(budget.tokens == 5.1)
        #expect(budget.allowsRetry)
        for _ in 0..<100 { budget.recordSuccess() }
        #expect(budget.tokens == 10)
    }

    @Test func tokensNeverGoBelowZero() throws {
        let budget = try RetryBudget(maximumTokens: 3, tokenRatio: 0.5)
        for _ in 0..<10 { budget.recordFailure() }
        #expect(budget.tokens == 0)
        budget.recordSuccess()
        #expect(budget.tokens == 0.5)
    }

    /// A breaker's rejection put no load on the dependency, so its retry costs no token, in
    /// whatever shape it reaches the policy; the same shapes around a server's failure cost one.
    @Test(arguments: LibraryErrorShape.allCases)
    func aBreakersRejectionAnywhereInTheChainCostsNoToken(shape: LibraryErrorShape) async throws {
        let rejection = CircuitBreakerOpenError(breakerName: "api", state: .open, retryAfter: .milliseconds(10))
        #expect(try await Self.tokensLeft(afterRetrying: shape.wrap(rejection)) == 10, "\(shape)")
        #expect(
            try await Self.tokensLeft(afterRetrying: shape.wrap(HTTPResponseError(statusCode: 503))) < 10, "\(shape)")
    }

    /// The tokens left in a fresh budget of 10 after a policy of two attempts failed twice with `error`.
    private static func tokensLeft(afterRetrying error: any Error) async throws -> Double {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.milliseconds(10)), jitter: .none, budget: budget, clock: clock)
        let attempts = Counter()
        _ = await driveThroughEveryWait(clock) {
            await policy.outcome { () async throws -> Int in
                _ = attempts.increment()
                throw error
            }
        }
        #expect(attempts.value == 2, "\(error) is retried")
        return budget.tokens
    }

    @Test func concurrentUpdatesKeepTheBucketInRange() async throws {
        let budget = try RetryBudget(maximumTokens: 50, tokenRatio: 0.25)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<64 {
                group.addTask {
                    for step in 0..<500 {
                        if (task + step) % 3 == 0 { budget.recordFailure() } else { budget.recordSuccess() }
                        let tokens = budget.tokens
                        #expect(tokens >= 0 && tokens <= 50)
                    }
                }
            }
        }
        #expect(budget.tokens >= 0 && budget.tokens <= 50)
    }
}
