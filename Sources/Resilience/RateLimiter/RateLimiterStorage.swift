import Synchronization

/// The shared state of a ``RateLimiter``: its state machine behind a lock, and the
/// permits it has lent to a lock-free path.
///
/// After each locked step the machine lends every free permit (``RateLimiterStateMachine/lend()``)
/// with the span in which taking one is exact: for a token bucket, from the period's
/// start until the bucket would have filled; for a sliding window, the current segment.
/// The span is published in whole nanoseconds of the limiter's elapsed clock, rounded
/// inwards. A caller takes a lent permit with one compare-and-exchange and no lock
/// when a cheap reading of the clock that is never early
/// (``ElapsedClock/upperBoundNanoseconds()``: for the system's continuous clock on Linux,
/// the later of the coarse monotonic and the coarse wall clock, each plus a margin, no
/// precise clock read; for any other clock, its precise reading) falls within the span.
/// Since the reading is never early, the permit is taken before the span ends, where
/// taking it is what the machine would do. A caller that finds no lent permit, or a
/// reading outside the span, takes the lock; the locked step first settles the loan (the
/// machine never counts a permit twice).
///
/// "Never early" assumes the coarse clocks trail the precise one by at most two ticks
/// and a half (between one and two, a little over two under load, were measured), and
/// that the system was not both
/// suspended and its wall clock set back since the margins were measured. When a
/// loan is settled past its span, the storage asks the clock whether any bound read
/// during the loan can have trailed (``ElapsedClock/upperBoundsHeld(below:sinceMargin:)``),
/// and if so the machine counts the loan's permits as taken at the settling time or the
/// span's end, whichever is later (the settling time was read before the lock, and may
/// be older than the takes), which can only refuse more, never admit more.
///
/// The loan word holds the permits left in its low 32 bits and the loan's number in the
/// high 32 bits, so a compare-and-exchange made against one loan fails against the next
/// one even when both lent as many permits (a taker checked the clock against the first
/// loan's span only). Capacities and limits are at most 10^9, below 2^32.
///
/// A clock that jumps back: a caller reads the re-base count (``rebases``) before it
/// reads the clock (``read()``). A reading behind the machine's latest time may be stale
/// (read before the latest one was) or a jump; a step reports it, and a caller that
/// needs the time to move (a refusal, or ``RateLimiter/availablePermits``) reads the
/// clock again and steps once more with the latest time it saw
/// (``step(at:rebasingFrom:_:)``). Read after that time was applied, a reading still
/// behind it proves the jump, and the machine re-bases its marks onto the new readings
/// (``RateLimiterStateMachine/rebase(from:to:)``), counting the jump as no time
/// elapsed, and the count goes up. A reading taken under an older count may belong to
/// the clock's time before the jump, so it counts as no time elapsed either, and never
/// re-bases. The loans follow: the next one is lent in the re-based time, and the
/// lock-free path, whose reading is taken after it loads the loan, checks it against
/// that loan's span.
final class RateLimiterStorage: Sendable {
    struct State {
        var machine: RateLimiterStateMachine
        /// What is lent now.
        var loan: RateLimiterStateMachine.Loan
        /// The clock's margin when the loan was made; `nil` when its bound is its precise reading.
        var margin: Int64?
        /// How many times the machine re-based its marks onto a clock that went back.
        var rebases: UInt64 = 0
    }

    /// A reading of the limiter's clock, with the re-base count read just before it.
    struct Reading {
        var rebases: UInt64
        var elapsed: Duration
    }

    /// What a step returned, and the machine's latest time when the step's reading was behind it.
    struct Outcome<Result> {
        var result: Result
        /// The machine's latest time, when the reading was behind it (stale, or a clock that went back).
        var behind: Duration?
    }

    static let permitMask: UInt64 = 0xFFFF_FFFF

    let state: Lock<State>
    let clock: ElapsedClock
    /// The lent permits left, and the loan's number; see the type's comment.
    let loanWord: Atomic<UInt64>
    /// The span of the loan, in nanoseconds on the limiter's elapsed clock.
    let spanStart: Atomic<Int64>
    let spanEnd: Atomic<Int64>
    /// ``State/rebases``, for callers to read before they read the clock.
    let rebases: Atomic<UInt64>
    /// How many callers are waiting for a permit (``RateLimiter/acquireSlowly(retryAfter:)``),
    /// from before the attempt that decides they wait until after their last attempt. Touched
    /// only by callers that were refused once, never on the lock-free path.
    let waiters: Atomic<Int>

