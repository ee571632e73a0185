import Testing

@testable import Resilience

/// A serial executor that holds its jobs until the test runs them, one at a time,
/// so a test decides the order in which tasks on it make progress.
final class ManualExecutor: SerialExecutor, HeldJobExecutor {
    let held = HeldJobs()

    func enqueue(_ job: consuming ExecutorJob) {
        self.held.hold(UnownedJob(job))
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func runHeld(_ job: UnownedJob) {
        job.runSynchronously(on: self.asUnownedSerialExecutor())
    }
}

/// A task executor whose jobs run only when a test runs them: a task that prefers it runs its
/// nonisolated code here (``ManualExecutor`` holds the jobs of an actor's code instead).
final class HeldTaskExecutor: TaskExecutor, HeldJobExecutor {
    let held = HeldJobs()

    func enqueue(_ job: consuming ExecutorJob) {
        self.held.hold(UnownedJob(job))
    }

    func runHeld(_ job: UnownedJob) {
        job.runSynchronously(on: self.asUnownedTaskExecutor())
    }
}

/// An executor whose jobs wait in ``HeldJobs`` until the test runs them.
protocol HeldJobExecutor: AnyObject {
    /// The jobs enqueued and not yet run.
    var held: HeldJobs { get }
    /// Runs `job` on the calling thread, on this executor.
    func runHeld(_ job: UnownedJob)
}

extension HeldJobExecutor {
    /// The jobs enqueued and not yet run.
    var pending: Int { self.held.pending }

    /// Runs held jobs one at a time, waiting for each to be enqueued, until `done` holds or the
    /// test is cancelled (its time limit).
    func run(until done: () -> Bool) async {
        while !done(), !Task.isCancelled { await self.runOne() }
    }

    /// Runs held jobs as they come until `done` holds, where what `done` waits for may happen off
    /// this executor (a sleep on the clock, a queue entry): it waits for a held job or for `done`,
    /// whichever comes first, and throws once the test is cancelled (``yieldUntil(_:sourceLocation:_:)``).
    func runJobs(until what: String, _ done: () -> Bool) async throws {
        while !done() {
            try await yieldUntil(what) { self.pending > 0 || done() }
            if self.pending > 0 { await self.runOne() }
        }
    }

    /// Waits for a held job and runs it on the calling thread; runs none when the test is
    /// cancelled first.
    func runOne() async {
        await self.held.waitForJob()
        if let next = self.held.next() { self.runHeld(next) }
    }

    /// Waits until a job is held, without running it, or until the waiting task is cancelled:
    /// a test whose job never comes then ends at its time limit instead of hanging the run.
    func waitForJob() async {
        await self.held.waitForJob()
    }
}

/// Jobs an executor holds until a test runs them, first in, first out.
final class HeldJobs: Sendable {
    private struct State {
        var jobs: [UnownedJob] = []
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Lock(State())

    /// The jobs held and not yet taken.
    var pending: Int { self.state.withLock { $0.jobs.count } }

    /// Holds `job`, waking a test that waits for one.
    func hold(_ job: UnownedJob) {
        let waiter = self.state.withLock { state in
            state.jobs.append(job)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// The first job held, taken; `nil` when none is.
    func next() -> UnownedJob? {
        self.state.withLock { $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }
    }

    /// Waits until a job is held, or until the waiting task is cancelled.
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
