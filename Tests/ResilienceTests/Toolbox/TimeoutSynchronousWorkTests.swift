import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A ``Timeout`` reaches an operation that works synchronously, before its first
/// suspension, on the caller's thread: the limit and the caller's cancellation cancel
/// it there, so work that checks for cancellation stops.
///
/// Each operation here never suspends. It loops on its thread until it sees
/// cancellation or until the test raises a stop flag; the test raises the flag only
/// after the cancellation would have reached the operation (the watcher has handled
/// the deadline, or the caller's `cancel()` has returned), so the operation then tells
/// whether it was cancelled, and a timeout that failed to cancel it still ends. A loop
/// runs on the main thread for a main-actor caller and on a thread of its own
/// (``DedicatedThread``) otherwise, never on the cooperative pool, whose few threads
/// (two on a 2-core machine) the watcher, the test and every test beside it need.
@Suite("Timeout and synchronous work", .serialized)
struct TimeoutSynchronousWorkTests {
    struct OwnError: Error {}

    /// Where the call comes from.
    enum Caller: CaseIterable, Sendable {
        case nonisolated
        case mainActor
    }

    @Test(arguments: Caller.allCases)
    func synchronousWorkThatChecksForCancellationStopsAtTheDeadline(from caller: Caller) async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let work = SynchronousWork()
        let call = work.call(timeout, from: caller) { try work.loop(checkingCancellation: true) }
        await work.started.wait()
        passTheDeadline(of: timeout.watcher, clock, raising: work.stop)
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(work.wasCancelled == true)
    }

    @Test(arguments: Caller.allCases)
    func synchronousWorkThatChecksForCancellationStopsWhenTheCallerIsCancelled(from caller: Caller) async throws {
        let timeout = try Timeout(.seconds(60), clock: TestClock())
        let work = SynchronousWork()
        let call = work.call(timeout, from: caller) { try work.loop(checkingCancellation: true) }
        await work.started.wait()
        call.cancel()  // the cancellation reaches the operation before this returns
        work.stop.raise()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(work.wasCancelled == true)
    }

    @Test func synchronousWorkThatIgnoresCancellationKeepsTheValueItReturns() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let work = SynchronousWork()
        let call = Task { try await timeout.execute { @DedicatedThread in try work.loop(checkingCancellation: false) } }
        await work.started.wait()
        passTheDeadline(of: timeout.watcher, clock, raising: work.stop)
        #expect(try await call.value == 42)  // as documented: the value is returned
        #expect(work.wasCancelled == true)  // though the limit did cancel it
    }

    @Test func synchronousWorkThatIgnoresCancellationAndThenFailsIsTimedOut() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let work = SynchronousWork()
        let call = Task {
            try await timeout.execute { @DedicatedThread () throws -> Int in
                _ = try work.loop(checkingCancellation: false)
                throw OwnError()
            }
        }
        await work.started.wait()
        passTheDeadline(of: timeout.watcher, clock, raising: work.stop)
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(work.wasCancelled == true)
    }

    @Test(arguments: Caller.allCases)
    func theOuterDeadlineStopsSynchronousWorkInsideAnInnerTimeout(from caller: Caller) async throws {
        let clock = TestClock()
        let outer = try Timeout(.seconds(1), name: "outer", clock: clock)
        let inner = try Timeout(.seconds(60), name: "inner", clock: clock)
        let work = SynchronousWork()
        let call = work.call(outer, from: caller) {
            try await inner.execute { try work.loop(checkingCancellation: true) }
        }
        await work.started.wait()
        passTheDeadline(of: outer.watcher, clock, raising: work.stop)
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(error?.timeoutName == "outer")
        #expect(work.wasCancelled == true)
    }

    @Test func theInnerDeadlineStopsSynchronousWorkInsideAnOuterTimeout() async throws {
        let clock = TestClock()
        let outer = try Timeout(.seconds(60), name: "outer", clock: clock)
        let inner = try Timeout(.seconds(1), name: "inner", clock: clock)
        let work = SynchronousWork()
        let call = Task {
            try await outer.execute {
                try await inner.execute { @DedicatedThread in try work.loop(checkingCancellation: true) }
            }
        }
        await work.started.wait()
        passTheDeadline(of: inner.watcher, clock, raising: work.stop)
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(error?.timeoutName == "inner")
        #expect(work.wasCancelled == true)
    }

    @Test func aCallerCancelledWhileTheCallHopsToTheOperationsActorStartsItCancelled() async throws {
        // The caller is nonisolated and the operation isolated to `Hop`, whose jobs run only
        // when the test runs them: the call is cancelled while it waits to start there.
        let timeout = try Timeout(.seconds(60), clock: TestClock())
        let ran = Counter()
        let call = Task {
            try await timeout.execute { @Hop in
                _ = ran.increment()
                return Task.isCancelled
            }
        }
        await Hop.executor.waitForJob()  // the hop to the operation's start
        call.cancel()
        await Hop.executor.run { ran.value > 0 }
        #expect(try await call.value)
    }
}

