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
/// yet started its sleep, holds time still until it is done. Two things it cannot see: a call
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

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let now = self.base.now
        let isWait = Self.isCallTask && !self.timerLengths.contains(now.duration(to: deadline))
        let id = self.state.withLock { state in
            state.nextID += 1
            state.sleeps[state.nextID] = Sleep(deadline: deadline, isWait: isWait)
            return state.nextID
        }
        do {
            try await withTaskCancellationHandler {
                try await self.base.sleep(until: deadline, tolerance: tolerance)
            } onCancel: {
                // Marked in the canceller's thread, before the sleeper's task runs on.
                self.state.withLock { $0.sleeps[id]?.cancelled = true }
            }
        } catch {
            self.state.withLock { _ = $0.sleeps.removeValue(forKey: id) }
            throw error
        }
        self.state.withLock { state in
            state.sleeps[id] = nil
            if !isWait { state.timersFired += 1 }
        }
    }

    /// What a driver may do now.
    enum Move: Equatable {
        /// Something of the call runs: look again once it has.
        case busy
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
            case .running: return .busy
            case .sleeping(let until):
                let deadline = now.advanced(by: until - watcher.now())
                // Woken, or about to be, and not yet done with what came due.
                if deadline <= now { return .busy }
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
/// cancelled has not yet run on, time stands still; while nothing of the call sleeps on the
/// clock, the driver waits for the next sleep without polling. Returns the call's result, and
/// whether the test was cancelled (its time limit) before the call ended, which cancels the call.
func driveCall<T: Sendable>(
    _ task: Task<T, any Error>, on clock: CallClock, watching watchers: WatcherList,
    mayMove: @escaping @Sendable (_ now: Duration, _ to: Duration) -> Bool = { _, _ in true }
) async -> (result: Result<T, any Error>, stalled: Bool) {
    let stalled = Lock(false)
    let mover = Task.detached {
        while !Task.isCancelled {
            let seen = clock.base.sleepRequests.count
            switch clock.nextMove(watching: watchers.all) {
            case .busy:
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