    init(_ machine: RateLimiterStateMachine, clock: ElapsedClock) {
        self.clock = clock
        self.loanWord = Atomic(0)
        self.spanStart = Atomic(.max)
        self.spanEnd = Atomic(.min)
        self.rebases = Atomic(0)
        self.waiters = Atomic(0)
        let empty = RateLimiterStateMachine.Loan(permits: 0, spanStart: .zero, spanEnd: .zero)
        self.state = Lock(State(machine: machine, loan: empty, margin: nil))
        self.state.withLock { self.lend(&$0) }
    }

    /// The lock-free path: a lent permit, if one is left and the clock's bound is within the loan's span.
    ///
    /// The clock is read after the loan word, and the compare-and-exchange succeeds only if
    /// the word, loan number included, is still what was read: the permit is then taken
    /// from the loan whose span was checked, at a time the bound says is within it.
    @inline(__always)
    func tryTakeLentPermit() -> Bool {
        var word = self.loanWord.load(ordering: .acquiring)
        guard word & Self.permitMask != 0 else { return false }
        guard let now = self.clock.upperBoundNanoseconds() else { return false }
        // With the releasing exchange below: a settler that empties the loan after this take
        // also sees any new measurement of the clock's margins that the bound was read with,
        // so its check of the margin token fails rather than trusting a changed margin.
        atomicMemoryFence(ordering: .acquiring)
        guard now >= self.spanStart.load(ordering: .acquiring), now < self.spanEnd.load(ordering: .acquiring)
        else { return false }
        while true {
            let (exchanged, original) = self.loanWord.compareExchange(
                expected: word, desired: word &- 1, ordering: .releasing)
            if exchanged { return true }
            // Another taker came first. A different loan's span was not checked: leave it to the lock.
            guard original & ~Self.permitMask == word & ~Self.permitMask, original & Self.permitMask != 0 else {
                return false
            }
            word = original
        }
    }

    /// Counts a caller as waiting, before the attempt that decides it waits.
    ///
    /// Sequentially consistent, as the registry's load of the count: a registry that misses
    /// this increment loaded the count before it, so read its clock before the caller's
    /// attempt reads the limiter's.
    func beginWaiting() {
        self.waiters.add(1, ordering: .sequentiallyConsistent)
    }

