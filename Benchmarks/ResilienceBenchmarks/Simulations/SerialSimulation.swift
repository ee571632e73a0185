import Foundation
import Resilience

/// A discrete-event simulation that runs every task of the process, the library's
/// own included, one job at a time on one thread, in the order they were scheduled.
///
/// ``SimulationClock`` needs to know every simulated task, to tell when all of them
/// are parked; a strategy that starts tasks of its own (``Hedging``'s attempts and
/// its deadline watcher, ``ConcurrencyLimiter``'s queue timer) hides them from it.
/// This simulation takes the jobs instead: while it runs, it installs the
/// concurrency runtime's `swift_task_enqueueGlobal_hook`, so every job bound for the
/// global executor (a new task, a resumed continuation, a `Task.yield`, a detached
/// task) lands in its first-in-first-out queue, and a dedicated thread runs them.
/// When the queue is empty, nothing can move until time does: every task is parked
/// on the ``SerialSimulationClock`` or waits for one that is. The thread then
/// jumps to the earliest deadline, wakes that sleeper, and drains the queue again.
/// The order of jobs depends only on the order in which they were scheduled, so a
/// seed gives the same events on every run.
///
/// The hook is the runtime's testing hook for replacing the global executor (the
/// one `withMainSerialExecutor` of the swift-concurrency-extras package uses); it
/// is installed only for the length of a run, and simulations run one at a time.
/// Nothing here runs on the main actor.
final class SerialSimulation: Sendable {
    /// The clock the simulated code and the strategies under test sleep on.
    let clock = SerialSimulationClock()

    /// A simulation at offset zero.
    init() {}

    /// The simulation has nothing left to run, yet its root task has not finished.
    struct Stalled: Error, CustomStringConvertible {
        var description: String { "the simulation stalled: its root task waits for something that never comes" }
    }

    /// Runs `body` as the root task, and every task it starts, until nothing is left to
    /// run; then ends the clock (every later sleep throws `CancellationError`).
    ///
    /// - Throws: ``Stalled`` when the root task had not finished by then.
    func run(_ body: @escaping @Sendable () async -> Void) async throws {
        let clock = self.clock
        let finished: Bool = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            let thread = Thread {
                let rootFinished = Lock(false)
                SerialJobQueue.shared.install()
                _ = Task.detached {
                    await body()
                    rootFinished.withLock { $0 = true }
                }
                while true {
                    SerialJobQueue.shared.drain()
                    guard clock.wakeNext() else { break }
                }
                clock.stop()
                SerialJobQueue.shared.drain()
                SerialJobQueue.shared.uninstall()
                done.resume(returning: rootFinished.withLock { $0 })
            }
            thread.stackSize = 16 << 20
            thread.start()
        }
        guard finished else { throw Stalled() }
    }
}

/// The queue of jobs the global-executor hook fills while a ``SerialSimulation`` runs.
final class SerialJobQueue: Sendable {
    private typealias Original = @convention(thin) (UnownedJob) -> Void
    private typealias Hook = @convention(thin) (UnownedJob, Original) -> Void

    private struct State {
        var jobs: [UnownedJob] = []
        var head = 0
        var isInstalled = false
    }

    /// The one queue: the hook is global to the process.
    static let shared = SerialJobQueue()

    private let state = Lock(State())

    private init() {}

    /// The runtime's hook variable, if this runtime has one.
    private static func hookVariable() -> UnsafeMutablePointer<Hook?> {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "swift_task_enqueueGlobal_hook") else {
            fatalError("the concurrency runtime has no swift_task_enqueueGlobal_hook")
        }
        return symbol.assumingMemoryBound(to: Hook?.self)
    }

    /// Sends every job bound for the global executor to this queue.
    func install() {
        let wasInstalled = self.state.withLock { state in
            defer { state.isInstalled = true }
            return state.isInstalled
        }
        precondition(!wasInstalled, "one serial simulation at a time")
        Self.hookVariable().pointee = { job, _ in SerialJobQueue.shared.enqueue(job) }
    }

    /// Gives the global executor back; the queue must be empty.
    func uninstall() {
        Self.hookVariable().pointee = nil
        let leftover: [UnownedJob] = self.state.withLock { state in
            state.isInstalled = false
            defer {
                state.jobs.removeAll()
                state.head = 0
            }
            return Array(state.jobs[state.head...])
        }
        // Nothing should be left; anything that is still runs, on the real executor.
        for job in leftover { globalConcurrentExecutor.enqueue(job) }
    }

    fileprivate func enqueue(_ job: UnownedJob) {
        self.state.withLock { $0.jobs.append(job) }
    }

    /// Runs jobs, first in first out, until none is left.
    func drain() {
        while true {
            let job: UnownedJob? = self.state.withLock { state in
                guard state.head < state.jobs.count else {
                    state.jobs.removeAll(keepingCapacity: true)
                    state.head = 0
                    return nil
                }
                defer { state.head += 1 }
                return state.jobs[state.head]
            }
            guard let job else { return }
            job.runSynchronously(on: SerialSimulationExecutor.shared.asUnownedSerialExecutor())
        }
    }
}

