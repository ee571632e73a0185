// Public: the fast-path word is read by code inlined into callers' modules.
public import Synchronization

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
///
/// Under a time-window rule, closed-state successes are counted without the lock
/// too: the lock publishes the current bucket's span and a tagged counter word (in
/// one stripe, or in several once threads count at once: ``CircuitBreakerSuccessStripes``),
/// and a success that finishes within the span adds one to the word with a
/// compare-and-exchange. The next locked update hands the count of every stripe to
/// the window before anything reads it, then publishes afresh (a new tag), so a
/// success counted against an old publication fails its exchange and tries again.
///
/// A success counted without the lock is never judged against the trip rule, so the
/// bucket is published only while no run of successes counted in it could meet the rule
/// (``CircuitBreakerStateMachine/lockFreeSuccessBucket``), decided under the lock from the
/// window as it stands after the hand-over. The tag ties each such success to that
/// decision: it is counted only against the publication it read, and a locked update
/// (a failure, a success that had to take the lock) first takes the count, so the
/// successes counted before it are in the window it judges, and one that comes after finds
/// the next publication, decided with that update's call in the window, or none and takes
/// the lock. So whatever the interleaving, every call that can meet the rule is judged
/// when it is counted: the breaker opens on the call that meets the rule, in the order the
/// calls were counted, never later.
///
/// Every time published for the lock-free paths (the open time's end, the latest time
/// seen, the bucket's span) is a reading of the clock: the machine's time less its
/// offset (``CircuitBreakerStateMachine/offset``), so the lock-free paths compare their
/// readings as they are. A clock that went back: a caller reads the re-base count
/// (``read(_:)``) before it reads the clock, and a reading taken under an older count
/// may belong to the clock's time before the jump, so it counts as the machine's latest
/// time (``update(at:rebasingFrom:_:)``); only a reading under the current count can
/// move the machine's time, or prove a jump.
@usableFromInline
struct CircuitBreakerStorage: ~Copyable, Sendable {
    /// The machine, and the epoch of the bucket whose successes the pending word counts.
    private struct Locked {
        var machine: CircuitBreakerStateMachine
        var publishedEpoch: Int128?
        /// Whether that bucket is published in every stripe, or in the first alone.
        var publishedInEveryStripe = false
        var tag: UInt64 = 0
    }

    private let machine: Lock<Locked>
    @usableFromInline let word: Atomic<UInt64>
    /// Successes counted without the lock, with the published bucket's span; time windows only.
    private let successes: CircuitBreakerSuccessStripes?
    private let hasTimeWindow: Bool
    private let openUntil: Atomic<Int64>
    private let latestSeen: Atomic<Int64>
    /// ``CircuitBreakerStateMachine/rebases``, for callers to read before they read the clock.
    private let rebases: Atomic<UInt64>

    /// A reading of the breaker's clock, with the re-base count read just before it.
    struct Reading {
        var rebases: UInt64
        var elapsed: Duration
    }

    /// Bit 0 of the fast-path word: the breaker is closed.
    @inlinable static var closedBit: UInt64 { 1 }
    /// Bit 1 of the fast-path word: a closed-state success must be recorded (there is a run of failures to reset).
    @inlinable static var pendingFailuresBit: UInt64 { 2 }

    /// ``openUntilMark`` while the breaker is neither open nor isolated.
    static let notOpenMark = Int64.min
    /// ``openUntilMark`` while the breaker is isolated.
    static let isolatedMark = Int64.max

    init(_ machine: CircuitBreakerStateMachine) {
        self.word = Atomic(machine.fastPathWord)
        self.openUntil = Atomic(Self.openUntilMark(of: machine.phase, offset: machine.offset))
        self.latestSeen = Atomic(Self.nanosecondsRoundedUp(machine.latestReading))
        self.rebases = Atomic(machine.rebases)
        switch machine.configuration.tripRule.window?.kind {
        case .time: self.successes = CircuitBreakerSuccessStripes()
        case .count, nil: self.successes = nil
        }
        self.hasTimeWindow = self.successes != nil
        self.machine = Lock(Locked(machine: machine))
    }

    /// Runs `body` on the machine under the lock, then publishes the fast-path word.
    ///
    /// `body` must be the breaker's own code: no user code, no awaits.
    @inline(__always)
    func update<Result>(_ body: (inout CircuitBreakerStateMachine) -> Result) -> Result {
        self.machine.withLock { locked in
            if self.hasTimeWindow { self.takePendingSuccesses(&locked) }
            let result = body(&locked.machine)
            if self.hasTimeWindow { self.publishBucket(&locked) }
            let machine = locked.machine
            self.openUntil.store(Self.openUntilMark(of: machine.phase, offset: machine.offset), ordering: .relaxed)
            // Releasing: a caller that loads the new latest time then sees the re-base count
            // stored before it (the slow-call rule's lock-free admission checks it again).
            self.latestSeen.store(Self.nanosecondsRoundedUp(machine.latestReading), ordering: .releasing)
            self.word.store(machine.fastPathWord, ordering: .releasing)
            return result
        }
    }

    /// The re-base count, then the clock: the order ``update(at:rebasingFrom:_:)`` relies on.
    func read(_ clock: ElapsedClock) -> Reading {
        let rebases = self.rebases.load(ordering: .acquiring)
        return Reading(rebases: rebases, elapsed: clock.now())
    }

