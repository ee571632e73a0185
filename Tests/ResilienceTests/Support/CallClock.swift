import ResilienceTesting
import Testing

@testable import Resilience

/// A clock for one test call, over a ``TestClock``, that tells the waits the call sleeps from the
/// timers that watch it, so that a driver moves time only while the call waits.
///
/// A wait is a sleep of the call's own tasks (its task and the tasks it starts, which inherit
/// ``isCallTask``): a backoff, a rate limiter's wait, an operation's hang. A timer is a sleep of a
/// task the call did not start (the detached task of a ``DeadlineWatcher``, which watches the
/// limits and hedges of ``Timeout`` and ``Hedging``), or a sleep of the call's tasks whose length
/// is one of `timerLengths` (a retry policy's attempt limit, whose timer is a child task of the call).
///
/// ``nextMove(watching:)`` moves time only when the whole call waits: some wait is asleep, no
/// sleep is due and not yet returned, no sleep was cancelled and not yet returned, and no watcher
/// runs or is due. A sleep's task running on after its wake, or a limit's watcher that has not
/// yet started its sleep, holds time still until it is done; a driver waits for the sleep's
/// return without polling (``waitForChange(after:)``), and yields only while a watcher runs,
/// which nothing on this clock marks the end of. Two things it cannot see: a call
/// waiting for its next hedge (a retry-after hint holds it back) sleeps no wait of its own, so
/// when the earliest deadline is a hedge's the driver moves time toward it a second at a time;
/// and a task a wake-up starts (a hedge's attempt) is unseen until it runs, so the driver lets
/// the tasks run a few rounds after each move.
final class CallClock: Clock, Sendable {
    typealias Instant = TestClock.Instant

    /// Whether the current task is the call's, or one it started: its sleeps are waits.
    @TaskLocal static var isCallTask = false

    private struct Sleep {
        var deadline: Instant
        var isWait: Bool
        var cancelled = false
    }

    private struct State {
        var nextID: UInt64 = 0
        var sleeps: [UInt64: Sleep] = [:]
        var timersFired = 0
        /// How many times a sleep began, was cancelled, or returned.
        var changes: UInt64 = 0
        var changeWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Waiters cancelled before they parked, by ID.
        var cancelledWaiters: Set<UInt64> = []

        /// Counts a change, and takes out the waiters to resume after unlocking.
        mutating func changed() -> Dictionary<UInt64, CheckedContinuation<Void, Never>>.Values {
            self.changes += 1
            defer { self.changeWaiters = [:] }
            return self.changeWaiters.values
        }
    }

    /// The clock that keeps the time.
    let base: TestClock
    private let timerLengths: Set<Duration>
    private let state = Lock(State())

    /// A clock over `base`; the call's sleeps of a length in `timerLengths` are timers.
    init(_ base: TestClock = TestClock(), timerLengths: Set<Duration> = []) {
        self.base = base
        self.timerLengths = timerLengths
    }

    var now: Instant { self.base.now }
    var minimumResolution: Duration { .zero }

    /// How many timers have ended by reaching their deadline (limits and hedges that fired).
    var timersFired: Int { self.state.withLock { $0.timersFired } }

    /// How many times a sleep on this clock began, was cancelled, or returned: read it before
    /// ``nextMove(watching:)``, and wait with ``waitForChange(after:)`` for what holds time still.
    var changes: UInt64 { self.state.withLock { $0.changes } }

    /// Suspends until a sleep on this clock has begun, been cancelled, or returned since
    /// ``changes`` read `seen`, or until the waiting task is cancelled.
    func waitForChange(after seen: UInt64) async {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = self.state.withLock { state in
                    if state.cancelledWaiters.remove(id) != nil || state.changes != seen { return false }
                    state.changeWaiters[id] = continuation
                    return true
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.changeWaiters.removeValue(forKey: id) { return waiter }
                state.cancelledWaiters.insert(id)
                return nil
            }
            waiter?.resume()
        }
    }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let now = self.base.now
        let isWait = Self.isCallTask && !self.timerLengths.contains(now.duration(to: deadline))
        let (id, began) = self.state.withLock { state in
            state.nextID += 1
            state.sleeps[state.nextID] = Sleep(deadline: deadline, isWait: isWait)
            return (state.nextID, state.changed())
        }
        for waiter in began { waiter.resume() }
        do {
            try await withTaskCancellationHandler {
                try await self.base.sleep(until: deadline, tolerance: tolerance)
            } onCancel: {
                // Marked in the canceller's thread, before the sleeper's task runs on.
                let waiters = self.state.withLock { state in
                    state.sleeps[id]?.cancelled = true
                    return state.changed()
                }
                for waiter in waiters { waiter.resume() }
            }
        } catch {
            let waiters = self.state.withLock { state in
                _ = state.sleeps.removeValue(forKey: id)
                return state.changed()
            }
            for waiter in waiters { waiter.resume() }
            throw error
        }
        let waiters = self.state.withLock { state in
            state.sleeps[id] = nil
            if !isWait { state.timersFired += 1 }
            return state.changed()
        }
        for waiter in waiters { waiter.resume() }
    }

    /// What a driver may do now.
    enum Move: Equatable {
        /// A sleep on this clock is due, or cancelled, and has not returned: look again once it
        /// has (``waitForChange(after:)``).
        case busy
        /// A limit's or a hedge's watcher runs, or was woken and has not yet looked: look again
        /// once it has had a moment (nothing on this clock marks its end; it is short).
        case settling
        /// No wait is asleep: the call runs, or waits on something time does not end.
        case idle
        /// The call waits: time may move to this instant, the earliest deadline of any sleep.
        case to(Instant)
        /// No wait sleeps, and the earliest deadline is a hedge's: the call may wait for it (a
        /// retry-after hint holds its next attempt back), or may still run.
        case hedge(Instant)
    }

    /// Whether the call waits, and for which instant, given the watchers of its limits and hedges.
    func nextMove(watching watchers: [WatcherList.Watched]) -> Move {
        let now = self.base.now
        var watched: [Instant] = []
        var hedges: [Instant] = []
        for (watcher, isHedging) in watchers {
            switch watcher.phase {
            case .running: return .settling
            case .sleeping(let until):
                let deadline = now.advanced(by: until - watcher.now())
                // Woken, or about to be, and not yet done with what came due.
                if deadline <= now { return .settling }
                watched.append(deadline)
                if isHedging { hedges.append(deadline) }
            case .none, .parked: break
            }
        }
        return self.state.withLock { state in
            if state.sleeps.values.contains(where: { $0.deadline <= now || $0.cancelled }) { return .busy }
            guard let earliest = (state.sleeps.values.map(\.deadline) + watched).min() else { return .idle }
            if state.sleeps.values.contains(where: \.isWait) { return .to(earliest) }
            if let hedge = hedges.min(), hedge == earliest { return .hedge(hedge) }
            return .idle
        }
    }
}

