import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A hedged call nested in a time limit, when a clock carries the time past the limit's deadline
/// before the limit's timer has woken: the call starts no hedge and no replacement once that
/// deadline has passed, and the limit reports its own time-out, as when its timer woke first
/// (as a `RetryPolicy` nested in the limit does, see `TimeoutNestedRetryDeadlineTests`).
///
/// The limit's clock wakes its sleepers an hour late (`LateWakingClock`), so the hedge's timer,
/// on the test clock itself, wakes first every run.
@Suite("Time limits stop the hedged calls nested in them at their deadline", .timeLimit(.minutes(5)))
struct HedgingInPassedLimitTests {
    /// Where the limit sits around the hedged call.
    enum Nesting: CaseIterable, CustomStringConvertible {
        /// `Timeout.execute` around the hedged call.
        case timeout
        /// A pipeline's total timeout around its own `Hedging` stage.
        case pipelineTotal
        /// A pipeline's per-attempt timeout around its `Hedging` stage.
        case pipelineAttempt
        /// A policy's `attemptTimeout` around the hedged call.
        case attemptLimit
        /// `Timeout.execute` around a later `Timeout`, whose deadline has not passed, around the call.
        case inALaterTimeout
        /// `Timeout.execute` around a later `Timeout`, whose deadline has passed too, around the call.
        case inAPassedLaterTimeout

        var description: String {
            switch self {
            case .timeout: "Timeout.execute"
            case .pipelineTotal: "a pipeline's total timeout"
            case .pipelineAttempt: "a pipeline's attempt timeout"
            case .attemptLimit: "an attemptTimeout"
            case .inALaterTimeout: "Timeout.execute, a later Timeout in"
            case .inAPassedLaterTimeout: "Timeout.execute, a later passed Timeout in"
            }
        }

        /// The sleepers of the call before the jump besides the first attempt's and the hedge's timer.
        var limitTimers: Int {
            switch self {
            case .inALaterTimeout, .inAPassedLaterTimeout: 2
            default: 1
            }
        }
    }

    /// The limit, two seconds on `late`, around a call hedged after `hedgeDelay` on `clock`,
    /// whose operation is `operation`; `before`, if given, runs inside the limit before the
    /// hedged call begins (in a pipeline, in a stage between the limit and the hedging stage).
    static func call(
        _ nesting: Nesting, hedgeDelay: Duration, late: LateWakingClock, clock: TestClock, events: EventLog,
        hedgeEvents: EventLog, before: (@Sendable () async throws -> Void)? = nil,
        operation: @escaping @Sendable () async throws -> Void
    ) throws -> Task<Void, any Error> {
        let limit = Duration.seconds(2)
        let hedging = try Hedging(
            delay: .fixed(hedgeDelay), maximumHedges: 1, observer: hedgeEvents, clock: clock)
        let timeout = try Timeout(limit, name: "limit", observer: events, clock: late)
        let hedged: @Sendable () async throws -> Void = {
            try await before?()
            try await hedging.execute { try await operation() }
        }
        switch nesting {
        case .timeout:
            return Task { try await timeout.execute { try await hedged() } }
        case .pipelineTotal:
            if let before {
                let pipeline = ResiliencePipeline {
                    timeout
                    Before(work: before)
                    hedging
                }
                return Task { try await pipeline.execute { try await operation() } }
            }
            let pipeline = ResiliencePipeline {
                timeout
                hedging
            }
            return Task { try await pipeline.execute { try await operation() } }
        case .pipelineAttempt:
            let once = try RetryPolicy(maximumAttempts: 1, clock: clock)
            if let before {
                let pipeline = ResiliencePipeline {
                    once
                    timeout
                    Before(work: before)
                    hedging
                }
                return Task { try await pipeline.execute { try await operation() } }
            }
            let pipeline = ResiliencePipeline {
                once
                timeout
                hedging
            }
            return Task { try await pipeline.execute { try await operation() } }
        case .attemptLimit:
            let once = try RetryPolicy(maximumAttempts: 1, clock: late)
            return Task { try await once.execute(attemptTimeout: limit) { try await hedged() } }
        case .inALaterTimeout:
            let later = try Timeout(.seconds(100), name: "later", observer: events, clock: clock)
            return Task { try await timeout.execute { try await later.execute { try await hedged() } } }
        case .inAPassedLaterTimeout:
            let later = try Timeout(.seconds(5), name: "later", observer: events, clock: late)
            return Task { try await timeout.execute { try await later.execute { try await hedged() } } }
        }
    }

