import Resilience
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
