import ResilienceTesting
import Testing

@testable import Resilience

@Suite("Hedging")
struct HedgingTests {
    @Test func aFastCallStartsNoHedgeAndLeavesNoTimer() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let value = try await hedging.execute {
            attempts.increment()
            return 7
        }
        #expect(value == 7)
        #expect(attempts.value == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aSlowCallIsHedgedAfterTheDelayAndTheFirstSuccessWins() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let call = startCallWonByItsHedge(hedging, clock: clock, attempts: attempts)
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
        clock.advance(by: .seconds(1))
        #expect(try await call.value == "hedge")
        #expect(attempts.value == 2)
        #expect(clock.sleeperCount == 0)  // the loser was cancelled
    }

    @Test func aCallerCancellationEndsEveryAttemptStartsNoHedgeAndLeavesNoTimer() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 3, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute {
                try await breaker.execute {
                    attempts.increment()
                    try await clock.sleep(for: .seconds(10))
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(attempts.value == 1)
        #expect(clock.sleeperCount == 0)
        #expect(breaker.snapshot().state == .closed)  // the caller gave up: not a failure
        #expect(hedging.calls.withLock { $0.count } == 0)
    }

    @Test @MainActor func aMainActorAttemptRunsOnTheMainActor() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
        let value = try await hedging.execute { @MainActor in
            MainActor.assertIsolated()
            return 5
        }
        #expect(value == 5)
    }

    @Test func aCallThatMayNotRunTwiceIsNeverHedged() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute(idempotency: .notIdempotent) {
                attempts.increment()
                try await clock.sleep(for: .seconds(3))
            }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(3))
        try await call.value
        #expect(attempts.value == 1)
        #expect(clock.sleepRequests == [.seconds(3)])  // no hedge timer was even armed
    }

    /// The unhedged run still hands the declaration down: a policy inside must not send its
    /// request again after a failure that may have reached the server.
    @Test func aCallThatMayNotRunTwiceHandsItsDeclarationToAPolicyInside() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let sends = Counter()
        await #expect(throws: TimeoutError.self) {
            try await hedging.execute(idempotency: .notIdempotent) {
                try await policy.execute { () async throws -> Int in
                    sends.increment()
                    throw TimeoutError(timeoutName: "attempt", timeout: .seconds(1))  // may have been sent
                }
            }
        }
        #expect(sends.value == 1, "a call declared not idempotent was sent \(sends.value) times")
    }

    @Test func aBreakerInsideCountsTheSupersededLoserAsNothing() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute {
                try await breaker.execute {
                    if attempts.increment() == 1 { try await clock.sleep(for: .seconds(10)) }
                    return attempts.value
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        _ = try await call.value
        #expect(breaker.snapshot().state == .closed)
    }

    @Test func aSupersededAttemptIsReadAsSupersededByTheRulebook() {
        let analysis = FailureAnalysis(CancellationError(), isCancelled: true, timeLimitFired: false, superseded: true)
        #expect(analysis.interruption == .superseded)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == .cancelled)
    }

    @Test func aFailedAttemptStartsTheNextHedgeAtOnce() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(5)), maximumHedges: 2, clock: clock)
        let attempts = Counter()
        let value = try await hedging.execute { () async throws -> Int in
            let attempt = attempts.increment()
            if attempt < 3 { throw TransientError(id: attempt) }
            return attempt
        }
        #expect(value == 3)
        #expect(hedging.calls.withLock { $0.count } == 0)
    }

    @Test func aTooManyRequestsAnswerStartsNoMoreHedges() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(5)), maximumHedges: 3, clock: TestClock())
        let attempts = Counter()
        await #expect(throws: StatusError.self) {
            try await hedging.execute { () async throws -> Int in
                attempts.increment()
                throw StatusError(status: 429)
            }
        }
        #expect(attempts.value == 1)
    }

    @Test func hedgesSpendTheRetryBudgetAndStopWhenItIsSpent() async throws {
        let budget = try RetryBudget(maximumTokens: 2, tokenRatio: 0.1)
        let hedging = try Hedging(delay: .fixed(.seconds(5)), maximumHedges: 5, budget: budget, clock: TestClock())
        let attempts = Counter()
        await #expect(throws: TransientError.self) {
            try await hedging.execute { () async throws -> Int in
                attempts.increment()
                throw TransientError()
            }
        }
        // Two tokens, a hedge needs more than half of them: one hedge, then the budget refuses.
        #expect(attempts.value == 2)
        #expect(budget.tokens == 1)
    }

    @Test func thePercentileDelayFollowsTheRecentLatencies() {
        var machine = HedgingStateMachine(try! .percentile(90, ofLast: 100, initial: .seconds(1)))
        #expect(machine.currentDelay == .seconds(1))
        for latency in 1...100 { machine.record(.milliseconds(latency)) }
        #expect(machine.currentDelay == .milliseconds(90))
        for _ in 1...100 { machine.record(.milliseconds(500)) }
        #expect(machine.currentDelay == .milliseconds(500))
    }

    @Test func rejectsInvalidSettingsNamingEach() {
        #expect(rejectedSetting { _ = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 0) } == "maximumHedges")
        #expect(rejectedSetting { _ = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 11) } == "maximumHedges")
        #expect(rejectedSetting { _ = try HedgingDelay.fixed(.seconds(-1)) } == "delay")
        #expect(rejectedSetting { _ = try HedgingDelay.percentile(100, initial: .seconds(1)) } == "percentile")
        #expect(rejectedSetting { _ = try HedgingDelay.percentile(.nan, initial: .seconds(1)) } == "percentile")
        #expect(
            rejectedSetting { _ = try HedgingDelay.percentile(95, ofLast: 5, initial: .seconds(1)) } == "sampleCount")
        #expect(rejectedSetting { _ = try HedgingDelay.percentile(95, initial: .zero) } == "initial")
    }

    @Test func tenThousandFastCallsStartNoHedgeAndEachGetsItsOwnValue() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10_000 {
                group.addTask {
                    try await hedging.execute {
                        attempts.increment()
                        return index
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(sum == (0..<10_000).reduce(0, +))
        #expect(attempts.value == 10_000)
        #expect(clock.sleeperCount == 0)
    }
}

@Suite("Hedging hand-over")
struct HedgingHandOverTests {
    @Test func anAttemptThatFailsWhileTheCallWaitsStartsTheNextHedgeAndTheHedgeWins() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                let attempt = attempts.increment()
                if attempt == 1 {
                    try await clock.sleep(for: .milliseconds(500))
                    throw TransientError(id: attempt)
                }
                return attempt
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
        clock.advance(by: .milliseconds(500))  // the first attempt fails before the delay
        #expect(try await call.value == 2)
        #expect(attempts.value == 2)
        #expect(hedging.calls.withLock { $0.count } == 0)
    }
}
