import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A test clock that runs `hook` at every reading, to act at an exact point inside a call.
final class HookedTestClock: Clock, Sendable {
    let base: TestClock
    let hook: @Sendable () -> Void
    init(_ base: TestClock, hook: @escaping @Sendable () -> Void) {
        self.base = base
        self.hook = hook
    }
    var now: TestClock.Instant {
        self.hook()
        return self.base.now
    }
    var minimumResolution: Duration { .zero }
    func sleep(until deadline: TestClock.Instant, tolerance: Duration?) async throws {
        try await self.base.sleep(until: deadline, tolerance: tolerance)
    }
}

/// Whether the hook cancels the task that reads the clock.
enum RefreshChargeLocals {
    @TaskLocal static var cancelOnHintRead = false
}

/// A failed refresh costs the budget of the call that waited for it one token, even when that
/// call is cancelled as it learns of the failure.
@Suite(.timeLimit(.minutes(5)))
struct RefreshChargeCancellationTests {
    static let operation = RefreshedTokenAPI.operation

    /// Tokens left while the second call sleeps out the failed refresh's hint.
    static func tokensLeft(cancelFirstLearner: Bool) async throws -> Double {
        let clock = TestClock()
        let refreshes = Counter()
        let failed = Counter()
        let gate = Gate()
        // The first learner's task is cancelled when it reads the recovery's clock for the
        // hint left, i.e. just after it learned of the failure (and claimed its charge).
        let hooked = HookedTestClock(clock) {
            if RefreshChargeLocals.cancelOnHintRead, failed.value > 0 {
                withUnsafeCurrentTask { $0?.cancel() }
            }
        }
        let recovery = CredentialRecovery(credential: "old", clock: hooked) { _ -> String in
            if refreshes.increment() == 1 {
                await gate.wait()
                _ = failed.increment()
                throw HTTPResponseError(statusCode: 503, headers: ["Retry-After": "30"])
            }
            return "new"
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let first = Task {
            await RefreshChargeLocals.$cancelOnHintRead.withValue(cancelFirstLearner) {
                await policy.outcome(recovering: recovery, operation: Self.operation)
            }
        }
        await recovery.waitForWaitingCalls(count: 1)
        gate.open()
        if cancelFirstLearner {
            let outcome = await first.value
            #expect(outcome.stopReason == .cancelled)
        } else {
            await clock.waitForSleepers(count: 1)
        }
        // A second call, sent with the stale token, gets the remembered failure of the one
        // refresh that was sent, and sleeps out its hint.
        let second = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await clock.waitForSleepers(count: cancelFirstLearner ? 1 : 2)
        let tokens = budget.tokens
        clock.advance(by: .seconds(30))
        let outcome = await second.value
        #expect(outcome.stopReason == .succeeded)
        if !cancelFirstLearner { _ = await first.value }
        #expect(refreshes.value == 2)
        return tokens
    }

    @Test func aFailedRefreshWhoseFirstLearnerIsCancelledIsStillChargedOnce() async throws {
        let baseline = try await Self.tokensLeft(cancelFirstLearner: false)
        let cancelled = try await Self.tokensLeft(cancelFirstLearner: true)
        #expect(baseline == 9, "one failed refresh request: one token")
        #expect(
            cancelled == baseline,
            "the same one refresh request was sent and failed; the call that retries it paid \(10 - cancelled) tokens")
    }
}

/// A failed refresh shared by calls of two policies costs each budget one token, whichever
/// call learns of the failure first.
@Suite(.timeLimit(.minutes(5)))
struct RefreshChargeSharedBudgetTests {
    static let operation = RefreshedTokenAPI.operation

