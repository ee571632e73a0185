import Foundation

@testable import Resilience

/// A serial executor that runs its jobs on a thread of its own, outside the cooperative pool.
///
/// For tests whose operation works on its thread without suspending until another task
/// acts: run on the pool, such an operation holds one of its few threads (two on a
/// 2-core machine) while the task it waits for needs one, and every other test running
/// beside it waits too. An operation isolated to ``DedicatedThread`` runs here instead.
final class DedicatedThreadExecutor: SerialExecutor {
    private let jobs = Lock<[UnownedJob]>([])
    private let available = DispatchSemaphore(value: 0)
    /// The executor's thread, once it has started.
    private let thread = Lock<pthread_t?>(nil)

    init() {
        let thread = Thread { [jobs, available, unowned self] in
            self.thread.withLock { $0 = pthread_self() }
            while true {
                available.wait()
                let job = jobs.withLock { $0.removeFirst() }
                job.runSynchronously(on: self.asUnownedSerialExecutor())
            }
        }
        thread.name = "DedicatedThread"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.jobs.withLock { $0.append(job) }
        self.available.signal()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Whether the calling code runs on the executor's thread: whether it ran as one of its jobs,
    /// whatever the compiler believed about its isolation.
    var isCurrentThread: Bool {
        let current = pthread_self()
        return self.thread.withLock { $0.map { pthread_equal($0, current) != 0 } ?? false }
    }
}

/// A global actor whose jobs run on a thread of its own (``DedicatedThreadExecutor``),
/// which lives as long as the test process.
@globalActor
actor DedicatedThread {
    static let shared = DedicatedThread()
    static let executor = DedicatedThreadExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}

/// A task executor that runs its jobs on Dispatch's global queue and counts those enqueued and
/// not yet finished, so that a test can tell when the tasks that prefer it have all come to rest.
///
/// A task started with it as its preference (`Task(executorPreference:)`) runs its nonisolated
/// code here, and so do the child tasks it starts; a job counts from its enqueueing (a sleeper
/// woken, a child started) until it has run. With nothing pending, every such task is suspended
/// or done. Code isolated to an actor still runs on the actor.
final class CountingTaskExecutor: TaskExecutor {
    private let count = Lock(0)

    /// The jobs enqueued and not yet run to their end.
    var pending: Int { self.count.withLock { $0 } }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.count.withLock { $0 += 1 }
        DispatchQueue.global().async {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
            self.count.withLock { $0 -= 1 }
        }
    }
}
