import Foundation
import Resilience

/// A global actor whose jobs all run on one thread of its own, which nothing else runs on.
///
/// For tests of code that keeps state per thread (the breaker's rejection cache): isolated
/// to it, a scenario runs on one thread every time, and no other test's code runs on that
/// thread in between, as may happen on the main actor or the cooperative pool.
@globalActor
actor OneThreadActor {
    /// The one instance.
    static let shared = OneThreadActor()

    private let executor = OneThreadExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.executor.asUnownedSerialExecutor()
    }
}

/// A serial executor that runs its jobs in order on a thread it starts, which waits on a
/// semaphore while there is nothing to run and lives as long as the test process.
final class OneThreadExecutor: SerialExecutor {
    private let jobs = Lock<[UnownedJob]>([])
    private let queued = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            while true {
                self.queued.wait()
                let job = self.jobs.withLock { $0.removeFirst() }
                job.runSynchronously(on: self.asUnownedSerialExecutor())
            }
        }
        thread.name = "OneThreadActor"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.jobs.withLock { $0.append(job) }
        self.queued.signal()
    }
}
