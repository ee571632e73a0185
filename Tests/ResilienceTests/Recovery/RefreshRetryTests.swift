import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A call that still has attempts, time and budget rides out a refresh that failed for now: it
/// waits (the jittered backoff, or the refresh's retry-after hint if longer) and refreshes again,
/// each refresh retry taking one of its attempts. The calls that shared a refresh share the
/// retried one. A 429 from the auth server still stops at once.
@Suite(.timeLimit(.minutes(5)))
struct RefreshRetryTests {
    /// A seed with which, of two calls backing off together, the one that wakes first sleeps
    /// again past the other's wake (see `callsThatSharedAFailedRefreshShareEachRetriedOne`).
    static let seed: UInt64 = 1
    static let backoff = Backoff.constant(.seconds(1))

    static let operation = RefreshedTokenAPI.operation

    /// A recovery whose refreshes fail with `failures` in turn, then succeed.
    static func recovery(
        failingWith failures: [any Error & Sendable], clock: TestClock
    ) -> (CredentialRecovery<String>, Counter) {
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in
            let round = refreshes.increment()
            if round <= failures.count { throw failures[round - 1] }
            return "new"
        }
        return (recovery, refreshes)
    }

    static func makePolicy(
        clock: TestClock, maximumAttempts: Int = 3, deadline: Duration? = nil,
        maximumRetryAfter: Duration = .seconds(60), budget: RetryBudget? = nil
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: Self.backoff, jitter: .full, deadline: deadline,
            maximumRetryAfter: maximumRetryAfter, budget: budget, clock: clock,
            generator: SeededRandomNumberGenerator(seed: Self.seed))
    }

    /// The first `count` jittered delays a policy built by `makePolicy` draws.
    static func jitteredDelays(_ count: Int) -> [Duration] {
        var generator = SeededRandomNumberGenerator(seed: Self.seed)
        var previous: Duration?
        return (0..<count).map { retry in
            let delay = Jitter.full.delay(for: Self.backoff, attempt: retry, previous: previous, using: &generator)
            previous = delay
            return delay
        }
    }

    static func describe<Value>(_ outcome: RetryOutcome<Value>) -> String {
        switch outcome.result {
        case .failure(let error): "\(error)"
        case .success: "a value"
        }
    }

    @Test func aRefreshThatFailsWith503ThenSucceedsIsRetriedAfterTheBackoff() async throws {
        let clock = TestClock()
        let (recovery, refreshes) = Self.recovery(failingWith: [HTTPResponseError(statusCode: 503)], clock: clock)
        let policy = try Self.makePolicy(clock: clock)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }

        await clock.waitForSleepers(count: 1)
        let backoff = Self.jitteredDelays(1)[0]
        #expect(clock.sleepRequests == [backoff], "the jittered backoff of the first retry")
        #expect(backoff > .zero)
        clock.advance(by: backoff)
        let outcome = await call.value

        #expect(try outcome.get() == "profile")
        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.attempts == 2, "the operation ran with the stale token, then with the new one")
        #expect(outcome.elapsed == backoff)
        #expect(refreshes.value == 2)
    }

    @Test func aRefreshRetryTakesOneOfTheCallsAttempts() async throws {
        // Two attempts: the refused one, and the refresh retry. The request with the new token
        // that fails then has nothing left.
        let clock = TestClock()
        let (recovery, refreshes) = Self.recovery(failingWith: [HTTPResponseError(statusCode: 503)], clock: clock)
        let policy = try Self.makePolicy(clock: clock, maximumAttempts: 2)
        let sent = Recorder<String>()
        let call = Task {
            await policy.outcome(recovering: recovery) { token -> String in
                sent.record(token)
                if token == "new" { throw HTTPResponseError(statusCode: 503) }
                throw HTTPResponseError(statusCode: 401)
            }
        }
        await advanceThroughSleeps(clock, count: 1)
        let outcome = await call.value

        #expect(outcome.stopReason == .exhausted)
        #expect(outcome.attempts == 2, "the operation's own runs")
        #expect(sent.values == ["old", "new"])
        #expect(refreshes.value == 2)
    }

    @Test func aRefreshAnswered503WithRetryAfterIsRetriedWhenTheHintHasPassed() async throws {
        let clock = TestClock()
        let unavailable = HTTPResponseError(statusCode: 503, headers: ["Retry-After": "5"])
        let (recovery, refreshes) = Self.recovery(failingWith: [unavailable], clock: clock)
        let policy = try Self.makePolicy(clock: clock)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }

        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(5)], "the hint, longer than the jittered backoff")
        clock.advance(by: .seconds(4))
        #expect(refreshes.value == 1, "no refresh before the hint has passed")
        clock.advance(by: .seconds(1))
        let outcome = await call.value

        #expect(try outcome.get() == "profile")
        #expect(outcome.elapsed == .seconds(5))
        #expect(outcome.retryAfter == .seconds(5))
        #expect(refreshes.value == 2)
    }

    @Test func aRefreshThatFailsUntilTheAttemptsRunOutEndsTheCallWithTheRefreshsError() async throws {
        let clock = TestClock()
        let unavailable = HTTPResponseError(statusCode: 503)
        let (recovery, refreshes) = Self.recovery(failingWith: Array(repeating: unavailable, count: 10), clock: clock)
        let policy = try Self.makePolicy(clock: clock, maximumAttempts: 3)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }

        await advanceThroughSleeps(clock, count: 2)
        let outcome = await call.value

        #expect(outcome.stopReason == .credentialRefreshFailed, "the session is fine; the auth server is not")
        #expect(Self.describe(outcome) == "\(unavailable)")
        #expect(refreshes.value == 3, "one refresh, and one retry for each attempt left")
        #expect(outcome.attempts == 1, "the operation ran once, with the stale token")
        #expect(clock.sleepRequests == Self.jitteredDelays(2))
        #expect(recovery.current.credential == "old")
    }

    @Test func aRefreshAnswered429StopsTheCallAtOnceEvenAfterARetry() async throws {
        let clock = TestClock()
        let limited = HTTPResponseError(statusCode: 429, headers: ["Retry-After": "10"])
        let (recovery, refreshes) = Self.recovery(
            failingWith: [HTTPResponseError(statusCode: 503), limited], clock: clock)
        let policy = try Self.makePolicy(clock: clock, maximumAttempts: 5)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }

        await advanceThroughSleeps(clock, count: 1)
        let outcome = await call.value

        #expect(outcome.stopReason == .tooManyRequests)
        #expect(Self.describe(outcome) == "\(limited)")
        #expect(outcome.retryAfter == .seconds(10))
        #expect(refreshes.value == 2, "the 503 is retried; the 429 is not")
        #expect(clock.sleepRequests.count == 1, "no wait after the 429")
    }

    @Test(arguments: ["deadline shorter than the hint", "hint over maximumRetryAfter", "budget spent"])
    func aLimitOfThePolicyStopsTheRefreshRetry(limit: String) async throws {
        let clock = TestClock()
        let unavailable = HTTPResponseError(statusCode: 503, headers: ["Retry-After": "5"])
        let (recovery, refreshes) = Self.recovery(failingWith: [unavailable], clock: clock)
        let policy: RetryPolicy
        let reason: RetryStopReason
        switch limit {
        case "deadline shorter than the hint":
            policy = try Self.makePolicy(clock: clock, deadline: .seconds(3))
            reason = .deadlineExceeded
        case "hint over maximumRetryAfter":
            policy = try Self.makePolicy(clock: clock, maximumRetryAfter: .seconds(2))
            reason = .retryAfterTooLong
        default:
            // Two tokens: the refresh's failure takes one, and a retry needs more than half.
            policy = try Self.makePolicy(clock: clock, budget: try RetryBudget(maximumTokens: 2))
            reason = .budgetExhausted
        }

        let outcome = await policy.outcome(recovering: recovery, operation: Self.operation)

        #expect(outcome.stopReason == reason, "\(limit)")
        #expect(Self.describe(outcome) == "\(unavailable)", "\(limit): the refresh's error")
        #expect(outcome.retryAfter == .seconds(5), "\(limit)")
        // With a deadline, the only sleep is the timer that bounded the wait for the refresh,
        // cancelled when the refresh answered.
        let watched: [Duration] = limit == "deadline shorter than the hint" ? [.seconds(3)] : []
        #expect(clock.sleepRequests == watched, "\(limit): it stops without waiting")
        #expect(refreshes.value == 1, "\(limit)")
    }

    @Test func callsThatSharedAFailedRefreshShareEachRetriedOne() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let firstRound = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 { await firstRound.wait() }
            throw HTTPResponseError(statusCode: 503)
        }
        let policy = try Self.makePolicy(clock: clock, maximumAttempts: 3)
        let calls = (0..<2).map { _ in
            Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        }
        await recovery.waitForWaitingCalls(count: 2)
        firstRound.open()

        // Each call waits a backoff of its own. The one that wakes first refreshes; its round
        // has failed before the other wakes, which takes that round's result instead of
        // refreshing again.
        await clock.waitForSleepRequests(count: 2)
        let (early, late) = (clock.sleepRequests.min() ?? .zero, clock.sleepRequests.max() ?? .zero)
        #expect(early < late)
        clock.advance(by: early)
        await clock.waitForSleepRequests(count: 3)
        #expect(refreshes.value == 2)
        #expect(try early + clock.sleepRequest(2) > late, "the early call sleeps past the late one's wake")
        clock.advance(by: late - early)
        await clock.waitForSleepRequests(count: 4)
        #expect(refreshes.value == 2, "the late call took the early one's round")
        clock.advance(by: .seconds(1))
        var outcomes: [RetryOutcome<String>] = []
        for call in calls { outcomes.append(await call.value) }

        #expect(refreshes.value == 3, "one refresh per round, not one per caller")
        #expect(outcomes.allSatisfy { $0.stopReason == .credentialRefreshFailed })
        #expect(clock.sleepRequests.count == 4)
    }

    @Test func cancellingOneCallWaitingForTheRetriedRefreshLeavesItRunningForTheOther() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let firstRound = Gate()
        let secondRound = Gate()
        let refreshWasCancelled = Recorder<Bool>()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 {
                await firstRound.wait()
                throw HTTPResponseError(statusCode: 503)
            }
            await secondRound.wait()
            refreshWasCancelled.record(Task.isCancelled)
            return "new"
        }
        let policy = try Self.makePolicy(clock: clock)
        let first = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        let second = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await recovery.waitForWaitingCalls(count: 2)
        firstRound.open()
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        await recovery.waitForWaitingCalls(count: 2)  // both wait for the retried refresh

        first.cancel()
        let cancelled = await first.value  // ends while the retried refresh is held at its gate
        #expect(cancelled.stopReason == .cancelled)
        #expect(throws: CancellationError.self) { try cancelled.get() }
        #expect(recovery.waitingCallCount == 1)

        secondRound.open()
        let survivor = await second.value
        #expect(try survivor.get() == "profile")
        #expect(refreshWasCancelled.values == [false])
        #expect(refreshes.value == 2)
    }

    @Test func aRefreshThatFailedOfflineWaitsForTheNetworkWithoutTakingAnAttempt() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let (recovery, refreshes) = Self.recovery(failingWith: [URLError(.notConnectedToInternet)], clock: clock)
        let policy = try Self.makePolicy(clock: clock, maximumAttempts: 1)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let call = Task { await policy.outcome(recovering: recovery, waitingFor: wait, operation: Self.operation) }

        await network.waitForObservers(count: 1)
        clock.advance(by: .seconds(30))
        network.set(.online)
        let outcome = await call.value

        #expect(try outcome.get() == "profile")
        #expect(outcome.elapsed == .seconds(30))
        #expect(refreshes.value == 2)
    }

    @Test func aRefreshThatFailedOfflineEndsTheCallWhenTheWaitForTheNetworkRunsOut() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let offline = URLError(.notConnectedToInternet)
        let (recovery, refreshes) = Self.recovery(failingWith: [offline], clock: clock)
        let policy = try Self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(60))
        let call = Task { await policy.outcome(recovering: recovery, waitingFor: wait, operation: Self.operation) }

        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(60)], "the wait for the network, not a backoff")
        clock.advance(by: .seconds(60))
        let outcome = await call.value

        #expect(outcome.stopReason == .offline)
        #expect(Self.describe(outcome) == "\(offline)")
        #expect(refreshes.value == 1)
    }
}