    /// Runs `body` on the machine under the lock at `reading`, re-basing first when `reading`
    /// proves the clock went back, then publishes as ``update(_:)`` does.
    ///
    /// - Parameters:
    ///   - reading: From ``read(_:)``. Taken under an older re-base count, it counts as the
    ///     machine's latest time: it may be a reading from before the jump.
    ///   - observed: The latest time an earlier step reported its reading behind (the
    ///     `behind` of its result), when `reading` was read after that step; `nil` otherwise.
    ///   - body: The step, given the reading it counts at.
    /// - Returns: What `body` returned, and the machine's latest time when the reading was
    ///   behind it (a late caller, or a clock that went back).
    func update<Result>(
        at reading: Reading,
        rebasingFrom observed: Duration? = nil,
        _ body: (inout CircuitBreakerStateMachine, Duration) -> Result
    ) -> (result: Result, behind: Duration?) {
        self.update { machine in
            let current = reading.rebases == machine.rebases
            let now = current ? reading.elapsed : machine.latestReading
            if current, let observed, machine.rebase(from: observed, to: now) {
                self.rebases.store(machine.rebases, ordering: .releasing)
            }
            let behind = machine.isBehind(now) ? machine.latest : nil
            return (body(&machine, now), behind)
        }
    }

    /// Runs `body` on the machine under the lock at a reading of `clock` (or at `first`, read
    /// by ``read(_:)``), then publishes as ``update(_:)`` does: for a step that must run once,
    /// such as counting a result.
    ///
    /// A reading behind the machine's latest time (a late reading, or a clock that went back)
    /// does not run `body`: the clock is read again, after that time was seen, and `body` runs
    /// at the second reading, which proves the jump if it is still behind
    /// (``update(at:rebasingFrom:_:)``). The second reading is taken only then.
    func update<Result>(
        atReadingOf clock: ElapsedClock, first: Reading? = nil,
        _ body: (inout CircuitBreakerStateMachine, Duration) -> Result
    ) -> Result {
        let attempt = self.update(at: first ?? self.read(clock)) { machine, now -> Result? in
            machine.isBehind(now) ? nil : body(&machine, now)
        }
        if let result = attempt.result { return result }
        return self.update(at: self.read(clock), rebasingFrom: attempt.behind) { body(&$0, $1) }.result
    }

    /// The re-base count, read without the lock.
    var rebaseCount: UInt64 {
        self.rebases.load(ordering: .acquiring)
    }

    /// Hands the successes counted without the lock to the window, and stops that counting.
    @inline(__always)
    private func takePendingSuccesses(_ locked: inout Locked) {
        // With no bucket published, every stripe holds zero: nothing to take, nothing to stop.
        guard let epoch = locked.publishedEpoch, let successes = self.successes else { return }
        let taken = successes.take(fromEveryStripe: locked.publishedInEveryStripe)
        locked.machine.addLockFreeSuccesses(taken, inBucketOf: epoch)
        locked.publishedEpoch = nil
    }

    /// Publishes the window's current bucket for counting without the lock, if the machine allows it.
    @inline(__always)
    private func publishBucket(_ locked: inout Locked) {
        guard let successes = self.successes, let bucket = locked.machine.lockFreeSuccessBucket else { return }
        // As readings of the clock, which the lock-free path compares as they are.
        let start = Self.nanosecondsRoundedUp(locked.machine.reading(at: bucket.start))
        let end = locked.machine.reading(at: bucket.end)
        let (quotient, remainder) = end.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        guard let end = Int64(exactly: remainder < 0 ? quotient - 1 : quotient), start < end else { return }
        locked.tag = (locked.tag &+ 1) & 0x7FFF_FFFF
        locked.publishedEpoch = bucket.epoch
        locked.publishedInEveryStripe = successes.publish(start: start, end: end, tag: locked.tag)
    }

    /// Counts a closed-state success that finished at `now` (whole nanoseconds of elapsed time)
    /// without the lock (``CircuitBreakerSuccessStripes``), if `now` falls within the published bucket;
    /// returns `false` when the caller must take the lock.
    @inline(__always)
    func countSuccessWithoutLock(atNanoseconds now: Int64) -> Bool {
        self.successes?.countSuccess(atNanoseconds: now) ?? false
    }

    /// The successes counted without the lock since the bucket was last published, not yet
    /// handed to the window; for tests.
    var pendingSuccessCount: Int {
        self.successes?.pendingCount ?? 0
    }

    /// The stripes of a time window's successes counted without the lock; for tests.
    var successStripes: CircuitBreakerSuccessStripes? {
        self.successes
    }

    /// The published ``CircuitBreakerStateMachine/fastPathWord``, read without the lock.
    @inlinable @inline(__always)
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

    /// The latest time the machine had seen when it last changed, as a reading of the clock in
    /// whole nanoseconds rounded up; a caller whose clock reads earlier (a late reading, or a
    /// clock that went back) takes the lock, where the machine counts it as its latest time
    /// (the time left while open, a slow-call rule's start) and a caller may prove the jump.
    @inline(__always)
    var latestSeenMark: Int64 {
        self.latestSeen.load(ordering: .acquiring)
    }

    private static func nanosecondsRoundedUp(_ duration: Duration) -> Int64 {
        let (quotient, remainder) = duration.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return Int64(exactly: remainder > 0 ? quotient + 1 : quotient) ?? (quotient < 0 ? .min : .max)
    }

    /// The mark that publishes `phase`, as a reading of the clock (the machine's time less `offset`).
    private static func openUntilMark(of phase: CircuitBreakerStateMachine.Phase, offset: Duration) -> Int64 {
        switch phase {
        case .open(let until):
            // Rounded down (toward minus infinity): a caller earlier than the mark is earlier than `until`.
            let reading = CircuitBreakerStateMachine.adding(until, .zero - offset)
            let (quotient, remainder) = reading.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
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
