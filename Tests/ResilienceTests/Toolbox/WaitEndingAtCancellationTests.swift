import Resilience
import ResilienceTesting
import Testing

/// A caller cancelled just as its wait ends (the wait over, its task not yet run on) sends
/// nothing. On any real clock a wait's end and the caller's cancellation can come together, and
/// on a busy machine the caller's task may run on only after both: the operation must not start
/// then for a caller that has already left.
///
/// The callers run on ``HeldCaller``, or prefer a ``HeldTaskExecutor`` for their nonisolated
/// code, whose jobs run only when the test runs them, so the test cancels between the wait's end
/// and the caller's next step every time; or they sleep on a ``CancellingAtWakeClock``. The
/// retry and hedging tests guard waits that already check as they end.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct WaitEndingAtCancellationTests {
    @Test func aRateLimiterCallerCancelledAsItsWaitEndsTakesNoPermitAndSendsNothing() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(2)), maximumWait: .seconds(30),
            clock: clock)
        _ = try await limiter.execute { 0 }  // the only token, spent until t = 2
        let sends = Counter()
        let ended = Counter()
        let call = Task { @HeldCaller in
            defer { ended.increment() }
            return try await limiter.execute { @HeldCaller in sends.increment() }
        }
        await HeldCaller.executor.runOne()  // the caller finds no permit and waits
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(2))  // the wait ends...
        await HeldCaller.executor.waitForJob()  // ...and the caller's task is ready to run on
        call.cancel()
        await HeldCaller.executor.run { ended.value == 1 }

        #expect(await call.result.failureValue is CancellationError)
        #expect(sends.value == 0, "the operation ran for a caller that had left")
        // The permit the wait was for is still there: the next caller takes it without waiting.
        try await expectNextCallerTakesAPermitAtOnce(limiter, clock, "the cancelled one took the permit")
    }

    @Test func aBulkheadCallerCancelledAsItIsHandedASlotSendsNothingAndPassesTheSlotOn() async throws {
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 4)
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        try await yieldUntil("the holder took the slot") { limiter.inFlight == 1 }
        let sends = Counter()
        let ended = Counter()
        let call = Task { @HeldCaller in
            defer { ended.increment() }
            return try await limiter.execute { @HeldCaller in sends.increment() }
        }
        await HeldCaller.executor.runOne()  // the caller queues
        #expect(limiter.queued == 1)
        gate.open()  // the holder ends and hands its slot to the queued caller...
        await HeldCaller.executor.waitForJob()  // ...whose task is ready to run on
        #expect(limiter.queued == 0 && limiter.inFlight == 1, "the slot was handed over")
        call.cancel()
        await HeldCaller.executor.run { ended.value == 1 }
        _ = try await holder.value

        #expect(await call.result.failureValue is CancellationError)
        #expect(sends.value == 0, "the operation ran for a caller that had left")
        #expect(limiter.inFlight == 0 && limiter.queued == 0, "the slot was not given back")
        #expect(try await limiter.execute { 7 } == 7)
    }

    @Test func aRateLimitGateCallerCancelledAsItsWaitEndsGetsNoTicket() async throws {
        let base = TestClock()
        let gate = try RateLimitGate(maximumWait: .seconds(30), clock: CancellingAtWakeClock(base))
        gate.record(headers: ["RateLimit": #""minute";r=0;t=10"#])
        let call = Task { try await gate.acquire() }
        await base.waitForSleepers(count: 1)
        base.advance(by: .seconds(10))
        #expect(await call.result.failureValue is CancellationError, "a ticket for a caller that had left")
    }

    // MARK: - Guards: waits that already check as they end

    /// A policy whose backoff before a retry ends as the caller is cancelled.
    static func retryingPolicy(_ clock: some Clock<Duration>) throws -> RetryPolicy {
        try RetryPolicy(
            name: "p", maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
    }

    @Test func aRetryCallerCancelledAsItsBackoffEndsSendsNoRetry() async throws {
        let clock = TestClock()
        let policy = try Self.retryingPolicy(clock)
        let sends = Counter()
        let ended = Counter()
        let call = Task { @HeldCaller in
            defer { ended.increment() }
            return try await policy.execute { @HeldCaller () throws -> Int in
                sends.increment()
                throw TransientError()
            }
        }
        // The first attempt fails, and the caller sleeps out the backoff (the clock's sleep runs
        // off the held actor).
        try await HeldCaller.executor.runJobs(until: "the backoff is asleep") { clock.sleeperCount > 0 }
        clock.advance(by: .seconds(1))  // the backoff ends...
        await HeldCaller.executor.waitForJob()  // ...and the caller's task is ready to run on
        call.cancel()
        await HeldCaller.executor.run { ended.value == 1 }

        #expect(await call.result.failureValue is CancellationError)
        #expect(sends.value == 1, "a retry went out for a caller that had left")
    }

    @Test func aRetryCallerCancelledAsItsBackoffSleepReturnsSendsNoRetry() async throws {
        let base = TestClock()
        let policy = try Self.retryingPolicy(CancellingAtWakeClock(base))
        let sends = Counter()
        let call = Task {
            try await policy.execute { () throws -> Int in
                sends.increment()
                throw TransientError()
            }
        }
        await base.waitForSleepers(count: 1)
        base.advance(by: .seconds(1))
        #expect(await call.result.failureValue is CancellationError)
        #expect(sends.value == 1, "a retry went out for a caller that had left")
    }

    @Test func aHedgedCallerCancelledAsTheHedgeDelayEndsStartsNoHedge() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let gate = Gate()
        let starts = Counter()
        let ended = Counter()
        // The call's loop and its attempts run nonisolated, here on the held task executor.
        let executor = HeldTaskExecutor()
        let call = Task(executorPreference: executor) {
            defer { ended.increment() }
            return try await hedging.execute { @Sendable () async -> Int in
                starts.increment()
                await gate.wait()
                return 1
            }
        }
        // The first attempt runs and waits; the call arms the hedge delay's timer and waits for
        // its next event. The timer sleeps in a task of its own, off the held executor.
        try await executor.runJobs(until: "the hedge timer is asleep and no job is held") {
            clock.sleeperCount == 1 && executor.pending == 0
        }
        #expect(starts.value == 1)
        clock.advance(by: .seconds(1))  // the delay ends...
        await executor.waitForJob()  // ...and the caller's task is ready to run on
        call.cancel()
        gate.open()
        await executor.run { ended.value == 1 }
        // A hedge started now would have its first job held here.
        while executor.pending > 0 { await executor.runOne() }

        #expect(ended.value == 1, "the call did not end")
        #expect(starts.value == 1, "a hedge started for a caller that had left")
    }

    @Test func aRecoveryCallerCancelledAsTheRefreshAnswersGetsNoCredential() async throws {
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old") { _ in
            await gate.wait()
            return "new"
        }
        let stale = recovery.current
        let executor = HeldTaskExecutor()
        let ended = Counter()
        let call = Task(executorPreference: executor) {
            defer { ended.increment() }
            return try await recovery.recover(after: stale).credential
        }
        await executor.runOne()  // the caller starts the refresh and waits for it
        try await yieldUntil("the refresh started") { gate.waiting == 1 }
        gate.open()  // the refresh answers...
        await executor.waitForJob()  // ...and the caller's task is ready to run on
        call.cancel()
        await executor.run { ended.value == 1 }

        #expect(await call.result.failureValue is CancellationError, "a credential for a caller that had left")
        #expect(recovery.current.credential == "new", "the refresh is kept for the other callers")
    }

    @Test func aRecoveringPolicyCallerCancelledAsTheRefreshAnswersSendsNoRetry() async throws {
        let clock = TestClock()
        let policy = try Self.retryingPolicy(clock)
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in
            await gate.wait()
            return "new"
        }
        let sends = Counter()
        let ended = Counter()
        let executor = HeldTaskExecutor()
        let call = Task(executorPreference: executor) {
            defer { ended.increment() }
            return try await policy.execute(recovering: recovery) { token in
                sends.increment()
                return try await RefreshedTokenAPI.operation(token)
            }
        }
        // The first request is refused; the call starts the refresh and waits for it.
        while gate.waiting == 0 {
            try await yieldUntil("a held job, or the refresh started") { executor.pending > 0 || gate.waiting == 1 }
            if executor.pending > 0 { await executor.runOne() }
        }
        gate.open()  // the refresh answers...
        await executor.waitForJob()  // ...and the caller's task is ready to run on
        call.cancel()
        await executor.run { ended.value == 1 }

        #expect(await call.result.failureValue is CancellationError)
        #expect(sends.value == 1, "the refreshed request went out for a caller that had left")
    }
}

