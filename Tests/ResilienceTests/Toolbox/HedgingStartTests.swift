import ResilienceTesting
import Testing

@testable import Resilience

/// How ``Hedging`` starts a call's first attempt: at once, on the caller's thread when the
/// caller already runs where the attempt must, with nothing watched when the attempt ends
/// before it first suspends, and with the hedge due a delay after the call started.
///
/// The executor test runs the caller on ``HeldCaller``, whose jobs run only when the test
/// runs them, so a hop (a job enqueued on the caller's executor) shows as a job left over.
/// The suite has a time limit because a hedge armed too late leaves a call waiting for a
/// clock that no one moves: a wrong start then fails the test instead of hanging the run.
@Suite("Hedging start", .serialized, .timeLimit(.minutes(5)))
struct HedgingStartTests {
    @Test func aFirstAttemptThatReturnsWithoutSuspendingLeavesTheWatcherUntouched() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(5)), clock: TestClock())
        #expect(try await hedging.execute { 42 } == 42)
        // No hedge was armed, so no watcher task was ever started.
        #expect(isIdle(hedging.watcher.phase))
        #expect(hedging.calls.withLock { $0.count } == 0)
    }

    @Test func aCallerOnAnActorRunsAFirstAttemptThatDoesNotSuspendWithoutAHop() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(5)), clock: TestClock())
        let returned = Counter()
        let call = Task { @HeldCaller in
            let value = try await hedging.execute { @HeldCaller in
                HeldCaller.shared.assertIsolated()
                return 42
            }
            _ = returned.increment()
            return value
        }
        await HeldCaller.executor.runOne()  // the caller's task: the whole call, with no job left
        #expect(returned.value == 1)
        #expect(HeldCaller.executor.pending == 0)
        await HeldCaller.executor.run { returned.value > 0 }
        #expect(try await call.value == 42)
    }

    @Test func aCallerAlreadyCancelledStartsItsFirstAttemptCancelled() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(5)), clock: TestClock())
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await hedging.execute { Task.isCancelled }
        }
        #expect(try await call.value)
    }

    @Test func theHedgeIsDueTheDelayAfterTheCallStartedThoughTheFirstAttemptSuspendsLater() async throws {
        // The first attempt runs on the caller's thread until it first suspends, and the call
        // can start no hedge meanwhile. Its two seconds of synchronous work (the clock moved
        // by hand) outlast the delay of one, so the hedge is due as soon as it suspends.
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let value = try await hedging.execute { () async throws -> String in
            if attempts.increment() == 1 {
                clock.advance(by: .seconds(2))
                try await clock.sleep(for: .seconds(10))
                return "first"
            }
            return "hedge"
        }
        #expect(value == "hedge")
        #expect(attempts.value == 2)
        // Due when it was registered: the watcher never slept for it.
        #expect(clock.sleepRequests == [.seconds(10)])
        #expect(clock.sleeperCount == 0)  // the loser was cancelled
    }
    @Test func callerCancellationReachesTheFirstAttemptWhileItRunsSynchronously() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(30)), clock: TestClock())
        let work = SpinningAttempt()
        let call = Task { try await hedging.execute { @DedicatedThread in try work.loop() } }
        await work.started.wait()
        // The attempt spins on its thread (never a cooperative-pool thread, which the test
        // needs), before its first suspension. The caller's
        // cancellation handler runs here, in `cancel()`, so the attempt is cancelled by the
        // time it returns; the stop only ends the spin when cancellation never arrived.
        call.cancel()
        work.stop()
        _ = try? await call.value
        #expect(work.sawCancellation == true)
    }

    @Test func anEnclosingTimeLimitReachesTheFirstAttemptWhileItRunsSynchronously() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(30)), clock: clock)
        let work = SpinningAttempt()
        let call = Task {
            try await timeout.execute {
                try await hedging.execute { @DedicatedThread in try work.loop() }
            }
        }
        await work.started.wait()
        // Due just after the limit, on the same watcher: ends the spin when the limit's
        // cancellation never reached the attempt.
        _ = timeout.watcher.register(.seconds(1) + .nanoseconds(1), StopSpinning(work: work))
        clock.advance(by: .seconds(2))
        _ = try? await call.value
        #expect(work.sawCancellation == true)
    }
}

/// Stops a ``SpinningAttempt`` when its deadline passes.
private struct StopSpinning: DeadlineExpiry {
    let work: SpinningAttempt
    func deadlineReached() { self.work.stop() }
}

/// An attempt that spins without suspending until it is cancelled or stopped, and records
/// whether it saw its cancellation.
private final class SpinningAttempt: Sendable {
    let started = Gate()
    private let stopped = Lock(false)
    private let cancelled = Lock<Bool?>(nil)

    var sawCancellation: Bool? { self.cancelled.withLock { $0 } }

    func stop() { self.stopped.withLock { $0 = true } }

    func loop() throws -> Int {
        self.started.open()
        while !self.stopped.withLock({ $0 }), !Task.isCancelled {}
        let cancelled = Task.isCancelled
        self.cancelled.withLock { $0 = cancelled }
        return 42
    }
}

private func isIdle(_ phase: DeadlineWatcherState.Watcher) -> Bool {
    if case .none = phase { return true }
    return false
}

/// A global actor whose jobs run only when a test runs them, counted as they wait.
@globalActor
private actor HeldCaller {
    static let shared = HeldCaller()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
