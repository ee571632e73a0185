public import Synchronization

/// The shared state of a ``ConcurrencyLimiter``: an atomic word counting the slots in
/// use, and, behind a lock, the queue's state machine and the queued callers' waiters.
///
/// The word holds the number of slots in use, plus ``queuedFlag`` while anyone
/// waits. With the flag clear, a call takes a slot and gives it back with one
/// atomic instruction each and no lock; a word at or above the limit (the flag
/// makes it huge) sends the caller to the lock. The flag is raised and lowered
/// only under the lock, with the queue: under the lock, the flag is set exactly
/// when the queue is not empty. A slot given back while the flag is set is
/// handed, under the lock, to the first queued caller, so no newcomer overtakes
/// the queue.
///
/// The lock-free admission and give-back are inlinable, so that a caller's
/// specialization of `execute` takes and gives back a slot without a call; the
/// price is that the word and the limit are `@usableFromInline`, and this file
/// has `public import Synchronization`.
@usableFromInline
final class ConcurrencyLimiterStorage: Sendable {
    struct State {
        var machine: ConcurrencyLimiterStateMachine
        var waiters: [UInt64: QueuedCaller] = [:]
    }

    /// Set in ``word`` while callers wait; far above any limit.
    @inlinable static var queuedFlag: Int { 1 << 62 }

    @usableFromInline let word: Atomic<Int>
    @usableFromInline let limit: Int
    let state: Lock<State>

    init(limit: Int, queueLimit: Int) {
        self.limit = limit
        self.word = Atomic(0)
        self.state = Lock(State(machine: ConcurrencyLimiterStateMachine(limit: limit, queueLimit: queueLimit)))
    }

    /// The fast path: a slot if one is free and no one waits, with no lock.
    @inlinable @inline(__always)
    func tryAdmit() -> Bool {
        var word = self.word.load(ordering: .relaxed)
        while word < self.limit {
            let (exchanged, original) = self.word.compareExchange(
                expected: word, desired: word &+ 1, ordering: .acquiring)
            if exchanged { return true }
            word = original
        }
        return false
    }

    /// A slot, a place in the queue with `caller` registered, or a refusal.
    func admit(registering caller: QueuedCaller) -> ConcurrencyLimiterStateMachine.Admission {
        self.state.withLock { state in
            if state.machine.isQueueEmpty {
                // The flag is clear: only the lock-free paths move the word now.
                var word = self.word.load(ordering: .relaxed)
                while true {
                    if state.machine.mayAdmit(inFlight: word) {
                        let (exchanged, original) = self.word.compareExchange(
                            expected: word, desired: word &+ 1, ordering: .acquiring)
                        if exchanged { return .admitted }
                        word = original
                        continue
                    }
                    guard state.machine.queueLimit > 0 else { return .rejected(queued: 0) }
                    // Raise the flag before queueing; a slot given back meanwhile fails the exchange.
                    let (exchanged, original) = self.word.compareExchange(
                        expected: word, desired: word | Self.queuedFlag, ordering: .acquiringAndReleasing)
                    if exchanged { break }
                    word = original
                }
            }
            let admission = state.machine.enqueue()
            if case .queued(let ticket) = admission {
                state.waiters[ticket] = caller
            }
            return admission
        }
    }

    /// Gives a slot back: one atomic instruction, and the lock only when callers wait.
    @inlinable @inline(__always)
    func release() {
        if self.giveBack() {
            self.handOver()
        }
    }

    /// Gives a slot back, lock-free; whether callers were queued, so the slot must be handed over.
    @inlinable @inline(__always)
    func giveBack() -> Bool {
        let (old, _) = self.word.wrappingSubtract(1, ordering: .releasing)
        return old & Self.queuedFlag != 0
    }

    /// Passes a slot given back to the first queued caller, if one is still there and a slot is still free.
    ///
    /// Between a lock-free give-back and this hand-over, another hand-over or a
    /// queued caller leaving can empty the queue and lower the flag; a newcomer may
    /// then take the free slot lock-free, and someone may queue again. The slot is
    /// then no longer free, and handing it over would put one call more in flight
    /// than the limit; whoever holds it hands it over when they give it back.
    @usableFromInline @inline(never)
    func handOver() {
        let next: QueuedCaller? = self.state.withLock { state in
            guard self.word.load(ordering: .relaxed) & ~Self.queuedFlag < self.limit else { return nil }
            guard let ticket = state.machine.dequeue() else { return nil }  // everyone left: the slot is free
            self.word.wrappingAdd(1, ordering: .relaxed)  // the slot passes on
            self.lowerFlagIfQueueEmpty(state.machine)
            return state.waiters.removeValue(forKey: ticket)
        }
        next?.resolve(.success(()))
    }

    /// Takes a queued caller out; its waiter, when it was still queued.
    func remove(_ ticket: UInt64) -> QueuedCaller? {
        self.state.withLock { state in
            guard state.machine.removeFromQueue(ticket) else { return nil }
            self.lowerFlagIfQueueEmpty(state.machine)
            return state.waiters.removeValue(forKey: ticket)
        }
    }

    /// Called under the lock after the queue shrank.
    private func lowerFlagIfQueueEmpty(_ machine: ConcurrencyLimiterStateMachine) {
        if machine.isQueueEmpty {
            self.word.bitwiseAnd(~Self.queuedFlag, ordering: .acquiringAndReleasing)
        }
    }

    /// Whether a call holds a slot or a caller waits for one; lock-free, so that a registry
    /// may ask under its own lock.
    var isInUse: Bool {
        self.word.load(ordering: .acquiring) != 0
    }

    /// Slots in use and callers queued, read together under the lock.
    var counts: (inFlight: Int, queued: Int) {
        self.state.withLock { state in
            (self.word.load(ordering: .relaxed) & ~Self.queuedFlag, state.machine.queuedCount)
        }
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
