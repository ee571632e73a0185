import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A refresh that ``CredentialRecovery/replace(with:)`` overtook answers its waiting calls with
/// the newer credential, whatever the refresh itself did: its failure is not theirs to pay for.
@Suite(.timeLimit(.minutes(5)))
struct OvertakenRefreshChargeTests {
    /// Tokens left after a call whose refresh `replace(with:)` overtook, and that refresh then failed with `failure`.
    static func tokensLeft(after failure: any Error) async throws -> (tokens: Double, outcome: RetryOutcome<String>) {
        let clock = TestClock()
        let gate = Gate()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            _ = refreshes.increment()
            await gate.wait()
            throw failure
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock)
        let call = Task { await policy.outcome(recovering: recovery, operation: RefreshedTokenAPI.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        recovery.replace(with: "new")  // the person signed in again while the refresh ran
        gate.open()
        let outcome = await call.value
        #expect(refreshes.value == 1)
        return (budget.tokens, outcome)
    }

    @Test func anOvertakenRefreshThatFailsCostsItsWaitersNoToken() async throws {
        let (tokens, outcome) = try await Self.tokensLeft(
            after: HTTPResponseError(statusCode: 503))
        #expect(try outcome.get() == "profile")  // retried under the replacement
        #expect(outcome.attempts == 2)
        #expect(tokens == 10, "the overtaken refresh's failure cost \(10 - tokens) tokens")
    }

    /// The same refresh, not overtaken, costs its waiter the one token a failed request costs:
    /// what the overtaken one must not.
    @Test func aCurrentRefreshThatFailsCostsItsWaiterOneToken() async throws {
        let clock = TestClock()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            throw HTTPResponseError(statusCode: 503)
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 1, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock)
        let outcome = await policy.outcome(recovering: recovery, operation: RefreshedTokenAPI.operation)
        #expect(outcome.stopReason == .credentialRefreshFailed)
        #expect(budget.tokens == 9)
    }
}
