import Synchronization

/// The shared, mutable part of a ``CircuitBreaker``: its state machine behind
/// the package's lock, and an atomic word that publishes the state the
/// closed-state fast path needs.
///
/// The word (see ``CircuitBreakerStateMachine/fastPathWord``) is written only
/// while the lock is held, right after the machine changes, so it never runs
/// ahead of the machine. A reader that sees an out-of-date word is either
/// admitted as if it had arrived just before the change (its result then
/// carries the old generation and is ignored), or takes the lock and gets the
/// machine's own answer.
struct CircuitBreakerStorage: ~Copyable, Sendable {
    private let machine: Lock<CircuitBreakerStateMachine>
    private let word: Atomic<UInt64>

    init(_ machine: CircuitBreakerStateMachine) {
        self.word = Atomic(machine.fastPathWord)
        self.machine = Lock(machine)
    }

    /// Runs `body` on the machine under the lock, then publishes the fast-path word.
    ///
    /// `body` must be the breaker's own code: no user code, no awaits.
    @inline(__always)
    func update<Result>(_ body: (inout CircuitBreakerStateMachine) -> Result) -> Result {
        self.machine.withLock { machine in
            let result = body(&machine)
            self.word.store(machine.fastPathWord, ordering: .releasing)
            return result
        }
    }

    /// The published ``CircuitBreakerStateMachine/fastPathWord``, read without the lock.
    @inline(__always)
    var fastPathWord: UInt64 {
        self.word.load(ordering: .relaxed)
    }

    /// Whether the breaker is closed, without the lock.
    var isClosed: Bool {
        self.word.load(ordering: .acquiring) & CircuitBreakerStateMachine.closedBit != 0
    }
}