/// The watchers of the limits and hedges a test call is made of, gathered as the test makes them.
final class WatcherList: Sendable {
    /// A watcher, and whether it watches a hedging's delays (else a timeout's limits).
    typealias Watched = (watcher: DeadlineWatcher, isHedging: Bool)

    private let watchers = Lock<[Watched]>([])

    var all: [Watched] { self.watchers.withLock { $0 } }

    @discardableResult
    func add(_ timeout: Timeout) -> Timeout {
        self.watchers.withLock { $0.append((timeout.watcher, false)) }
        return timeout
    }

    @discardableResult
    func add(_ hedging: Hedging) -> Hedging {
        self.watchers.withLock { $0.append((hedging.watcher, true)) }
        return hedging
    }

    @discardableResult
    func add(_ pipeline: ResiliencePipeline<StandardHTTPStrategies>) -> ResiliencePipeline<StandardHTTPStrategies> {
        // The total timeout, and the attempt's timeout innermost.
        self.add(pipeline.strategies.inner.outer)
        self.add(pipeline.strategies.inner.inner.inner.inner)
        return pipeline
    }
}

/// Runs `task`, a call on `clock` started in ``CallClock/isCallTask``, to its end, moving time
/// only while the call waits (``CallClock/nextMove(watching:)``), and only to instants
/// `mayMove` allows (given the time now and the instant to move to).
///
/// Time moves to the earliest deadline of anyone asleep, a limit's or a hedge's included, once
/// the call waits for something: the limits around a hang fire, and a wait that outlasts a limit
/// is ended by it, at the limit's own instant. While the call runs, or while a sleeper woken or
/// cancelled has not yet run on, time stands still: the driver waits for the sleep's return, and
/// while nothing of the call sleeps on the clock, for the next sleep, without polling; it yields
/// only while a watcher runs, a few scheduling rounds at a time. Returns the call's result, and
/// whether the test was cancelled (its time limit) before the call ended, which cancels the call.
func driveCall<T: Sendable>(
    _ task: Task<T, any Error>, on clock: CallClock, watching watchers: WatcherList,
    mayMove: @escaping @Sendable (_ now: Duration, _ to: Duration) -> Bool = { _, _ in true }
) async -> (result: Result<T, any Error>, stalled: Bool) {
    let stalled = Lock(false)
    let mover = Task.detached {
        while !Task.isCancelled {
            let seen = clock.base.sleepRequests.count
            let changes = clock.changes
            switch clock.nextMove(watching: watchers.all) {
            case .busy:
                await clock.waitForChange(after: changes)
                continue
            case .settling:
                await Task.yield()
                continue
            case .to(let instant) where mayMove(clock.now.offset, instant.offset):
                clock.base.advance(to: instant)
            case .hedge(let instant) where mayMove(clock.now.offset, instant.offset):
                // Nothing tells a call waiting for its next hedge from one still running: time
                // moves a second at most, and wakes no one before the hedge is due (no limit
                // can fire: the hedge's deadline is the earliest).
                clock.base.advance(to: Swift.min(instant, clock.now.advanced(by: .seconds(1))))
            case .idle, .to, .hedge:
                await clock.base.waitForSleepRequests(count: seen + 1)
                continue
            }
            // What the move woke may start tasks nothing here sees until they run (a hedge's
            // attempt): let them run before looking again.
            for _ in 0..<20 { await Task.yield() }
        }
    }
    let result = await withTaskCancellationHandler {
        await task.result
    } onCancel: {
        stalled.withLock { $0 = true }
        task.cancel()
    }
    mover.cancel()
    return (result, stalled.withLock { $0 })
}
