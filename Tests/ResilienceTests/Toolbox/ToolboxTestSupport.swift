import Resilience
import ResilienceTesting

/// A latch operations wait on until the test opens it; no sleeping, no yielding to hope.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let ready = self.watchers.filter { $0.count <= self.waiters.count }.map(\.continuation)
            self.watchers.removeAll { $0.count <= self.waiters.count }
            return ready
        }
    }

    private let state = Lock(State())

    /// How many tasks are waiting at the gate.
    var waiting: Int { self.state.withLock { $0.waiters.count } }

    /// Waits until the gate is open.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (open, ready) = self.state.withLock { state in
                if state.isOpen { return (true, [CheckedContinuation<Void, Never>]()) }
                state.waiters.append(continuation)
                return (false, state.satisfiedWatchers())
            }
            for watcher in ready { watcher.resume() }
            if open { continuation.resume() }
        }
    }

    /// Opens the gate and lets every waiter through.
    func open() {
        let waiters = self.state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `count` tasks wait at the gate.
    func waitForWaiters(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state in
                if state.waiters.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// The largest value a counter reached, tracked under a lock alongside the current value.
final class HighWaterMark: Sendable {
    private let state = Lock<(current: Int, highest: Int)>((0, 0))

    /// Adds one and returns the new current value.
    @discardableResult
    func enter() -> Int {
        self.state.withLock { state in
            state.current += 1
            state.highest = max(state.highest, state.current)
            return state.current
        }
    }

    /// Subtracts one.
    func leave() {
        self.state.withLock { $0.current -= 1 }
    }

    /// The largest value reached.
    var highest: Int { self.state.withLock { $0.highest } }
    /// The current value.
    var current: Int { self.state.withLock { $0.current } }
}

/// The setting a ``ConfigurationError`` names, or `nil` when `body` does not throw one.
func rejectedSetting(_ body: () throws -> Void) -> String? {
    do {
        try body()
        return nil
    } catch let error as ConfigurationError {
        return error.setting
    } catch {
        return "unexpected \(error)"
    }
}

/// An observer that records the kinds of events it receives.
struct EventLog: StrategyObserver {
    let kinds = Recorder<StrategyEvent.Kind>()

    func observe(_ event: StrategyEvent) {
        self.kinds.record(event.kind)
    }
}

/// An observer tests wait on: it counts events by kind and wakes whoever waits for a count.
final class EventCounter: StrategyObserver {
    private struct State {
        var counts: [StrategyEvent.Kind: Int] = [:]
        var watchers: [(kind: StrategyEvent.Kind, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Lock(State())

    func observe(_ event: StrategyEvent) {
        let ready: [CheckedContinuation<Void, Never>] = self.state.withLock { state in
            state.counts[event.kind, default: 0] += 1
            let counts = state.counts
            let due = state.watchers.filter { counts[$0.kind, default: 0] >= $0.count }
            state.watchers.removeAll { counts[$0.kind, default: 0] >= $0.count }
            return due.map(\.continuation)
        }
        for watcher in ready { watcher.resume() }
    }

    /// Returns once `count` events of `kind` have been observed.
    func waitFor(_ kind: StrategyEvent.Kind, count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state in
                if state.counts[kind, default: 0] >= count { return true }
                state.watchers.append((kind, count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// Starts a call through `hedging` that its first hedge wins: the first attempt waits ten
/// seconds on `clock` and would answer "first"; every later attempt moves `clock` on by
/// `hedgeTakes`, when given, and answers "hedge". The test still drives the clock.
func startCallWonByItsHedge(
    _ hedging: Hedging, clock: TestClock, hedgeTakes: Duration? = nil, attempts: Counter = Counter()
) -> Task<String, any Error> {
    Task {
        try await hedging.execute { () async throws -> String in
            if attempts.increment() == 1 {
                try await clock.sleep(for: .seconds(10))
                return "first"
            }
            if let hedgeTakes { clock.advance(by: hedgeTakes) }
            return "hedge"
        }
    }
}