    /// Awaits `call`; each sleep it asks `clock` for past its first `requests` ones (a hedge's,
    /// sent after the deadline) is carried past the limits' late timers, so that the call ends
    /// either way.
    static func result(
        of call: Task<Void, any Error>, sleepingAfter requests: Int, on clock: TestClock
    ) async -> Result<Void, any Error> {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var seen = requests
                while true {
                    await clock.waitForSleepRequests(count: seen + 1)
                    // Returns early, cancelled, when the call ended without another sleep.
                    if Task.isCancelled { return }
                    seen += 1
                    clock.advance(by: .seconds(7_200))
                }
            }
            let result = await call.result
            group.cancelAll()
            return result
        }
    }

    /// The limit's error, as `nesting` reports it, holding `operationError` when it is given.
    static func expectLimitsTimeOut(
        _ result: Result<Void, any Error>, _ nesting: Nesting, events: EventLog, operationError: Bool,
        _ context: String
    ) {
        switch result {
        case .failure(let error as TimeoutError) where nesting != .attemptLimit:
            #expect(error.timeoutName == "limit", "\(context)")
            if operationError {
                // The later limit, which the jump passed too, ended the attempt; the earlier one keeps its end.
                let kept =
                    nesting == .inAPassedLaterTimeout
                    ? (error.operationError as? TimeoutError)?.operationError : error.operationError
                #expect(kept is TransientError, "\(context)")
            }
            #expect(events.kinds.values == [.timedOut], "\(context)")
        case .failure(let error as AttemptTimeoutError) where nesting == .attemptLimit:
            #expect(error.timeout == .seconds(2), "\(context)")
            if operationError { #expect(error.operationError is TransientError, "\(context)") }
        default:
            Issue.record("not the limit's time-out: \(context)")
        }
    }

    /// The hedge's timer wakes after the jump past the limit's deadline, the limit's timer still
    /// asleep: no hedge is sent, the attempt running is cancelled as the limit's timer would have
    /// cancelled it, and the limit ends the call with its time-out.
    @Test(arguments: Nesting.allCases)
    func aHedgeDueAfterTheLimitsDeadlineIsNotSent(nesting: Nesting) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let events = EventLog()
        let hedgeEvents = EventLog()
        let sends = Counter()
        let call = try Self.call(
            nesting, hedgeDelay: .seconds(1), late: late, clock: clock, events: events, hedgeEvents: hedgeEvents
        ) {
            sends.increment()
            try await clock.sleep(for: .seconds(60))
            throw TransientError()
        }
        // The limits' timers, the hedge's timer and the first attempt.
        await clock.waitForSleepers(count: nesting.limitTimers + 2)
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(10))  // past the hedge's delay and the deadline; the limit's timer sleeps on
        let result = await Self.result(of: call, sleepingAfter: requests, on: clock)
        let context = "\(nesting): \(result)"
        #expect(sends.value == 1, "\(context)")
        #expect(hedgeEvents.kinds.values.isEmpty, "\(context)")
        Self.expectLimitsTimeOut(result, nesting, events: events, operationError: false, context)
    }

    /// The first attempt fails after the jump past the limit's deadline, its timer still asleep,
    /// the hedge delay not passed: no replacement is sent, and the limit ends the call with its
    /// time-out, keeping the attempt's failure, as it does for a policy nested in it.
    @Test(arguments: Nesting.allCases)
    func aReplacementAfterTheLimitsDeadlineIsNotSent(nesting: Nesting) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let events = EventLog()
        let hedgeEvents = EventLog()
        let sends = Counter()
        let call = try Self.call(
            nesting, hedgeDelay: .seconds(30), late: late, clock: clock, events: events, hedgeEvents: hedgeEvents
        ) {
            if sends.increment() == 1 { try await clock.sleep(for: .seconds(5)) }
            throw TransientError()
        }
        await clock.waitForSleepers(count: nesting.limitTimers + 2)
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(10))  // past the deadline, before the hedge's delay
        let result = await Self.result(of: call, sleepingAfter: requests, on: clock)
        let context = "\(nesting): \(result)"
        #expect(sends.value == 1, "\(context)")
        Self.expectLimitsTimeOut(result, nesting, events: events, operationError: true, context)
    }

    /// A policy's deadline, handed down and bounding its attempt's limit, passed when the first
    /// attempt fails: no replacement is sent, and the policy stops at its deadline with that failure.
    @Test func aReplacementAfterAPolicysDeadlineIsNotSent() async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(30)), maximumHedges: 1, clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, deadline: .seconds(2), clock: late)
        let sends = Counter()
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(100)) {
                try await hedging.execute { () async throws -> Void in
                    if sends.increment() == 1 { try await clock.sleep(for: .seconds(5)) }
                    throw TransientError()
                }
            }
        }
        await clock.waitForSleepers(count: 3)  // the attempt's limit, the hedge's timer, the first attempt
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(10))
        let result = await Self.result(
            of: Task { try await call.value.result.get() }, sleepingAfter: requests, on: clock)
        let outcome = await call.value
        #expect(sends.value == 1, "\(result)")
        #expect(outcome.stopReason == .deadlineExceeded, "\(result)")
        #expect(outcome.attempts == 1, "\(result)")
    }

    /// The limit's deadline passes while the work before the hedged call runs (a sleep on the
    /// test clock), the limit's timer still asleep: the call's first attempt is not sent, and the
    /// limit ends the call with its time-out, as when its timer woke first, as before a hedge.
    @Test(arguments: Nesting.allCases)
    func aFirstAttemptAfterTheLimitsDeadlineIsNotSent(nesting: Nesting) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let events = EventLog()
        let hedgeEvents = EventLog()
        let sends = Counter()
        let workBefore: @Sendable () async throws -> Void = { try await clock.sleep(for: .seconds(5)) }
        let call = try Self.call(
            nesting, hedgeDelay: .seconds(1), late: late, clock: clock, events: events, hedgeEvents: hedgeEvents,
            before: workBefore
        ) {
            sends.increment()
        }
        // The limits' timers and the work before the hedged call.
        await clock.waitForSleepers(count: nesting.limitTimers + 1)
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(10))  // past the deadline; the limit's timer sleeps on
        let result = await Self.result(of: call, sleepingAfter: requests, on: clock)
        let context = "\(nesting): \(result)"
        #expect(sends.value == 0, "\(context)")
        #expect(hedgeEvents.kinds.values.isEmpty, "\(context)")
        Self.expectLimitsTimeOut(result, nesting, events: events, operationError: false, context)
    }

    /// Before the deadline, nothing changes: the hedge's timer wakes, the hedge is sent, and wins.
    @Test(arguments: Nesting.allCases)
    func aHedgeBeforeTheLimitsDeadlineIsSent(nesting: Nesting) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let hedgeEvents = EventLog()
        let sends = Counter()
        let call = try Self.call(
            nesting, hedgeDelay: .seconds(1), late: late, clock: clock, events: EventLog(), hedgeEvents: hedgeEvents
        ) {
            if sends.increment() == 1 { try await clock.sleep(for: .seconds(60)) }
        }
        await clock.waitForSleepers(count: nesting.limitTimers + 2)
        clock.advance(by: .seconds(1))  // the hedge's delay, before the deadline
        let result = await call.result
        #expect((try? result.get()) != nil, "\(nesting): \(result)")
        #expect(sends.value == 2, "\(nesting)")
        #expect(hedgeEvents.kinds.values == [.hedged], "\(nesting)")
    }
}

/// A pipeline stage that runs `work` before the stages inside it.
private struct Before: ResilienceStrategy {
    let work: @Sendable () async throws -> Void

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.work()
        return try await operation.run()
    }
}
