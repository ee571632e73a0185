import Dispatch
import Foundation
import Resilience
import Testing

/// Hammers ``Lock`` from several threads at once.
///
/// Under `swift test --sanitize=thread` (the `.ci/steps/30-tsan.sh` gate) these
/// tests are what shows ThreadSanitizer can see our pthread lock: remove the
/// `pthread_mutex_lock` call and the gate fails with a data race report. The
/// work runs on threads of its own rather than in tasks, because tasks may all
/// land on one thread of the cooperative pool, where no race can be seen.
@Suite struct LockContentionTests {
    @Test func concurrentIncrementsAreNeverLost() {
        let lock = Lock(0)
        onSeparateThreads(4) { _ in
            for _ in 0..<5_000 {
                lock.withLock { $0 += 1 }
            }
        }
        #expect(lock.withLock { $0 } == 20_000)
    }

    @Test func readersSeeOnlyWholeUpdates() {
        // Each update writes both fields; a reader that saw them differ would have
        // seen half of an update.
        struct Pair {
            var first = 0
            var second = 0
        }
        let lock = Lock(Pair())
        let tornReads = Lock(0)
        onSeparateThreads(3) { index in
            if index == 0 {
                for value in 1...5_000 {
                    lock.withLock { pair in
                        pair.first = value
                        pair.second = value
                    }
                }
            } else {
                var torn = 0
                for _ in 0..<5_000 where lock.withLock({ $0.first != $0.second }) {
                    torn += 1
                }
                tornReads.withLock { $0 += torn }
            }
        }
        #expect(tornReads.withLock { $0 } == 0)
        #expect(lock.withLock { $0.first } == 5_000)
    }
}