/// Moves the clock past the deadline of 1 s, and raises `flag` once `watcher` has handled it.
///
/// A marker due just after that deadline raises the flag: the watcher handles due
/// deadlines in order, so once the marker has run, the deadline before it has been handled.
private func passTheDeadline(of watcher: DeadlineWatcher, _ clock: TestClock, raising flag: Flag) {
    _ = watcher.register(.seconds(1) + .nanoseconds(1), RaiseFlag(flag: flag))
    clock.advance(by: .seconds(2))
}

/// A flag one task raises and another polls, without suspending.
private final class Flag: Sendable {
    private let state = Lock(false)

    var isRaised: Bool { self.state.withLock { $0 } }

    func raise() {
        self.state.withLock { $0 = true }
    }
}

/// A deadline expiry that raises a flag.
private struct RaiseFlag: DeadlineExpiry {
    let flag: Flag

    func deadlineReached() {
        self.flag.raise()
    }
}

/// An operation that works on its thread, without suspending, until it is cancelled or
/// told to stop, and records whether it was cancelled.
private final class SynchronousWork: Sendable {
    /// Opened once the operation runs.
    let started = Gate()
    /// Raised by the test once a cancellation would have reached the operation.
    let stop = Flag()
    private let cancelled = Lock<Bool?>(nil)

    /// Whether the operation was cancelled when it stopped; `nil` before it stopped.
    var wasCancelled: Bool? { self.cancelled.withLock { $0 } }

    /// Loops until told to stop or, when `checkingCancellation`, until cancelled; then
    /// throws `CancellationError` if it checks for cancellation and was cancelled,
    /// otherwise returns 42.
    ///
    /// Each look gives the processor up to any other thread ready to run (`sched_yield`,
    /// which never suspends the task): the loop waits for the limit's watcher, and on a
    /// loaded machine a loop that kept its processor would keep the watcher, and every
    /// test beside it, waiting for one.
    func loop(checkingCancellation: Bool) throws -> Int {
        self.started.open()
        while !self.stop.isRaised {
            if checkingCancellation && Task.isCancelled { break }
            sched_yield()
        }
        let cancelled = Task.isCancelled
        self.cancelled.withLock { $0 = cancelled }
        if checkingCancellation { try Task.checkCancellation() }
        return 42
    }

    /// Calls `timeout` from `caller` with `operation`, which runs on the main actor for a
    /// main-actor caller, and on a thread of its own (``DedicatedThread``) for a
    /// nonisolated one.
    func call(
        _ timeout: Timeout, from caller: TimeoutSynchronousWorkTests.Caller,
        _ operation: nonisolated(nonsending) @escaping @Sendable () async throws -> Int
    ) -> Task<Int, any Error> {
        switch caller {
        case .nonisolated:
            return Task { try await timeout.execute { @DedicatedThread in try await operation() } }
        case .mainActor:
            return Task { @MainActor in
                try await timeout.execute {
                    MainActor.assertIsolated()
                    return try await operation()
                }
            }
        }
    }
}

/// A global actor whose jobs run only when a test runs them.
@globalActor
private actor Hop {
    static let shared = Hop()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
