import Foundation
import Resilience

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

    /// The runtime's hook variable; a runtime without one ends the process.
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

    /// Adds `job` at the back of the queue.
    func enqueue(_ job: UnownedJob) {
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
