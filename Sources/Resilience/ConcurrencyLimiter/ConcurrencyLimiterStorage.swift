/// The lock-guarded state of a ``ConcurrencyLimiter``: the state machine and the queued callers' waiters.
final class ConcurrencyLimiterStorage: Sendable {
    struct State {
        var machine: ConcurrencyLimiterStateMachine
        var waiters: [UInt64: QueuedCaller] = [:]
    }

    let state: Lock<State>

    init(limit: Int, queueLimit: Int) {
        self.state = Lock(State(machine: ConcurrencyLimiterStateMachine(limit: limit, queueLimit: queueLimit)))
    }

    /// The fast path: a slot if one is free and no one waits.
    @inline(__always)
    func tryAdmit() -> Bool {
        self.state.withLock { $0.machine.tryAdmit() }
    }

    /// A slot, a place in the queue with `caller` registered, or a refusal.
    func admit(registering caller: QueuedCaller) -> ConcurrencyLimiterStateMachine.Admission {
        self.state.withLock { state in
            let admission = state.machine.admit()
            if case .queued(let ticket) = admission {
                state.waiters[ticket] = caller
            }
            return admission
        }
    }

    /// Gives a slot back and hands it to the first queued caller, if any, after unlocking.
    func release() {
        let next: QueuedCaller? = self.state.withLock { state in
            state.machine.release().flatMap { state.waiters.removeValue(forKey: $0) }
        }
        next?.resolve(.success(()))
    }

    /// Takes a queued caller out; its waiter, when it was still queued.
    func remove(_ ticket: UInt64) -> QueuedCaller? {
        self.state.withLock { state in
            state.machine.removeFromQueue(ticket) ? state.waiters.removeValue(forKey: ticket) : nil
        }
    }

    /// Slots in use and callers queued, read together.
    var counts: (inFlight: Int, queued: Int) {
        self.state.withLock { ($0.machine.inFlight, $0.machine.queuedCount) }
    }
}

/// One caller waiting in a limiter's queue: resolved once, by a release, its
/// cancellation or its queue timeout, whichever comes first, even before it parks.
final class QueuedCaller: Sendable {
    private enum Phase {
        case idle
        case parked(CheckedContinuation<Void, any Error>)
        case resolved(Result<Void, any Error>)
        case done
    }

    private let phase = Lock(Phase.idle)

    /// Waits until resolved.
    func park() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let early: Result<Void, any Error>? = self.phase.withLock { phase in
                if case .resolved(let result) = phase {
                    phase = .done
                    return result
                }
                phase = .parked(continuation)
                return nil
            }
            if let early { continuation.resume(with: early) }
        }
    }

    /// Answers the caller, once; later answers are ignored.
    func resolve(_ result: Result<Void, any Error>) {
        let continuation: CheckedContinuation<Void, any Error>? = self.phase.withLock { phase in
            switch phase {
            case .idle:
                phase = .resolved(result)
                return nil
            case .parked(let continuation):
                phase = .done
                return continuation
            case .resolved, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
