import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(5)))
/// How a call through a policy accounts for a refresh that failed for now: what it costs the
/// retry budget, which refusals end it at once, which waits it refuses, and which answers of
/// the auth server leave the session alone.
struct RefreshRetryAccountingTests {
    static let operation = RefreshedTokenAPI.operation

    @Test func aRefreshRefusedByAThrottleIsNotRetried() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            _ = refreshes.increment()
            throw AdaptiveThrottleRejection(rejectionProbability: 0.9)
        }
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome(recovering: recovery, operation: Self.operation)
        }
        #expect(refreshes.value == 1, "a throttle's rejection is never retried")
        #expect(outcome.stopReason == .throttled)
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test(arguments: [LibraryErrorShape.appEnum, .nsUnderlying, .appEnumUnderNSError])
    func aWrappedBreakerRejectionOfTheRefreshCostsNoBudget(shape: LibraryErrorShape) async throws {
        func tokensLeft(_ shape: LibraryErrorShape) async throws -> (Double, RetryStopReason?) {
            let clock = TestClock()
            let budget = try RetryBudget(maximumTokens: 100, tokenRatio: 0.1)
            let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
                throw shape.wrap(CircuitBreakerOpenError(breakerName: "auth", state: .open, retryAfter: nil))
            }
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock,
                generator: SeededRandomNumberGenerator(seed: 1))
            let outcome = await advancingThroughEachWait(clock) {
                await policy.outcome(recovering: recovery, operation: Self.operation)
            }
            return (budget.tokens, outcome.stopReason)
        }
        let (direct, directReason) = try await tokensLeft(.direct)
        let (wrapped, wrappedReason) = try await tokensLeft(shape)
        #expect(directReason == wrappedReason)
        #expect(direct == 100, "as thrown: no token")
        #expect(wrapped == direct, "\(shape): a breaker's rejection put no load on the auth server")
    }

    @Test func anOfflineRefreshsHintOverMaximumRetryAfterIsNotWaitedOut() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 {
                throw NSError(
                    domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkUnavailable.rawValue,
                    userInfo: [ErrorHints.cloudKitRetryAfterKey: 300])
            }
            return "new"
        }
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(5),
            clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        // Advances the clock through each sleep as it is requested.
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome(recovering: recovery, waitingFor: wait, operation: Self.operation)
        }
        // The hint is refused whether or not the network comes back, so the call does not wait for it.
        #expect(network.updateRequestCount == 0, "no wait for the network")
        #expect(clock.sleepRequests.allSatisfy { $0 <= .seconds(5) }, "no wait over maximumRetryAfter")
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(refreshes.value == 1)
        #expect(outcome.elapsed <= .seconds(5))
    }

    @Test func oneFailedSharedRefreshCostsTheBudgetOneTokenNotOnePerCaller() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let firstRound = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 {
                await firstRound.wait()
                throw HTTPResponseError(statusCode: 503)
            }
            return "new"
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .full, budget: budget, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 7))
        let count = 100
        let calls = (0..<count).map { _ in
            Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        }
        await recovery.waitForWaitingCalls(count: count)
        firstRound.open()
        let outcomes = await advancingThroughEachWait(clock) {
            var outcomes: [RetryOutcome<String>] = []
            for call in calls { outcomes.append(await call.value) }
            return outcomes
        }
        let exhausted = outcomes.filter { $0.stopReason == .budgetExhausted }.count
        #expect(refreshes.value == 2, "one refresh per round")
        #expect(exhausted == 0, "one failed refresh request left \(exhausted) of \(count) calls without budget")
        #expect(outcomes.allSatisfy { $0.stopReason == .succeeded })
    }

    /// Any 5xx from the auth server, even one a call is not retried after (501, or a captive
    /// portal's 511, RFC 6585 section 6), is the server's or the network's fault, not the
    /// session's; so is a final status that comes with a retry-after hint.
    @Test(arguments: [
        HTTPResponseError(statusCode: 507), HTTPResponseError(statusCode: 521), HTTPResponseError(statusCode: 522),
        HTTPResponseError(statusCode: 524), HTTPResponseError(statusCode: 501), HTTPResponseError(statusCode: 505),
        HTTPResponseError(statusCode: 511), HTTPResponseError(statusCode: 501, headers: ["Retry-After": "2"]),
    ])
    func aRefreshAnsweredWithAServerErrorDoesNotEndTheSession(failure: HTTPResponseError) async throws {
        let status = failure.statusCode
        let clock = TestClock()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 { throw failure }
            return "new"
        }
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome(recovering: recovery, operation: Self.operation)
        }
        #expect(outcome.stopReason != .authenticationRequired, "\(status) says nothing about the session")
        #expect(outcome.stopReason == .succeeded, "\(status)")
        #expect(refreshes.value == 2, "\(status)")
    }

    @Test func aRememberedRefreshFailureCostsNoBudgetToCallsThatMadeNoRequest() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 { throw HTTPResponseError(statusCode: 503, headers: ["Retry-After": "30"]) }
            return "new"
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let finished = Counter()
        let first = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await clock.waitForSleepers(count: 1)  // it sleeps out the 30 s hint
        #expect(refreshes.value == 1)
        // Nine more calls, each refused with the stale token, get the remembered failure.
        let later = (0..<9).map { _ in
            Task {
                let outcome = await policy.outcome(recovering: recovery, operation: Self.operation)
                _ = finished.increment()
                return outcome
            }
        }
        // Until every later call either sleeps out the hint or has ended.
        try await yieldUntil { clock.sleeperCount + finished.value >= 10 }
        #expect(refreshes.value == 1, "no request was made for the nine")
        clock.advance(by: .seconds(30))
        var outcomes = [await first.value]
        for call in later { outcomes.append(await call.value) }
        let exhausted = outcomes.filter { $0.stopReason == .budgetExhausted }.count
        #expect(refreshes.value == 2)
        #expect(exhausted == 0, "\(exhausted) calls stopped for a budget spent on one failed request")
    }
}
