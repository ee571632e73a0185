import Resilience

/// The callers of a test double's `waitFor…(count:)` methods: each waits until one of two
/// counts the double keeps reaches its number, or until its own task is cancelled.
///
/// ``TestClock`` counts sleepers parked now and sleeps requested ever;
/// ``TestConnectivityMonitor`` counts streams open now and streams requested ever.
struct CountWaiters {
    /// Which of a double's two counts a caller waits on.
    enum Measure {
        /// What is there now (parked sleepers, open streams).
        case current
        /// What was ever asked for (sleep requests, stream requests).
        case total
    }

    private struct Waiter {
        var id: UInt64
        var count: Int
        var measure: Measure
        var continuation: CheckedContinuation<Void, Never>
    }

    private var nextID: UInt64 = 0
    private var waiters: [Waiter] = []
    /// Callers cancelled before they parked.
    private var cancelledBeforeParking: Set<UInt64> = []

    /// A new caller's identity.
    mutating func makeID() -> UInt64 {
        self.nextID += 1
        return self.nextID
    }

    /// Parks caller `id` unless its count is reached already or it was cancelled; whether it parked.
    mutating func park(
        _ id: UInt64, count: Int, measure: Measure, reached: Int,
        continuation: CheckedContinuation<Void, Never>
    ) -> Bool {
        if reached >= count || self.cancelledBeforeParking.remove(id) != nil { return false }
        self.waiters.append(Waiter(id: id, count: count, measure: measure, continuation: continuation))
        return true
    }

    /// Takes caller `id` out when its task is cancelled: its continuation if it had parked.
    mutating func cancel(_ id: UInt64) -> CheckedContinuation<Void, Never>? {
        if let index = self.waiters.firstIndex(where: { $0.id == id }) {
            return self.waiters.remove(at: index).continuation
        }
        self.cancelledBeforeParking.insert(id)
        return nil
    }

    /// Takes out the callers whose count is reached; the caller resumes them after unlocking.
    mutating func satisfied(current: Int, total: Int) -> [CheckedContinuation<Void, Never>] {
        var ready: [CheckedContinuation<Void, Never>] = []
        self.waiters.removeAll { waiter in
            guard (waiter.measure == .current ? current : total) >= waiter.count else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }
}

/// A test double's state with its count waiters and the two counts they wait on.
protocol CountWaiting: Sendable {
    /// The callers waiting on a count.
    var countWaiters: CountWaiters { get set }
    /// The count `measure` names, now.
    func count(_ measure: CountWaiters.Measure) -> Int
}

extension CountWaiting {
    /// Takes out the waiters whose count is reached, to resume after unlocking.
    mutating func satisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
        let (current, total) = (self.count(.current), self.count(.total))
        return self.countWaiters.satisfied(current: current, total: total)
    }
}

extension Lock where State: CountWaiting {
    /// Suspends until the count `measure` names reaches `count`, or the waiting task is cancelled.
    func wait(until count: Int, measuring measure: CountWaiters.Measure) async {
        let id = self.withLock { $0.countWaiters.makeID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = self.withLock { state in
                    state.countWaiters.park(
                        id, count: count, measure: measure, reached: state.count(measure), continuation: continuation)
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            self.withLock { $0.countWaiters.cancel(id) }?.resume()
        }
    }
}
