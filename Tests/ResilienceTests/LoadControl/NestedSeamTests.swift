import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A retry policy's events as lines, with the hint each failure carried; one log shared by
/// several policies shows how their events interleave.
struct RetryEventLog: RetryObserver {
    let lines = Recorder<String>()

    func attemptFailed(_ event: RetryAttemptFailedEvent) {
        let hint = event.retryAfter.map { " hint \($0)" } ?? ""
        self.lines.record("\(event.policyName) failed \(event.attempt)\(hint)")
    }

    func retryScheduled(_ event: RetryScheduledEvent) {
        self.lines.record("\(event.policyName) waits \(event.delay)")
    }

    func callFinished(_ event: RetryCallFinishedEvent) {
        self.lines.record("\(event.policyName) \(event.stopReason) after \(event.attempts)")
    }
}

/// Retry policies and circuit breakers nested in one another, run end to end on test clocks:
/// what each layer attempts, why it stops, what it throws, and what the breaker and the
/// observers see, when a breaker rejects part-way through a call or from the start.
@Suite("Policies and breakers nested in one another")
struct NestedSeamTests {
    static let waitOf30s = "30.0 seconds"

    /// A policy waiting a second between attempts, without jitter, so its schedule is exact.
    static func policy(_ name: String, attempts: Int, log: RetryEventLog, clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            name: name, maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none, observer: log,
            clock: clock)
    }

    /// A breaker that opens for 30 seconds after `failures` consecutive failures.
    static func breaker(
        _ name: String, failures: Int = 1, observer: RecordingBreakerObserver, clock: TestClock
    ) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: name, tripRule: .consecutiveFailures(failures), openDuration: .fixed(.seconds(30)),
            observer: observer, clock: clock)
    }

    /// A breaker already open, on a clock that never moves: every call it rejects, it rejects
    /// alike (30 seconds left), so calls on one thread catch one shared box.
    static func stuckOpenBreaker(_ name: String, observer: RecordingBreakerObserver) async throws -> CircuitBreaker {
        let breaker = try Self.breaker(name, observer: observer, clock: TestClock())
        await breaker.fail()
        return breaker
    }

    static func rejection(_ name: String, retryAfter: Duration = .seconds(30)) -> CircuitBreakerOpenError {
        CircuitBreakerOpenError(breakerName: name, state: .open, retryAfter: retryAfter)
    }

    /// Calls `breaker` with an operation that counts its runs, and records the error of a
    /// call that fails before rethrowing it; in the caller's isolation, so on its thread.
    nonisolated(nonsending) static func call(
        _ breaker: CircuitBreaker, counting runs: Counter, recordingRejectionsIn errors: Recorder<any Error>
    ) async throws -> Int {
        do {
            return try await breaker.execute { runs.increment() }
        } catch {
            errors.record(error)
            throw error
        }
    }

    // MARK: - Outer policy, inner policy, open breaker

    /// The documented behaviour (``NestedRetries``): the inner policy retries the rejection,
    /// waiting out its retry-after each time, and ends with an equal error in a box of its own;
    /// the outer policy recognizes that box and stops at once.
    @Test @MainActor func anInnerPolicyExhaustedOnRejectionsStopsTheOuterAfterOneAttempt() async throws {
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try await Self.stuckOpenBreaker("down", observer: breakerEvents)
        let clock = TestClock()
        let log = RetryEventLog()
        let outer = try Self.policy("outer", attempts: 3, log: log, clock: clock)
        let inner = try Self.policy("inner", attempts: 3, log: log, clock: clock)
        let runs = Counter()
        let caught = Recorder<any Error>()
        let outcome = await advancingThroughEachWait(clock) { @MainActor in
            await outer.outcome {
                try await inner.execute {
                    try await Self.call(breaker, counting: runs, recordingRejectionsIn: caught)
                }
            }
        }
        #expect(runs.value == 0)
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .retriedByInnerPolicy)
        let thrown = try #require(outcome.error)
        #expect(thrown as? CircuitBreakerOpenError == Self.rejection("down"))
        #expect(clock.sleepRequests == [.seconds(30), .seconds(30)], "each wait is the rejection's retry-after")
        let hint = " hint \(Self.waitOf30s)"
        #expect(
            log.lines.values == [
                "inner failed 1\(hint)", "inner waits \(Self.waitOf30s)", "inner failed 2\(hint)",
                "inner waits \(Self.waitOf30s)", "inner failed 3\(hint)", "inner exhausted after 3",
                "outer failed 1\(hint)", "outer retriedByInnerPolicy after 1",
            ])
        #expect(breakerEvents.rejections.count == 3)
        #expect(breakerEvents.transitions == ["closed->open"])
        #expect(breaker.state == .open)
        // On the main actor every rejection is made on one thread, which throws its last box again
        // (unless another main-actor test rejected in between); the call ends with an equal error
        // in a box none of them was thrown in.
        let rejections = caught.values
        #expect(rejections.count == 3)
        #expect(!rejections.contains { NestedRetryLedger.isSameBox(thrown, $0) })
    }

    @Test @MainActor func unrelatedPoliciesRejectedAlikeOneAfterTheOtherEachMakeTheirOwnAttempts() async throws {
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try await Self.stuckOpenBreaker("down", observer: breakerEvents)
        let clock = TestClock()
        let log = RetryEventLog()
        let first = try Self.policy("first", attempts: 3, log: log, clock: clock)
        let second = try Self.policy("second", attempts: 2, log: log, clock: clock)
        let runs = Counter()
        let outcomes = await advancingThroughEachWait(clock) { @MainActor in
            var outcomes: [RetryOutcome<Int>] = []
            for policy in [first, second, first, second] {
                outcomes.append(await policy.outcome { try await breaker.execute { runs.increment() } })
            }
            return outcomes
        }
        #expect(runs.value == 0)
        #expect(outcomes.map(\.attempts) == [3, 2, 3, 2])
        #expect(outcomes.allSatisfy { $0.stopReason == .exhausted })
        #expect(outcomes.allSatisfy { $0.error as? CircuitBreakerOpenError == Self.rejection("down") })
        #expect(clock.sleepRequests == Array(repeating: .seconds(30), count: 2 + 1 + 2 + 1))
        #expect(breakerEvents.rejections.count == 10)
    }

    /// A call whose operation first runs another policy's whole call, which exhausts on the
    /// breaker's rejections, then is rejected itself, on the same thread, in the same shared box
    /// as the other policy's attempts were: it owes nothing to the other policy's word.
    @Test func aPolicyRejectedInTheBoxAnotherPolicyExhaustedMakesItsOwnAttempts() async throws {
        // The scenario needs the caller's rejection to be the very box the helper's attempts
        // caught. It runs on a thread of its own, which no other test's rejection can reach,
        // so the thread's box is the helper's every time.
        let run = try await Self.rejectedInTheBoxAnotherPolicyExhausted()
        try #require(run.callerSharedTheHelpersBox, "the caller was rejected in a box of its own")
        #expect(run.runs == 0)
        #expect(run.outcome.attempts == 3)
        #expect(run.outcome.stopReason == .exhausted)
        #expect(run.outcome.error as? CircuitBreakerOpenError == Self.rejection("down"))
        #expect(
            run.log.filter { $0.hasPrefix("helper exhausted") }
                == Array(repeating: "helper exhausted after 2", count: 3))
        #expect(run.helperEndings.count == 3)
        #expect(run.helperEndings.allSatisfy { $0 as? CircuitBreakerOpenError == Self.rejection("down") })
        #expect(run.callerRejections.count == 3)
        #expect(
            !run.callerRejections.contains { mine in
                run.helperEndings.contains { NestedRetryLedger.isSameBox($0, mine) }
            })
        #expect(run.breakerRejections == 3 * (2 + 1))
    }

    /// What one run of the scenario above saw.
    struct BoxScenarioRun {
        var outcome: RetryOutcome<Int>
        var runs: Int
        var log: [String]
        var helperEndings: [any Error]
        var callerRejections: [any Error]
        var callerSharedTheHelpersBox: Bool
        var breakerRejections: Int
    }

    /// A call whose operation first runs a helper policy's whole call, which exhausts on a
    /// stuck-open breaker's rejections, then calls the breaker itself; all on one thread.
    @OneThreadActor
    static func rejectedInTheBoxAnotherPolicyExhausted() async throws -> BoxScenarioRun {
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try await Self.stuckOpenBreaker("down", observer: breakerEvents)
        let clock = TestClock()
        let log = RetryEventLog()
        let caller = try Self.policy("caller", attempts: 3, log: log, clock: clock)
        let helper = try Self.policy("helper", attempts: 2, log: log, clock: clock)
        let runs = Counter()
        let helperRejections = Recorder<any Error>()
        let helperEndings = Recorder<any Error>()
        let callerRejections = Recorder<any Error>()
        let outcome = await advancingThroughEachWait(clock) { @OneThreadActor in
            await caller.outcome {
                let helped = await helper.outcome {
                    try await Self.call(breaker, counting: runs, recordingRejectionsIn: helperRejections)
                }
                if let ending = helped.error { helperEndings.record(ending) }
                return try await Self.call(breaker, counting: runs, recordingRejectionsIn: callerRejections)
            }
        }
        let own = callerRejections.values
        return BoxScenarioRun(
            outcome: outcome, runs: runs.value, log: log.lines.values, helperEndings: helperEndings.values,
            callerRejections: own,
            callerSharedTheHelpersBox: own.contains { mine in
                helperRejections.values.contains { NestedRetryLedger.isSameBox($0, mine) }
            },
            breakerRejections: breakerEvents.rejections.count)
    }

    // MARK: - A breaker opening part-way through a call

    /// Two failures open the breaker; the third attempt is rejected with the open time left,
    /// which the policy waits out exactly; the fourth is the probe, and closes the breaker.
    @Test func aPolicyAroundABreakerWaitsOutTheRejectionAndProbes() async throws {
        let clock = TestClock()
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try Self.breaker("flaky", failures: 2, observer: breakerEvents, clock: clock)
        let log = RetryEventLog()
        let policy = try Self.policy("policy", attempts: 4, log: log, clock: clock)
        let runs = Counter()
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome {
                try await breaker.execute {
                    if runs.increment() <= 2 { throw ServiceFailure() }
                    return 42
                }
            }
        }
        #expect(try outcome.get() == 42)
        #expect(outcome.attempts == 4)
        #expect(runs.value == 3)
        #expect(clock.sleepRequests == [.seconds(1), .seconds(1), .seconds(29)])
        #expect(
            log.lines.values == [
                "policy failed 1", "policy waits 1.0 seconds", "policy failed 2", "policy waits 1.0 seconds",
                "policy failed 3 hint 29.0 seconds", "policy waits 29.0 seconds", "policy succeeded after 4",
            ])
        #expect(breakerEvents.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
        #expect(breakerEvents.rejections.map(\.retryAfter) == [.seconds(29)])
        #expect(breaker.state == .closed)
    }

    @Test func aPolicyAroundABreakerThatRunsOutOnTheRejectionThrowsIt() async throws {
        let clock = TestClock()
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try Self.breaker("flaky", failures: 2, observer: breakerEvents, clock: clock)
        let log = RetryEventLog()
        let policy = try Self.policy("policy", attempts: 3, log: log, clock: clock)
        let runs = Counter()
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome {
                try await breaker.execute { () throws -> Int in
                    runs.increment()
                    throw ServiceFailure()
                }
            }
        }
        #expect(outcome.stopReason == .exhausted)
        #expect(outcome.attempts == 3)
        #expect(runs.value == 2)
        #expect(outcome.error as? CircuitBreakerOpenError == Self.rejection("flaky", retryAfter: .seconds(29)))
        #expect(clock.sleepRequests == [.seconds(1), .seconds(1)])
        #expect(breakerEvents.transitions == ["closed->open"])
        #expect(breaker.state == .open)
    }

    /// The breaker counts the policy's whole call as one failure, opens, rejects the next call
    /// without running it (the policy is never asked), and lets the one after the open time probe.
    @Test func aBreakerAroundAPolicyCountsWholeCallsAndRejectsTheNext() async throws {
        let clock = TestClock()
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try Self.breaker("guard", failures: 1, observer: breakerEvents, clock: clock)
        let log = RetryEventLog()
        let policy = try Self.policy("policy", attempts: 3, log: log, clock: clock)
        let runs = Counter()
        let call: @Sendable () async -> Result<Int, any Error> = {
            await Result {
                try await breaker.execute {
                    try await policy.execute {
                        if runs.increment() <= 3 { throw ServiceFailure() }
                        return 42
                    }
                }
            }
        }
        let first = await advancingThroughEachWait(clock) { await call() }
        #expect(throws: ServiceFailure()) { try first.get() }
        #expect(runs.value == 3)
        #expect(clock.sleepRequests == [.seconds(1), .seconds(1)])
        #expect(breakerEvents.transitions == ["closed->open"])

        let linesBefore = log.lines.values
        let second = await call()
        #expect(throws: Self.rejection("guard")) { try second.get() }
        #expect(runs.value == 3, "rejected without running the policy")
        #expect(log.lines.values == linesBefore)

        clock.advance(by: .seconds(30))
        let third = await call()
        #expect(try third.get() == 42)
        #expect(runs.value == 4)
        #expect(breakerEvents.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
        #expect(log.lines.values.last == "policy succeeded after 1")
    }

    /// A 429 stops the policy at once, whatever its attempts, and reaches the breaker, whose
    /// pushback opens it for the server's hint although one failure is far from its trip rule.
    @Test func aBreakerAroundAPolicyOpensForTheHintOfA429ThePolicyDidNotRetry() async throws {
        let clock = TestClock()
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try Self.breaker("guard", failures: 5, observer: breakerEvents, clock: clock)
        let log = RetryEventLog()
        let policy = try Self.policy("policy", attempts: 3, log: log, clock: clock)
        let runs = Counter()
        let result = await Result {
            try await breaker.execute {
                try await policy.execute { () throws -> Int in
                    runs.increment()
                    throw ErrorShape.nsUnderlying.wrap(TooManyRequestsShape.httpResponse.error)
                }
            }
        }
        #expect(runs.value == 1)
        #expect(clock.sleepRequests.isEmpty)
        let thrown = try #require(result.failureValue)
        #expect(FailureAnalysis(thrown).isTooManyRequests)
        #expect(log.lines.values == ["policy failed 1 hint 7.0 seconds", "policy tooManyRequests after 1"])
        #expect(breakerEvents.transitions == ["closed->open"])
        let rejected = await Result { try await breaker.execute { runs.increment() } }
        #expect(throws: Self.rejection("guard", retryAfter: TooManyRequestsShape.hint)) { try rejected.get() }
    }

    /// Policy, breaker, policy: the inner policy exhausts and opens the breaker, so the outer
    /// stops at once; its next call is rejected, waits out the open time, and probes.
    @Test func aPolicyAroundABreakerAroundAPolicyStopsOnTheInnerWordThenWaitsOutTheOpenTime() async throws {
        let clock = TestClock()
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try Self.breaker("middle", failures: 1, observer: breakerEvents, clock: clock)
        let log = RetryEventLog()
        let outer = try Self.policy("outer", attempts: 3, log: log, clock: clock)
        let inner = try Self.policy("inner", attempts: 2, log: log, clock: clock)
        let runs = Counter()
        let outcomes = await advancingThroughEachWait(clock) {
            var outcomes: [RetryOutcome<Int>] = []
            for _ in 0..<2 {
                outcomes.append(
                    await outer.outcome {
                        try await breaker.execute {
                            try await inner.execute {
                                if runs.increment() <= 2 { throw ServiceFailure() }
                                return 42
                            }
                        }
                    })
            }
            return outcomes
        }
        #expect(outcomes[0].stopReason == .retriedByInnerPolicy)
        #expect(outcomes[0].attempts == 1)
        #expect(outcomes[0].error as? ServiceFailure == ServiceFailure())
        #expect(try outcomes[1].get() == 42)
        #expect(outcomes[1].attempts == 2)
        #expect(runs.value == 3)
        // The inner policy's one wait, then the open time left when the outer was rejected.
        #expect(clock.sleepRequests == [.seconds(1), .seconds(30)])
        #expect(
            log.lines.values == [
                "inner failed 1", "inner waits 1.0 seconds", "inner failed 2", "inner exhausted after 2",
                "outer failed 1", "outer retriedByInnerPolicy after 1",
                "outer failed 1 hint \(Self.waitOf30s)", "outer waits \(Self.waitOf30s)", "inner succeeded after 1",
                "outer succeeded after 2",
            ])
        #expect(breakerEvents.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
    }

    // MARK: - Through pipelines and every entry point

    @Test func anInnerPipelineStageExhaustedOnRejectionsStopsTheOuterStage() async throws {
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try await Self.stuckOpenBreaker("down", observer: breakerEvents)
        let clock = TestClock()
        let log = RetryEventLog()
        let outer = try Self.policy("outer", attempts: 3, log: log, clock: clock)
        let inner = try Self.policy("inner", attempts: 3, log: log, clock: clock)
        let timeout = try Timeout(.seconds(60), clock: TestClock())
        let pipeline = ResiliencePipeline {
            outer
            ResiliencePipeline {
                inner
                breaker
                timeout
            }
        }
        let runs = Counter()
        let result = await advancingThroughEachWait(clock) {
            await Result { try await pipeline.execute { runs.increment() } }
        }
        #expect(runs.value == 0)
        #expect(throws: Self.rejection("down")) { try result.get() }
        #expect(
            log.lines.values.suffix(3) == [
                "inner exhausted after 3", "outer failed 1 hint \(Self.waitOf30s)",
                "outer retriedByInnerPolicy after 1",
            ])
        #expect(clock.sleepRequests == [.seconds(30), .seconds(30)])
        #expect(breakerEvents.rejections.count == 3)
    }

    /// A fallback outermost answers for the rejection a policy ran out on; given one more
    /// attempt, the policy waits out the open time and the probe's answer comes through instead.
    @Test(arguments: [3, 4])
    func aPipelineFallsBackOnlyWhenThePolicyRunsOutOnTheRejection(attempts: Int) async throws {
        let clock = TestClock()
        let breakerEvents = RecordingBreakerObserver()
        let breaker = try Self.breaker("flaky", failures: 2, observer: breakerEvents, clock: clock)
        let log = RetryEventLog()
        let policy = try Self.policy("policy", attempts: attempts, log: log, clock: clock)
        let answered = Recorder<any Error>()
        let fallback = Fallback<Int> { context in
            answered.record(context.error)
            return -1
        }
        let pipeline = try ResiliencePipeline {
            fallback
            policy
            breaker
            try Timeout(.seconds(60), clock: TestClock())
        }
        let runs = Counter()
        let result = await advancingThroughEachWait(clock) {
            await Result {
                try await pipeline.execute {
                    if runs.increment() <= 2 { throw ServiceFailure() }
                    return 42
                }
            }
        }
        if attempts == 3 {
            #expect(try result.get() == -1)
            #expect(answered.values.count == 1)
            #expect(
                answered.values.first as? CircuitBreakerOpenError == Self.rejection("flaky", retryAfter: .seconds(29)))
            #expect(runs.value == 2)
            #expect(clock.sleepRequests == [.seconds(1), .seconds(1)])
            #expect(log.lines.values.last == "policy exhausted after 3")
        } else {
            #expect(try result.get() == 42)
            #expect(answered.values.isEmpty)
            #expect(runs.value == 3)
            #expect(clock.sleepRequests == [.seconds(1), .seconds(1), .seconds(29)])
            #expect(log.lines.values.last == "policy succeeded after 4")
            #expect(breakerEvents.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
        }
    }

    enum OuterEntry: CaseIterable, Sendable {
        case outcome, outcomeNotIdempotent, executeNotIdempotent, outcomeWithAttemptTimeout, executeWithAttemptTimeout
    }

    enum InnerEntry: CaseIterable, Sendable {
        case execute, outcome, executeWithAttemptTimeout
    }

    /// Every entry point, outside and in: the inner policy retries the rejections (a rejection
    /// never reached the server, so even a call that is not idempotent may be sent again), and the
    /// outer stops on its word. The outer's clock carries only its attempts' time limits.
    @Test(arguments: OuterEntry.allCases, InnerEntry.allCases)
    func everyEntryPointStopsTheOuterOnAnInnerPolicysExhaustedRejection(
        outer entry: OuterEntry, inner innerEntry: InnerEntry
    ) async throws {
        let breaker = try await Self.stuckOpenBreaker("down", observer: RecordingBreakerObserver())
        let outerClock = TestClock()
        let clock = TestClock()
        let log = RetryEventLog()
        let outer = try Self.policy("outer", attempts: 3, log: log, clock: outerClock)
        let inner = try Self.policy("inner", attempts: 3, log: log, clock: clock)
        let runs = Counter()
        let operation: @Sendable () async throws -> Int = {
            switch innerEntry {
            case .execute: try await inner.execute { try await breaker.execute { runs.increment() } }
            case .outcome: try await inner.outcome { try await breaker.execute { runs.increment() } }.get()
            case .executeWithAttemptTimeout:
                try await inner.execute(attemptTimeout: .seconds(3_600)) {
                    try await breaker.execute { runs.increment() }
                }
            }
        }
        // The inner clock's time limits are never due: each advance is at most the 30 s wait.
        let result = await advancingThroughEachWait(outerClock, clock, longest: .seconds(30)) {
            await Result { () async throws -> Int in
                switch entry {
                case .outcome: try await outer.outcome(operation: operation).get()
                case .outcomeNotIdempotent:
                    try await outer.outcome(idempotency: .notIdempotent, operation: operation).get()
                case .executeNotIdempotent: try await outer.execute(idempotency: .notIdempotent, operation: operation)
                case .outcomeWithAttemptTimeout:
                    try await outer.outcome(attemptTimeout: .seconds(3_600), operation: operation).get()
                case .executeWithAttemptTimeout:
                    try await outer.execute(attemptTimeout: .seconds(3_600), operation: operation)
                }
            }
        }
        #expect(runs.value == 0)
        #expect(throws: Self.rejection("down")) { try result.get() }
        #expect(
            log.lines.values.filter { $0.contains("after") } == [
                "inner exhausted after 3", "outer retriedByInnerPolicy after 1",
            ])
        #expect(clock.sleepRequests.filter { $0 == .seconds(30) }.count == 2)
    }
}
