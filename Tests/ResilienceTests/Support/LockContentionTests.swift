import Resilience
import Testing

/// Hammers ``Lock`` from several threads at once.
///
/// Under `swift test --sanitize=thread` (the `.ci/steps/30-tsan.sh` gate) these
/// tests are what shows ThreadSanitizer can see our pthread lock: remove the
/// `pthread_mutex_lock` call and the gate fails with a data race report.
@Suite struct LockContentionTests {
    @Test func concurrentIncrementsAreNeverLost() async {
        let lock = Lock(0)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<5_000 {
                        lock.withLock { $0 += 1 }
                    }
                }
            }
        }
        #expect(lock.withLock { $0 } == 20_000)
    }

    @Test func concurrentReadersSeeOnlyWholeUpdates() async {
        // Each update writes both fields; a reader that saw them differ would have
        // seen half of an update.
        struct Pair {
            var first = 0
            var second = 0
        }
        let lock = Lock(Pair())
        let tornReads = await withTaskGroup(of: Int.self) { group in
            group.addTask {
                for value in 1...5_000 {
                    lock.withLock { pair in
                        pair.first = value
                        pair.second = value
                    }
                }
                return 0
            }
            for _ in 0..<2 {
                group.addTask {
                    var torn = 0
                    for _ in 0..<5_000 where lock.withLock({ $0.first != $0.second }) {
                        torn += 1
                    }
                    return torn
                }
            }
            return await group.reduce(0, +)
        }
        #expect(tornReads == 0)
        #expect(lock.withLock { $0.first } == 5_000)
    }
}