    /// Stops counting a caller as waiting, after its last attempt: a registry that sees the
    /// count fall also sees the permit the attempt took.
    func endWaiting() {
        self.waiters.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// The re-base count, then the clock: the order a step relies on.
    func read() -> Reading {
        let rebases = self.rebases.load(ordering: .acquiring)
        return Reading(rebases: rebases, elapsed: self.clock.now())
    }

    /// Runs one step of the machine at `now` under the lock, with the loan settled first and made again after.
    ///
    /// `now` was read before the lock, so it may be older than a reading another caller has
    /// already applied; the machine counts it as no earlier than that one. It never re-bases.
    func step<Result>(at now: Duration, _ body: (inout RateLimiterStateMachine) -> Result) -> Result {
        self.state.withLock { state in
            self.settle(&state, at: now)
            let result = body(&state.machine)
            self.lend(&state)
            return result
        }
    }

    /// Runs one step of the machine at `reading` under the lock, re-basing first when
    /// `reading` proves the clock went back.
    ///
    /// - Parameters:
    ///   - reading: From ``read()``. Taken under an older re-base count, it counts as the
    ///     machine's latest time: it may be a reading from before the jump.
    ///   - observed: The ``Outcome/behind`` of an earlier step whose reading was behind,
    ///     when `reading` was read after that step; `nil` otherwise.
    ///   - body: The step, given the time it counts at.
    func step<Result>(
        at reading: Reading,
        rebasingFrom observed: Duration? = nil,
        _ body: (inout RateLimiterStateMachine, Duration) -> Result
    ) -> Outcome<Result> {
        self.state.withLock { state in
            let current = reading.rebases == state.rebases
            let now = current ? reading.elapsed : state.machine.latest
            self.settle(&state, at: now)
            if current, let observed, state.machine.rebase(from: observed, to: now) {
                state.rebases &+= 1
                self.rebases.store(state.rebases, ordering: .releasing)
                Self.rebasesAnywhere.add(1, ordering: .relaxed)
            }
            let behind = now < state.machine.latest ? state.machine.latest : nil
            let result = body(&state.machine, now)
            self.lend(&state)
            return Outcome(result: result, behind: behind)
        }
    }

    /// How many times any limiter in the process re-based onto a clock that went back; bumped
    /// under that limiter's lock, so a reader that takes a limiter's lock after its re-base
    /// sees the bump. ``RateLimiterRegistry`` reads it before it reads a clock, to tell whether
    /// the reading may belong to a limiter's time before a re-base.
    static let rebasesAnywhere = Atomic<UInt64>(0)

    /// Whether the limiter would be back at its full allowance at `reading` if nothing more
    /// were taken: no caller waiting for a permit, every permit lent still unused, and the
    /// machine, with them given back, full at that time (or at its latest time, when that is
    /// later, or when `reading` is `nil`).
    ///
    /// A waiting caller makes the answer "no" whatever the machine holds: woken at the
    /// refill, it finds the bucket full and takes a token from it, which a fresh limiter for
    /// its key would hand out a second time. The count is loaded before the loan word, so a
    /// waiter's decrement seen here comes with the permit it took before it.
    ///
    /// Reads no clock, so it may be asked under another lock. `reading` was read before this
    /// call, so it may trail the limiter's time; it then counts as the latest time the limiter
    /// has seen, and a reading that trails only makes the answer "no" more often. A reading
    /// taken before ``rebasesAnywhere`` moved from `rebasesBefore` may belong to the time
    /// before a clock went back, and would then run ahead of this limiter's re-based time: it
    /// is not used. Permits taken from a loan count as taken within its span, as the coarse
    /// bound that took them promises (``settle(_:at:)`` doubts it only after a suspension and
    /// a step back of the wall clock).
    func isAtFullAllowance(at reading: Duration?, rebasesBefore: UInt64) -> Bool {
        self.state.withLock { state in
            // Sequentially consistent, as the waiter's increment: one that this load misses came
            // after it, and so after `reading`, and the waiter's attempt reads the clock later still.
            guard self.waiters.load(ordering: .sequentiallyConsistent) == 0 else { return false }
            // Under the lock: a re-base of this limiter bumped the count before releasing it.
            let trusted = Self.rebasesAnywhere.load(ordering: .relaxed) == rebasesBefore ? reading : nil
            var machine = state.machine
            let now = trusted ?? machine.latest
            let unused = Int(self.loanWord.load(ordering: .acquiring) & Self.permitMask)
            machine.settle(state.loan, unused: unused, at: now, takesMayBeLate: false)
            return machine.isAtFullAllowance(at: now)
        }
    }

    /// Called under the lock: settles the loan at `now` (see the type's comment).
    private func settle(_ state: inout State, at now: Duration) {
        let word = self.loanWord.bitwiseAnd(~Self.permitMask, ordering: .acquiringAndReleasing).oldValue
        let unused = Int(word & Self.permitMask)
        var takesMayBeLate = false
        var settledAt = now
        if let margin = state.margin, unused < state.loan.permits {
            // Reads the system clock only (never user code), after the last lent permit was taken.
            takesMayBeLate = !self.clock.upperBoundsHeld(
                below: Self.nanoseconds(state.loan.spanEnd, roundingUp: false), sinceMargin: margin)
            // A late take can have come after `now` was read, up to the moment the loan was
            // emptied above: count it no earlier than a reading taken after that moment (the
            // system clock again, since a margin is kept for it alone).
            if takesMayBeLate { settledAt = Swift.max(now, self.clock.now()) }
        }
        state.machine.settle(state.loan, unused: unused, at: settledAt, takesMayBeLate: takesMayBeLate)
    }

    /// Called under the lock: publishes the span first, then the permits under the next loan number.
    private func lend(_ state: inout State) {
        let loan = state.machine.lend()
        state.loan = loan
        state.margin = self.clock.upperBoundMargin()
        self.spanStart.store(Self.nanoseconds(loan.spanStart, roundingUp: true), ordering: .releasing)
        self.spanEnd.store(Self.nanoseconds(loan.spanEnd, roundingUp: false), ordering: .releasing)
        let number = (self.loanWord.load(ordering: .relaxed) >> 32) &+ 1
        self.loanWord.store(number << 32 | UInt64(loan.permits), ordering: .releasing)
    }

    /// `duration` in whole nanoseconds, rounded up or down, clamped to `Int64`.
    static func nanoseconds(_ duration: Duration, roundingUp: Bool) -> Int64 {
        var (quotient, remainder) = duration.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        if roundingUp, remainder > 0 { quotient += 1 }
        if !roundingUp, remainder < 0 { quotient -= 1 }
        return Int64(exactly: quotient) ?? (quotient < 0 ? .min : .max)
    }
}
