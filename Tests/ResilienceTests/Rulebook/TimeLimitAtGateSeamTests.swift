import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// One of the library's gates, made to hold its next caller: a bulkhead whose one slot a
/// parked call holds, with room in its queue, or a rate limiter whose one token is spent,
/// with a caller allowed to wait for the next.
struct HoldingGate: Sendable {
    enum Kind: CaseIterable, Sendable, CustomStringConvertible {
        case bulkhead
        case rateLimiter

        var description: String {
            switch self {
            case .bulkhead: "bulkhead"
            case .rateLimiter: "rateLimiter"
            }
        }
    }

    /// The rate limiter's period: far beyond every time limit in these tests.
    static let refill: Duration = .seconds(60)

    let kind: Kind
    let bulkhead: ConcurrencyLimiter?
    let rateLimiter: RateLimiter?
    let events: EventCounter
    let gate: Gate?
    let holder: Task<Void, any Error>?

    static func make(_ kind: Kind, clock: TestClock) async throws -> HoldingGate {
        let events = EventCounter()
        switch kind {
        case .bulkhead:
            let limiter = try ConcurrencyLimiter(
                name: "bulkhead", limit: 1, queueLimit: 4, observer: events, clock: clock)
            let gate = Gate()
            let holder = Task { try await limiter.execute { await gate.wait() } }
            await gate.waitForWaiters(count: 1)
            return HoldingGate(
                kind: kind, bulkhead: limiter, rateLimiter: nil, events: events, gate: gate, holder: holder)
        case .rateLimiter:
            let limiter = try RateLimiter(
                .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: Self.refill), name: "rate",
                maximumWait: .seconds(600), clock: clock)
            _ = try await limiter.execute { 0 }
            return HoldingGate(
                kind: kind, bulkhead: nil, rateLimiter: limiter, events: events, gate: nil, holder: nil)
        }
    }

    nonisolated(nonsending) func call<Value>(_ operation: () async throws -> Value) async throws -> Value {
        switch self.kind {
        case .bulkhead: try await self.bulkhead!.execute(operation: operation)
        case .rateLimiter: try await self.rateLimiter!.execute(operation: operation)
        }
    }

    /// Returns once the `count`th caller waits at the gate and `timers` other sleepers (the
    /// time limits' timers) sleep on `clock`.
    func waitUntilCallerWaits(_ count: Int = 1, timers: Int, clock: TestClock) async {
        switch self.kind {
        case .bulkhead:
            await self.events.waitFor(.queued, count: count)
            await clock.waitForSleepers(count: timers)
        case .rateLimiter:
            await clock.waitForSleepers(count: timers + 1)
        }
    }

    /// Lets the parked call finish, for a bulkhead.
    func release() async throws {
        self.gate?.open()
        try await self.holder?.value
    }
}

