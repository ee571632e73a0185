import Foundation
import Resilience
import ResilienceTesting
import Testing

/// What a limiter's observer hears when a `Timeout` around a waiting caller and the wait's own
/// end both pass: the same whether the clock passes both in steps or in one jump.
@Suite(.timeLimit(.minutes(5)))
struct LimiterWaitInATimeoutEventTests {
    private static func hang() async throws {
        // Ends only when cancelled; sleeps on no clock.
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        for await _ in stream {}
        continuation.finish()
        try Task.checkCancellation()
    }

    private struct Story: Equatable {
        var event: LimiterRejectionError.Reason?
        var kept: LimiterRejectionError.Reason?
        var timedOut: Int
        var ran: Int
    }

    /// One queued caller in a bulkhead whose one slot is held; a `Timeout` of `timeout` around
    /// it, the queue's own timeout 5 s. Returns the reason of the limiter's last `rejected`
    /// event, the reason of the refusal the `TimeoutError` keeps (or the call's), and the
    /// `Timeout`'s `timedOut` events.
    private static func queued(under timeout: Duration, jump: Bool) async throws -> Story {
        let clock = TestClock()
        // On a jump the Timeout's watcher wakes an hour late, so that the queue's timer wakes
        // first (the wake order a jump leaves to chance, fixed here).
        let late = LateWakingClock(clock: clock, lag: jump ? .seconds(3_600) : .zero)
        let onTime = LateWakingClock(clock: clock, lag: .zero)
        let limiterEvents = StrategyEventRecorder()
        let timeoutEvents = StrategyEventRecorder()
        let limiter = try ConcurrencyLimiter(
            name: "bulkhead", limit: 1, queueLimit: 1, queueTimeout: .seconds(5), observer: limiterEvents,
            clock: onTime)
        let limit = try Timeout(timeout, name: "total", observer: timeoutEvents, clock: late)
        let ran = Counter()
        let ended = Counter()
        let holder = Task { try await limiter.execute { try await Self.hang() } }
        try await yieldUntil("the holder runs") { limiter.inFlight == 1 }
        let call = Task {
            defer { ended.increment() }
            return try await limit.execute {
                try await limiter.execute {
                    ran.increment()
                    return 1
                }
            }
        }
        try await yieldUntil("the caller queues") { limiterEvents.count(.queued) == 1 }
        await clock.waitForSleepers(count: 2)  // the Timeout's watcher and the queue's timer
        if jump {
            clock.advance(by: .seconds(20))  // past both deadlines in one move: the queue's timer wakes
        } else {
            clock.advance(by: Swift.min(timeout, .seconds(5)))  // the earlier deadline first
            try await yieldUntil("the call ends") { ended.value == 1 }
            clock.advance(by: .seconds(20))
        }
        let result = await call.result
        holder.cancel()
        _ = await holder.result
        let failure = result.failureValue
        let kept =
            ((failure as? TimeoutError)?.operationError as? LimiterRejectionError)?.reason
            ?? (failure as? LimiterRejectionError)?.reason
        let rejection = limiterEvents.all.last { $0.kind == .rejected }?.error as? LimiterRejectionError
        return Story(
            event: rejection?.reason, kept: kept, timedOut: timeoutEvents.count(.timedOut), ran: ran.value)
    }

    /// A 2 s `Timeout` around a 5 s queue timeout: stepped, the `Timeout` cuts the wait short;
    /// jumped with the queue's timer waking first, the limiter tells the same story, and the
    /// `Timeout` keeps that refusal.
    @Test func aJumpTellsTheConcurrencyLimitersObserverWhatStepsTellIt() async throws {
        let stepped = try await Self.queued(under: .seconds(2), jump: false)
        let jumped = try await Self.queued(under: .seconds(2), jump: true)
        #expect(stepped == Story(event: .waitCutShort, kept: .waitCutShort, timedOut: 1, ran: 0))
        #expect(jumped == stepped, "stepped \(stepped), jumped \(jumped)")
    }

    /// A 10 s `Timeout` around a 5 s queue timeout: the queue's timeout came first either way,
    /// and the limiter reports it, with no time-out from the `Timeout`.
    @Test func aQueueTimeoutThatCameFirstStaysATimeOutAfterAJump() async throws {
        let stepped = try await Self.queued(under: .seconds(10), jump: false)
        let jumped = try await Self.queued(under: .seconds(10), jump: true)
        #expect(stepped == Story(event: .queueTimedOut, kept: .queueTimedOut, timedOut: 0, ran: 0))
        #expect(jumped == stepped, "stepped \(stepped), jumped \(jumped)")
    }

