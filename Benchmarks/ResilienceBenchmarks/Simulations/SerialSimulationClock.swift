import Resilience

/// The clock of a ``SerialSimulation``: virtual time that moves only when every job has run.
///
/// Sleeps honour cancellation, as a real clock's do: a cancelled sleeper leaves at
/// once with `CancellationError` (the strategies cancel the timers they no longer
/// need). Ties between equal deadlines break in the order the sleeps were requested.
final class SerialSimulationClock: Clock, Sendable {
    /// An instant: the time elapsed since the simulation started.
    typealias Instant = SimulationClock.Instant

    private struct Entry: Comparable {
        var deadline: Instant
        var sequence: UInt64

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            (lhs.deadline, lhs.sequence) < (rhs.deadline, rhs.sequence)
        }
    }

    private struct State {
        var now = Instant(offset: .zero)
        /// Deadlines; an entry whose sleeper was cancelled stays until it reaches the top.
        var entries = MinHeap<Entry>()
        var sleepers: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var nextSequence: UInt64 = 0
        var isStopped = false
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

    /// Parks the calling task until the simulation reaches `deadline`.
    ///
    /// - Throws: `CancellationError` when the task is cancelled or the run has ended.
    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let sequence = self.state.withLock { state in
            state.nextSequence += 1
            return state.nextSequence
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action {
                    case resume
                    case stop
                    case park
                }
                let action: Action = self.state.withLock { state in
                    if state.isStopped || Task.isCancelled { return .stop }
                    if deadline <= state.now { return .resume }
                    state.sleepers[sequence] = continuation
                    state.entries.insert(Entry(deadline: deadline, sequence: sequence))
                    return .park
                }
                switch action {
                case .resume: continuation.resume()
                case .stop: continuation.resume(throwing: CancellationError())
                case .park: break
                }
            }
        } onCancel: {
            let sleeper = self.state.withLock { $0.sleepers.removeValue(forKey: sequence) }
            sleeper?.resume(throwing: CancellationError())
        }
    }

    /// Moves time to the earliest deadline and wakes its sleeper; `false` when no one sleeps.
    ///
    /// Called by the ``SerialSimulation`` once every job has run.
    func wakeNext() -> Bool {
        let sleeper: CheckedContinuation<Void, any Error>? = self.state.withLock { state in
            while let entry = state.entries.removeMinimum() {
                guard let sleeper = state.sleepers.removeValue(forKey: entry.sequence) else { continue }
                state.now = entry.deadline
                return sleeper
            }
            return nil
        }
        sleeper?.resume()
        return sleeper != nil
    }

    /// Ends the run: every sleeper, and every later sleep, throws `CancellationError`.
    func stop() {
        let sleepers: [CheckedContinuation<Void, any Error>] = self.state.withLock { state in
            state.isStopped = true
            var sleepers: [CheckedContinuation<Void, any Error>] = []
            while let entry = state.entries.removeMinimum() {
                if let sleeper = state.sleepers.removeValue(forKey: entry.sequence) { sleepers.append(sleeper) }
            }
            return sleepers
        }
        for sleeper in sleepers { sleeper.resume(throwing: CancellationError()) }
    }
}