/// A time limit that fires while its call still waits at one of the library's gates inside
/// it ended a call that provably never left: it reports ``RequestDelivery/notSent``, a
/// breaker does not count it, and a call that is not idempotent may be tried again.
@Suite("A time limit that fires while the call waits at a gate reports it as not sent", .timeLimit(.minutes(1)))
struct TimeLimitAtGateSeamTests {
    static func breaker(clock: TestClock) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "dependency", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)), clock: clock)
    }

    @Test("A Timeout around a waiting call reports it as not sent", arguments: HoldingGate.Kind.allCases)
    func aTimeoutAroundAWaitingCallReportsItAsNotSent(kind: HoldingGate.Kind) async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(kind, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let ran = Counter()
        let call = Task {
            try await timeout.execute(idempotency: .notIdempotent) { try await gate.call { ran.increment() } }
        }
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .notSent)
        #expect(error.requestIdempotency == .notIdempotent)
        let analysis = FailureAnalysis(error)
        #expect(analysis.interruption == .timeLimit)
        #expect(analysis.delivery == .notSent)
        #expect(analysis.isLocalRejection)
        #expect(Rulebook.countsAsFailure(analysis) == false)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == nil, "a POST may go again")
        #expect(ran.value == 0)
        try await gate.release()
        if kind == .rateLimiter { clock.advance(by: HoldingGate.refill) }
        #expect(try await timeout.execute { try await gate.call { 5 } } == 5, "the place it waited for was not lost")
    }

    @Test(
        "A breaker around a Timeout does not count a call that timed out at a gate, in any shape",
        arguments: HoldingGate.Kind.allCases, LocalRejectionShape.all)
    func aBreakerAroundATimeoutDoesNotCountIt(kind: HoldingGate.Kind, shape: LocalRejectionShape) async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(kind, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let breaker = try Self.breaker(clock: clock)
        let call = Task {
            try await breaker.execute {
                do {
                    return try await timeout.execute { try await gate.call { 1 } }
                } catch {
                    throw shape.wrap(error)
                }
            }
        }
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))
        await #expect(throws: (any Error).self) { try await call.value }
        #expect(breaker.state == .closed, "\(kind), \(shape)")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        try await gate.release()
    }

    @Test(
        "A breaker inside a Timeout does not count a call that timed out at a gate inside it",
        arguments: HoldingGate.Kind.allCases)
    func aBreakerInsideATimeoutDoesNotCountIt(kind: HoldingGate.Kind) async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(kind, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let breaker = try Self.breaker(clock: clock)
        let call = Task { try await timeout.execute { try await breaker.execute { try await gate.call { 1 } } } }
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .notSent)
        #expect(breaker.state == .closed, "\(kind)")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        try await gate.release()
    }

    @Test(
        "A pipeline's breaker does not count a call its Timeout stage ended at a gate stage",
        arguments: HoldingGate.Kind.allCases, [true, false])
    func aPipelinesBreakerDoesNotCountIt(kind: HoldingGate.Kind, breakerOutside: Bool) async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(kind, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let breaker = try Self.breaker(clock: clock)
        let stage = GateStage(gate: gate)
        let call = Task {
            if breakerOutside {
                let pipeline = ResiliencePipeline {
                    breaker
                    timeout
                    stage
                }
                return try await pipeline.execute { 1 }
            }
            let pipeline = ResiliencePipeline {
                timeout
                breaker
                stage
            }
            return try await pipeline.execute { 1 }
        }
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .notSent)
        #expect(breaker.state == .closed, "\(kind), breaker outside: \(breakerOutside)")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        try await gate.release()
    }

    @Test(
        "A POST whose attempt timed out while waiting at a gate is retried",
        arguments: HoldingGate.Kind.allCases)
    func aPOSTWhoseAttemptTimedOutAtAGateIsRetried(kind: HoldingGate.Kind) async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(kind, clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let ran = Counter()
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1), idempotency: .http(method: "POST")) {
                try await gate.call { ran.increment() }
            }
        }
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))  // the first attempt's limit fires while it waits
        // The attempt's timer, the rate limiter's wait, then the backoff.
        await clock.waitForSleepRequests(count: kind == .bulkhead ? 2 : 3)
        try await gate.release()
        // The backoff passes; for the rate limiter, so does the time to its next permit.
        clock.advance(by: kind == .bulkhead ? .seconds(1) : HoldingGate.refill)
        let outcome = await call.value
        #expect(outcome.attempts == 2)
        #expect(outcome.stopReason == .succeeded)
        #expect(ran.value == 1)
    }

    @Test("A time limit through nested gates reports the call waiting at the inner one as not sent")
    func aTimeLimitThroughNestedGatesReportsNotSent() async throws {
        let clock = TestClock()
        let outer = try ConcurrencyLimiter(name: "outer", limit: 4, clock: clock)
        let inner = try await HoldingGate.make(.bulkhead, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task { try await timeout.execute { try await outer.execute { try await inner.call { 1 } } } }
        await inner.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .notSent, "the outer gate let it through; the inner one held it")
        #expect(outer.inFlight == 0)
        try await inner.release()
    }

    // MARK: - What may have left stays so

    @Test("A time limit that fires once the call is past the gate reports it as possibly sent")
    func aLimitPastTheGateReportsPossiblySent() async throws {
        let clock = TestClock()
        let limiter = try ConcurrencyLimiter(name: "bulkhead", limit: 1, queueLimit: 4, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let breaker = try Self.breaker(clock: clock)
        let running = Gate()
        let call = Task {
            try await breaker.execute {
                try await timeout.execute {
                    try await limiter.execute {
                        await running.wait()
                        try Task.checkCancellation()
                        return 1
                    }
                }
            }
        }
        await running.waitForWaiters(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        running.open()
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .mayHaveBeenSent)
        #expect(breaker.state == .open, "the dependency may have been working on it")
    }

    @Test("A wait at a gate after an attempt that may have left is not the call's first step")
    func aWaitAfterARetriedAttemptReportsPossiblySent() async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(.bulkhead, clock: clock)
        let timeout = try Timeout(.seconds(30), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let first = Counter()
        let call = Task {
            try await timeout.execute {
                try await policy.execute {
                    // The first attempt reaches the dependency and fails; the second waits at the gate.
                    if first.increment() == 1 { throw URLError(.networkConnectionLost) }
                    return try await gate.call { 1 }
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the timeout's watcher and the backoff
        clock.advance(by: .seconds(1))
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(29))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .mayHaveBeenSent)
        try await gate.release()
    }

    @Test("A wait at a gate in a fallback's answer, after a failure that may have left, is not the first step")
    func aWaitInAFallbacksAnswerReportsPossiblySent() async throws {
        let clock = TestClock()
        let gate = try await HoldingGate.make(.bulkhead, clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let fallback = Fallback<Int> { _ in try await gate.call { 2 } }
        let call = Task {
            try await timeout.execute {
                try await fallback.execute { () async throws -> Int in throw URLError(.networkConnectionLost) }
            }
        }
        await gate.waitUntilCallerWaits(timers: 1, clock: clock)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .mayHaveBeenSent)
        try await gate.release()
    }

    // MARK: - The signal's reading

    @Test func aLimitReadsTheGatesAsItFires() {
        let waiting = TimeLimitSignal()
        TimeLimitSignal.enterGate(from: waiting)
        waiting.fire()
        #expect(waiting.firedBeforeSending)
        #expect(TimeLimitSignal.leaveGate(from: waiting), "a gate that admits the call now must not run it")

        let idle = TimeLimitSignal()
        idle.fire()
        #expect(!idle.firedBeforeSending, "nothing waited at a gate: the call was running")

        let marked = TimeLimitSignal()
        TimeLimitSignal.markMayHaveSent(from: marked)
        TimeLimitSignal.enterGate(from: marked)
        #expect(marked.claim())
        #expect(!marked.firedBeforeSending, "something inside may already have sent it")

        let left = TimeLimitSignal()
        TimeLimitSignal.enterGate(from: left)
        #expect(!TimeLimitSignal.leaveGate(from: left))
        left.fire()
        #expect(!left.firedBeforeSending, "the call was let through before the limit fired")
    }

    @Test func aWaitCountsInEveryEnclosingLimit() {
        let outer = TimeLimitSignal()
        let inner = TimeLimitSignal(enclosing: outer)
        TimeLimitSignal.enterGate(from: inner)
        outer.fire()
        #expect(outer.firedBeforeSending)
        #expect(!inner.hasFired)
        #expect(TimeLimitSignal.leaveGate(from: inner), "the outer limit fired")
        #expect(TimeLimitSignal.allFiredBeforeSending(from: inner))
        inner.fire()
        #expect(!TimeLimitSignal.allFiredBeforeSending(from: inner), "the inner one fired with no call waiting")
    }
}

/// A pipeline stage that runs the rest of the pipeline through a holding gate.
struct GateStage: ResilienceStrategy {
    let gate: HoldingGate

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.gate.call { try await operation.run() }
    }
}
