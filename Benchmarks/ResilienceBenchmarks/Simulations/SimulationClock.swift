import Resilience

/// A clock for discrete-event simulations of real async code, deterministic for a seed.
///
/// Simulated tasks (registered with ``spawn(in:_:)``) sleep on this clock; nothing
/// else moves its time. ``run(until:)`` waits until every simulated task is parked
/// on the clock, then jumps to the earliest deadline and wakes that one sleeper,
/// and repeats. Because exactly one simulated task runs at a time, shared state
/// (a retry budget, a policy's random generator, a server) sees the same sequence
/// of events on every run; ties between equal deadlines break in the order the
/// sleeps were requested.
///
/// That lets the simulations run the library's real ``RetryPolicy`` (its
/// classifier, 429 rule, budget, backoff and jitter, and its hops to its actor on
/// the failure path) on thousands of simulated clients without real sleeping.
///
/// When the run ends, every sleeper is woken with `CancellationError`, and so is
/// every later sleep, so the simulated tasks wind down.
final class SimulationClock: Clock, Sendable {
    /// An instant: the time elapsed since the simulation started.
    struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// The time since the start.
        var offset: Duration

        /// The instant `duration` later.
        func advanced(by duration: Duration) -> Instant {
            Instant(offset: self.offset + duration)
        }

        /// The duration from this instant to `other`.
        func duration(to other: Instant) -> Duration {
            other.offset - self.offset
        }

        /// Whether `lhs` comes first.
        static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }
    }

    private struct Sleeper: Comparable {
        var deadline: Instant
        var sequence: UInt64
        var continuation: CheckedContinuation<Void, any Error>

        static func < (lhs: Sleeper, rhs: Sleeper) -> Bool {
            (lhs.deadline, lhs.sequence) < (rhs.deadline, rhs.sequence)
        }

        static func == (lhs: Sleeper, rhs: Sleeper) -> Bool {
            lhs.deadline == rhs.deadline && lhs.sequence == rhs.sequence
        }
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers = MinHeap<Sleeper>()
        var nextSequence: UInt64 = 0
        var liveTasks = 0
        var idleWaiter: CheckedContinuation<Void, Never>?
        var isStopped = false
        var wakeUps = 0

        var isIdle: Bool { self.sleepers.count == self.liveTasks }

        /// The waiter to resume, if every live task is now parked.
        mutating func takeWaiterIfIdle() -> CheckedContinuation<Void, Never>? {
            guard self.isIdle, let waiter = self.idleWaiter else { return nil }
            self.idleWaiter = nil
            return waiter
        }
    }

    private let state = Lock(State())

    /// A clock at offset zero.
    init() {}

    /// The current instant.
    var now: Instant {
        self.state.withLock { $0.now }
    }

    /// Zero: the clock is exact.
    var minimumResolution: Duration { .zero }

    /// Whether the run has ended; every sleep now throws.
    var isStopped: Bool {
        self.state.withLock { $0.isStopped }
    }

    /// How many sleepers the run has woken so far: the number of events simulated.
    var wakeUps: Int {
        self.state.withLock { $0.wakeUps }
    }

    /// Parks the calling task until the simulation reaches `deadline`.
    ///
    /// - Throws: `CancellationError` once the run has ended.
    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Action {
                case resume
                case stop
                case park(CheckedContinuation<Void, Never>?)
            }
            let action: Action = self.state.withLock { state in
                if state.isStopped { return .stop }
                if deadline <= state.now { return .resume }
                state.nextSequence += 1
                state.sleepers.insert(
                    Sleeper(deadline: deadline, sequence: state.nextSequence, continuation: continuation))
                return .park(state.takeWaiterIfIdle())
            }
            switch action {
            case .resume: continuation.resume()
            case .stop: continuation.resume(throwing: CancellationError())
            case .park(let waiter): waiter?.resume()
            }
        }
    }

    /// Starts `body` as a simulated task in `group`, and returns once it has parked or finished.
    ///
    /// Starting tasks one at a time keeps even the first sleeps in a fixed order.
    func spawn<Result: Sendable>(
        in group: inout TaskGroup<Result>,
        _ body: @escaping @Sendable () async -> Result
    ) async {
        self.state.withLock { $0.liveTasks += 1 }
        group.addTask {
            let result = await body()
            self.taskFinished()
            return result
        }
        await self.waitUntilIdle()
    }

    /// Runs the simulation until no sleeper is due at or before `end`, then ends it.
    func run(until end: Instant) async {
        while true {
            await self.waitUntilIdle()
            let next: Sleeper? = self.state.withLock { state in
                guard let first = state.sleepers.minimum, first.deadline <= end else { return nil }
                state.now = first.deadline
                state.wakeUps += 1
                return state.sleepers.removeMinimum()
            }
            guard let next else { break }
            next.continuation.resume()
        }
        let remaining: [Sleeper] = self.state.withLock { state in
            state.isStopped = true
            state.now = Swift.max(state.now, end)
            return state.sleepers.removeAll()
        }
        for sleeper in remaining {
            sleeper.continuation.resume(throwing: CancellationError())
        }
    }

    private func taskFinished() {
        let waiter = self.state.withLock { state in
            state.liveTasks -= 1
            return state.takeWaiterIfIdle()
        }
        waiter?.resume()
    }

    private func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isIdle: Bool = self.state.withLock { state in
                if state.isIdle || state.isStopped { return true }
                state.idleWaiter = continuation
                return false
            }
            if isIdle { continuation.resume() }
        }
    }
}
