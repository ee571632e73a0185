@testable import Resilience

/// A serial executor that holds its jobs until the test runs them, one at a time,
/// so a test decides the order in which tasks on it make progress.
final class ManualExecutor: SerialExecutor {
    private struct State {
        var jobs: [UnownedJob] = []
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Lock(State())

    /// The jobs enqueued and not yet run.
    var pending: Int { self.state.withLock { $0.jobs.count } }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let waiter = self.state.withLock { state in
            state.jobs.append(job)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Runs held jobs one at a time, waiting for each to be enqueued, until `done` holds or the
    /// test is cancelled (its time limit).
    func run(until done: () -> Bool) async {
        while !done(), !Task.isCancelled { await self.runOne() }
    }

    /// Waits for a held job and runs it on the calling thread; runs none when the test is
    /// cancelled first.
    func runOne() async {
        await self.waitForJob()
        let next = self.state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
        next?.runSynchronously(on: self.asUnownedSerialExecutor())
    }

    /// Waits until a job is held, without running it, or until the waiting task is cancelled:
    /// a test whose job never comes then ends at its time limit instead of hanging the run.
    func waitForJob() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = self.state.withLock { state in
                    if !state.jobs.isEmpty || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
