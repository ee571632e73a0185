import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// A limiter's wait that ends as something else ends the call: the caller's cancellation after
/// its queue deadline passed, or an enclosing ``Timeout`` that fires as the slot is handed over
/// or the permit frees. The operation never runs, what the caller took goes to the next one,
/// and a time limit's end stays the limit's (``LimiterRejectionError/Reason/waitCutShort``).
///
/// The callers run on ``LimitHeldCaller``, whose jobs run only when the test runs them, so the
/// test makes each event happen between the wait's end and the caller's next step.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct WaitEndingAtALimitTests {
    @Test func aSlotHandedToACallerCancelledPastItsQueueDeadlineGoesToTheNextQueuedCaller() async throws {
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let limiter = try ConcurrencyLimiter(
            limit: 1, queueLimit: 4, queueTimeout: .seconds(5), observer: events, clock: clock)
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        try await yieldUntil("the holder took the slot") { limiter.inFlight == 1 }
        let sends = Counter()
        let ended = Counter()
        let first = Task { @LimitHeldCaller in
            defer { ended.increment() }
            return try await limiter.execute { @LimitHeldCaller in sends.increment() }
        }
        try await LimitHeldCaller.executor.runJobs(until: "the first caller queued") { limiter.queued == 1 }
        await clock.waitForSleepers(count: 1)  // its queue timer
        clock.advance(by: .seconds(1))
        let secondRan = Counter()
        let second = Task { try await limiter.execute { secondRan.increment() } }
        try await yieldUntil("the second caller queued") { limiter.queued == 2 }
        await clock.waitForSleepers(count: 2)
        gate.open()  // the holder hands its slot to the first caller...
        await LimitHeldCaller.executor.waitForJob()  // ...whose task is ready to run on
        #expect(limiter.queued == 1 && limiter.inFlight == 1, "the slot was handed over")
        clock.advance(by: .seconds(4))  // the first caller's queue deadline passes after the grant
        try await yieldUntil("the first caller's timer woke") { clock.sleeperCount == 1 }
        first.cancel()
        await LimitHeldCaller.executor.run { ended.value == 1 }
        try await yieldUntil("the second caller ran") { secondRan.value == 1 }
        _ = try await holder.value
        _ = try await second.value

        #expect(await first.result.failureValue is CancellationError)
        #expect(sends.value == 0, "the operation ran for a caller that had left")
        #expect(limiter.inFlight == 0 && limiter.queued == 0, "the slot was counted twice or kept")
        #expect(events.count(.queued) == 2)
        #expect(events.count(.rejected) == 0, "events: \(events.all.map(\.kind))")
    }

    @Test func aTimeoutFiringAsTheBulkheadHandsOverTheSlotEndsTheWaitCutShort() async throws {
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 4, observer: events, clock: clock)
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        try await yieldUntil("the holder took the slot") { limiter.inFlight == 1 }
        let call = LimitedCall(timeout: try Timeout(.seconds(1), clock: clock)) { send in
            try await limiter.execute { @LimitHeldCaller in send() }
        }
        try await LimitHeldCaller.executor.runJobs(until: "the caller queued") { limiter.queued == 1 }
        await clock.waitForSleepers(count: 1)  // the timeout's timer
        gate.open()  // the slot is handed to the caller...
        await LimitHeldCaller.executor.waitForJob()  // ...whose task is ready to run on
        clock.advance(by: .seconds(1))  // and the time limit fires
        let result = try await call.end()
        _ = try await holder.value

        call.expectWaitCutShort(result)
        #expect(limiter.inFlight == 0 && limiter.queued == 0, "the slot was not given back")
        #expect(events.count(.rejected) == 1)
    }

    @Test func aTimeoutFiringAsTheRateLimitersWaitEndsEndsTheWaitCutShort() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(2)), maximumWait: .seconds(30),
            clock: clock)
        _ = try await limiter.execute { 0 }  // the only token, spent until t = 2
        let call = LimitedCall(timeout: try Timeout(.seconds(2), clock: clock)) { send in
            try await limiter.execute { @LimitHeldCaller in send() }
        }
        // The limiter's wait and the timeout's timer.
        try await LimitHeldCaller.executor.runJobs(until: "the caller waits") { clock.sleeperCount == 2 }
        clock.advance(by: .seconds(2))  // the wait ends as the time limit fires
        let result = try await call.end()

        call.expectWaitCutShort(result)
        #expect(limiter.storage.waiters.load(ordering: .sequentiallyConsistent) == 0)
        // The permit the wait was for is still there: the next caller takes it without waiting.
        try await expectNextCallerTakesAPermitAtOnce(limiter, clock, "the permit was taken")
    }
}

/// A call through a ``Timeout`` to a limiter on ``LimitHeldCaller``, which keeps the error the
/// limiter ended with and counts the operation's sends and the time limit's cancellation.
private final class LimitedCall: Sendable {
    let sends = Counter()
    private let cancelled = Counter()
    private let ended = Counter()
    private let limiterError = Lock<(any Error)?>(nil)
    private let task = Lock<Task<Void, any Error>?>(nil)

    init(
        timeout: Timeout,
        _ limited: @escaping @LimitHeldCaller @Sendable (_ send: @Sendable () -> Void) async throws -> Void
    ) {
        let (sends, cancelled, ended, limiterError) = (self.sends, self.cancelled, self.ended, self.limiterError)
        let task = Task {
            defer { ended.increment() }
            try await timeout.execute { @LimitHeldCaller in
                try await withTaskCancellationHandler {
                    do {
                        try await limited { sends.increment() }
                    } catch {
                        limiterError.withLock { $0 = error }
                        throw error
                    }
                } onCancel: {
                    cancelled.increment()
                }
            }
        }
        self.task.withLock { $0 = task }
    }

    /// Waits for the time limit to cancel the operation, runs the caller's jobs to the call's
    /// end, and returns its result.
    func end() async throws -> Result<Void, any Error> {
        try await yieldUntil("the time limit cancelled the operation") { self.cancelled.value == 1 }
        try await LimitHeldCaller.executor.runJobs(until: "the call ended") { self.ended.value == 1 }
        return await self.task.withLock { $0 }!.result
    }

    /// Expects that nothing was sent, that the limiter ended its wait as cut short, and that the
    /// time limit's error keeps that as its operation's error.
    func expectWaitCutShort(_ result: Result<Void, any Error>) {
        #expect(self.sends.value == 0, "the operation ran after the time limit had fired")
        let inner = self.limiterError.withLock { $0 }
        #expect((inner as? LimiterRejectionError)?.reason == .waitCutShort, "inner: \(String(describing: inner))")
        guard case .failure(let error) = result, let timeoutError = error as? TimeoutError else {
            Issue.record("the call ended with \(result), not a time-out")
            return
        }
        #expect(
            (timeoutError.operationError as? LimiterRejectionError)?.reason == .waitCutShort,
            "late: \(String(describing: timeoutError.operationError))")
    }
}

/// A global actor whose jobs run only when a test runs them (``ManualExecutor``).
@globalActor
private actor LimitHeldCaller {
    static let shared = LimitHeldCaller()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
