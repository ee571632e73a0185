import Synchronization

/// The shared, mutable part of a ``CircuitBreaker``: its state machine behind
/// the package's lock, an atomic word that publishes the state the
/// closed-state fast path needs, and a second one that publishes when an open
/// breaker's open time ends, so that a rejection needs no lock.
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
    private let openUntil: Atomic<Int64>
    private let latestSeen: Atomic<Int64>

    /// ``openUntilMark`` while the breaker is neither open nor isolated.
    static let notOpenMark = Int64.min
    /// ``openUntilMark`` while the breaker is isolated.
    static let isolatedMark = Int64.max

    init(_ machine: CircuitBreakerStateMachine) {
        self.word = Atomic(machine.fastPathWord)
        self.openUntil = Atomic(Self.openUntilMark(of: machine.phase))
        self.latestSeen = Atomic(Self.nanosecondsRoundedUp(machine.latest))
        self.machine = Lock(machine)
    }

    /// Runs `body` on the machine under the lock, then publishes the fast-path word.
    ///
    /// `body` must be the breaker's own code: no user code, no awaits.
    @inline(__always)
    func update<Result>(_ body: (inout CircuitBreakerStateMachine) -> Result) -> Result {
        self.machine.withLock { machine in
            let result = body(&machine)
            self.openUntil.store(Self.openUntilMark(of: machine.phase), ordering: .relaxed)
            if case .open = machine.phase {
                self.latestSeen.store(Self.nanosecondsRoundedUp(machine.latest), ordering: .relaxed)
            }
            self.word.store(machine.fastPathWord, ordering: .releasing)
            return result
        }
    }

    /// The published ``CircuitBreakerStateMachine/fastPathWord``, read without the lock.
    @inline(__always)
    var fastPathWord: UInt64 {
        self.word.load(ordering: .relaxed)
    }

    /// When the open time ends, in whole nanoseconds of elapsed time rounded down, read
    /// without the lock; ``isolatedMark`` while isolated, ``notOpenMark`` otherwise.
    ///
    /// A caller that reads an earlier time than this mark is rejected at once: the machine
    /// would reject it too, since its open time cannot have passed. Like the fast-path word,
    /// a mark read just before a change answers as if the call had arrived before it.
    @inline(__always)
    var openUntilMark: Int64 {
        self.openUntil.load(ordering: .acquiring)
    }

    /// The latest time the machine had seen when it last changed while open, in whole
    /// nanoseconds rounded up; a caller whose clock reads earlier (a clock that went back)
    /// takes the lock, since the machine measures the time left from its latest time.
    @inline(__always)
    var latestSeenMark: Int64 {
        self.latestSeen.load(ordering: .acquiring)
    }

    private static func nanosecondsRoundedUp(_ duration: Duration) -> Int64 {
        let (quotient, remainder) = duration.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return Int64(exactly: remainder > 0 ? quotient + 1 : quotient) ?? (quotient < 0 ? .min : .max)
    }

    /// The mark that publishes `phase`.
    private static func openUntilMark(of phase: CircuitBreakerStateMachine.Phase) -> Int64 {
        switch phase {
        case .open(let until):
            // Rounded down (toward minus infinity): a caller earlier than the mark is earlier than `until`.
            let (quotient, remainder) = until.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
            let nanoseconds = remainder < 0 ? quotient - 1 : quotient
            // Beyond the range (centuries away), publish nothing: the lock decides.
            guard let mark = Int64(exactly: nanoseconds), mark > .min, mark < .max else { return Self.notOpenMark }
            return mark
        case .isolated:
            return Self.isolatedMark
        case .closed, .halfOpen:
            return Self.notOpenMark
        }
    }

    /// Whether the breaker is closed, without the lock.
    var isClosed: Bool {
        self.word.load(ordering: .acquiring) & CircuitBreakerStateMachine.closedBit != 0
    }
}