    /// A caller waiting 10 s for a rate limiter's permit, in a 2 s `Timeout`. Stepped, the
    /// `Timeout` cuts the wait short. Jumped with the permit's wait waking first, the caller
    /// does not take the permit and run after the `Timeout`'s deadline passed: the wait is cut
    /// short as well.
    @Test(arguments: [false, true])
    func aRateLimitersWaitInATimeoutEndsAtTheTimeoutWhetherTheClockSteppedOrJumped(jump: Bool) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock, lag: jump ? .seconds(3_600) : .zero)
        let onTime = LateWakingClock(clock: clock, lag: .zero)
        let limiterEvents = StrategyEventRecorder()
        let timeoutEvents = StrategyEventRecorder()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(10)), name: "rate",
            maximumWait: .seconds(20), observer: limiterEvents, clock: onTime)
        let limit = try Timeout(.seconds(2), name: "total", observer: timeoutEvents, clock: late)
        _ = try await limiter.execute { 0 }  // the one permit
        let ran = Counter()
        let call = Task {
            try await limit.execute {
                try await limiter.execute {
                    ran.increment()
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the Timeout's watcher and the permit's wait
        clock.advance(by: jump ? .seconds(20) : .seconds(2))
        let result = await call.result
        let failure = result.failureValue
        let kept = ((failure as? TimeoutError)?.operationError as? LimiterRejectionError)?.reason
        let rejection = limiterEvents.all.last { $0.kind == .rejected }?.error as? LimiterRejectionError
        #expect(failure is TimeoutError, "jump \(jump): \(result)")
        #expect(ran.value == 0, "jump \(jump): the operation ran after the Timeout's deadline")
        #expect(kept == .waitCutShort && rejection?.reason == .waitCutShort, "jump \(jump)")
        #expect(timeoutEvents.count(.timedOut) == 1, "jump \(jump)")
    }
}

/// Timeouts.md: a call that nested time limits end sends one `timedOut` event when the limit
/// whose deadline came first is a `Timeout`; a policy's per-attempt limit has no
/// `StrategyObserver`: when it comes first, no `timedOut` event is sent, and the policy's
/// `RetryObserver` hears of the attempt's `AttemptTimeoutError`, whether the clock stepped or
/// jumped.
@Suite(.timeLimit(.minutes(5)))
struct NestedLimitEventTests {
    @Test(arguments: [false, true])
    func aPolicysAttemptLimitThatCameFirstSendsNoTimedOutEvent(jump: Bool) async throws {
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let log = RetryObserverLog()
        let inner = try Timeout(.seconds(5), name: "inner", observer: events, clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 1, observer: log, clock: clock)
        let call = Task {
            try await policy.execute(attemptTimeout: .seconds(2)) {
                try await inner.execute {
                    try await clock.sleep(for: .seconds(1_000))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 3)  // the attempt's timer, the Timeout's watcher, the operation
        clock.advance(by: jump ? .seconds(10) : .seconds(2))
        let result = await call.result
        #expect(result.failureValue is AttemptTimeoutError, "jump \(jump): \(result)")
        #expect(events.count(.timedOut) == 0, "jump \(jump): \(events.all.map(\.kind))")
        let failed = log.failed.withLock { $0 }
        #expect(failed.count == 1 && failed.allSatisfy { $0.error is AttemptTimeoutError }, "jump \(jump): \(failed)")
    }

    /// The other way round: the nested `Timeout`'s deadline first, its one `timedOut` event.
    @Test(arguments: [false, true])
    func aNestedTimeoutThatCameFirstSendsOneTimedOutEvent(jump: Bool) async throws {
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let inner = try Timeout(.seconds(2), name: "inner", observer: events, clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let call = Task {
            try await policy.execute(attemptTimeout: .seconds(5)) {
                try await inner.execute {
                    try await clock.sleep(for: .seconds(1_000))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 3)
        clock.advance(by: jump ? .seconds(10) : .seconds(2))
        let result = await call.result
        #expect(result.failureValue is TimeoutError, "jump \(jump): \(result)")
        #expect(events.count(.timedOut) == 1, "jump \(jump): \(events.all.map(\.kind))")
    }
}