    /// Two policies share one recovery: one without a retry budget, one with. Both calls
    /// wait for the same refresh, which fails with a 503; both retry it. The budgeted
    /// policy's budget must pay for the failed request it retries, as it would alone.
    static func budgetTokensLeft(withUnbudgetedSharer: Bool) async throws -> Double {
        let clock = TestClock()
        let refreshes = Counter()
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 {
                await gate.wait()
                throw HTTPResponseError(statusCode: 503)
            }
            return "new"
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let budgeted = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let unbudgeted = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        var calls: [Task<RetryOutcome<String>, Never>] = []
        if withUnbudgetedSharer {
            calls.append(Task { await unbudgeted.outcome(recovering: recovery, operation: Self.operation) })
            await recovery.waitForWaitingCalls(count: 1)
        }
        calls.append(Task { await budgeted.outcome(recovering: recovery, operation: Self.operation) })
        await recovery.waitForWaitingCalls(count: calls.count)
        gate.open()
        await clock.waitForSleepers(count: calls.count)  // each sleeps its backoff before the next refresh
        let tokens = budget.tokens
        clock.advance(by: .seconds(1))
        for call in calls { #expect(await call.value.stopReason == .succeeded) }
        return tokens
    }

    @Test func aBudgetedCallPaysForTheFailedRefreshItSharedWithAnUnbudgetedOne() async throws {
        let alone = try await Self.budgetTokensLeft(withUnbudgetedSharer: false)
        #expect(alone == 9)
        var unpaid = 0
        for _ in 0..<20 where try await Self.budgetTokensLeft(withUnbudgetedSharer: true) != alone { unpaid += 1 }
        #expect(unpaid == 0, "in \(unpaid) of 20 runs the budgeted policy retried a failed refresh it never paid for")
    }
}

/// A call that stops waiting for a shared refresh before its answer (at its deadline, or
/// cancelled) is not charged for the refresh when it fails later, unless a call still waiting
/// shares its budget.
@Suite(.timeLimit(.minutes(5)))
struct RefreshChargeDepartureTests {
    enum Departure: String, CaseIterable, CustomTestStringConvertible {
        case deadline, cancellation
        var testDescription: String { self.rawValue }
    }

    /// The tokens a failed refresh cost the budget of a call that left before its answer;
    /// `sharerStays` keeps a second call with the same budget waiting until the answer.
    static func tokensCharged(leavingBy departure: Departure, sharerStays: Bool) async throws -> Double {
        let clock = TestClock()
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            await gate.wait()
            throw HTTPResponseError(statusCode: 503)
        }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let leaver = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none,
            deadline: departure == .deadline ? .seconds(5) : nil, budget: budget, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        // The other waiting call keeps the refresh's answer coming; it has the same budget or none.
        let stayer = try RetryPolicy(
            maximumAttempts: 1, backoff: .constant(.seconds(1)), jitter: .none, budget: sharerStays ? budget : nil,
            clock: clock, generator: SeededRandomNumberGenerator(seed: 2))
        let leaving = Task { await leaver.outcome(recovering: recovery, operation: RefreshedTokenAPI.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        let staying = Task { await stayer.outcome(recovering: recovery, operation: RefreshedTokenAPI.operation) }
        await recovery.waitForWaitingCalls(count: 2)
        switch departure {
        case .deadline:
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(5))
        case .cancellation:
            leaving.cancel()
        }
        let left = await leaving.value
        #expect(left.stopReason == (departure == .deadline ? .deadlineExceeded : .cancelled))
        let tokensWhenItLeft = budget.tokens
        gate.open()
        _ = await staying.value
        return tokensWhenItLeft - budget.tokens
    }

    @Test(arguments: Departure.allCases)
    func aCallThatLeftBeforeTheAnswerIsNotChargedForTheRefresh(departure: Departure) async throws {
        let charged = try await Self.tokensCharged(leavingBy: departure, sharerStays: false)
        #expect(charged == 0, "the budget of a call that left paid \(charged) for a refresh that failed after it left")
    }

    @Test(arguments: Departure.allCases)
    func aBudgetStillWaitingThroughAnotherCallPaysOnce(departure: Departure) async throws {
        let charged = try await Self.tokensCharged(leavingBy: departure, sharerStays: true)
        #expect(charged == 1)
    }
}