/// The executor a ``SerialSimulation`` runs its jobs on: a job that is re-enqueued
/// on it (a `Task.yield`, say) goes back to the simulation's queue, not to a thread.
final class SerialSimulationExecutor: SerialExecutor {
    /// The one executor, for the one queue.
    static let shared = SerialSimulationExecutor()

    private init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        SerialJobQueue.shared.enqueue(UnownedJob(job))
    }
}

/// The clock of a ``SerialSimulation``: virtual time that moves only when every job has run.
///
/// Sleeps honour cancellation, as a real clock's do: a cancelled sleeper leaves at
/// once with `CancellationError` (the strategies cancel the timers they no longer
/// need). Ties between equal deadlines break in the order the sleeps were requested.
final class SerialSimulationClock: Clock, Sendable {
    /// An instant: the time elapsed since the simulation started.
    typealias Instant = SimulationClock.Instant

    private struct Entry: Comparable {
        var deadline: Instant
        var sequence: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.deadline, lhs.sequence) < (rhs.deadline, rhs.sequence)
        }
    }

    private struct State {
        var now = Instant(offset: .zero)
        /// Deadlines; an entry whose sleeper was cancelled stays until it reaches the top.
        var entries = MinHeap<Entry>()
        var sleepers: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextSequence: UInt64 = 0
        var isStopped = false
    }

    private let state = Lock(State())

    /// A clock at offset zero.
    init() {}

    /// The current instant.
    var now: Instant {
        self.state.withLock { $0.now }
    }

    /// Zero: the clock is exact.
    var minimumResolution: Duration { .zero }

    /// Parks the calling task until the simulation reaches `deadline`.
    ///
    /// - Throws: `CancellationError` when the task is cancelled or the run has ended.
    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let sequence = self.state.withLock { state in
            state.nextSequence += 1
            return state.nextSequence
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action {
                    case resume
                    case stop
                    case park
                }
                let action: Action = self.state.withLock { state in
                    if state.isStopped || Task.isCancelled { return .stop }
                    if deadline <= state.now { return .resume }
                    state.sleepers[sequence] = continuation
                    state.entries.insert(Entry(deadline: deadline, sequence: sequence))
                    return .park
                }
                switch action {
                case .resume: continuation.resume()
                case .stop: continuation.resume(throwing: CancellationError())
                case .park: break
                }
            }
        } onCancel: {
            let sleeper = self.state.withLock { $0.sleepers.removeValue(forKey: sequence) }
            sleeper?.resume(throwing: CancellationError())
        }
    }

    /// Moves time to the earliest deadline and wakes its sleeper; `false` when no one sleeps.
    fileprivate func wakeNext() -> Bool {
        let sleeper: CheckedContinuation<Void, any Error>? = self.state.withLock { state in
            while let entry = state.entries.removeMinimum() {
                guard let sleeper = state.sleepers.removeValue(forKey: entry.sequence) else { continue }
                state.now = entry.deadline
                return sleeper
            }
            return nil
        }
        sleeper?.resume()
        return sleeper != nil
    }

    /// Ends the run: every sleeper, and every later sleep, throws `CancellationError`.
    fileprivate func stop() {
        let sleepers: [CheckedContinuation<Void, any Error>] = self.state.withLock { state in
            state.isStopped = true
            var sleepers: [CheckedContinuation<Void, any Error>] = []
            while let entry = state.entries.removeMinimum() {
                if let sleeper = state.sleepers.removeValue(forKey: entry.sequence) { sleepers.append(sleeper) }
            }
            return sleepers
        }
        for sleeper in sleepers { sleeper.resume(throwing: CancellationError()) }
    }
}