/// Expects that a caller of `limiter` (a token bucket refilling within 2 s on `clock`) takes a
/// permit without waiting; a caller that did wait is let go, so the test ends either way.
func expectNextCallerTakesAPermitAtOnce(
    _ limiter: RateLimiter, _ clock: TestClock, _ otherwise: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let ended = Counter()
    let next = Task {
        defer { ended.increment() }
        return try await limiter.execute { 7 }
    }
    try await yieldUntil("the next caller ended or waited") { ended.value == 1 || clock.sleeperCount == 1 }
    #expect(clock.sleeperCount == 0, "the next caller waited: \(otherwise)", sourceLocation: sourceLocation)
    clock.advance(by: .seconds(2))  // lets a next caller that waited go
    #expect(try await next.value == 7, sourceLocation: sourceLocation)
}

/// A clock whose sleeps, once they have run their full length, cancel the sleeping task before
/// they return: the caller cancelled as its wait ended, whatever thread runs it on.
private struct CancellingAtWakeClock: Clock {
    typealias Instant = TestClock.Instant

    let base: TestClock

    init(_ base: TestClock) { self.base = base }

    var now: Instant { self.base.now }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await self.base.sleep(until: deadline, tolerance: tolerance)
        withUnsafeCurrentTask { $0?.cancel() }
    }
}

/// A global actor whose jobs run only when a test runs them (``ManualExecutor``).
@globalActor
private actor HeldCaller {
    static let shared = HeldCaller()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
