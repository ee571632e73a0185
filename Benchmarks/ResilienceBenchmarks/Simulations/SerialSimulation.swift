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
/// Jobs run on ``SerialSimulationExecutor``, so a job re-enqueued on its current
/// executor comes back to the queue too. A job bound for the main actor or an
/// actor with an executor of its own is not caught: simulated code must not use them.
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
