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
final class RateLimiterStorage: Sendable {
    struct State {
        var machine: RateLimiterStateMachine
        /// What is lent now.
        var loan: RateLimiterStateMachine.Loan
        /// The clock's margin when the loan was made; `nil` when its bound is its precise reading.
        var margin: Int64?
    }

    static let permitMask: UInt64 = 0xFFFF_FFFF

    let state: Lock<State>
    let clock: ElapsedClock
    /// The lent permits left, and the loan's number; see the type's comment.
    let loanWord: Atomic<UInt64>
    /// The span of the loan, in nanoseconds on the limiter's elapsed clock.
    let spanStart: Atomic<Int64>
    let spanEnd: Atomic<Int64>

    init(_ machine: RateLimiterStateMachine, clock: ElapsedClock) {
        self.clock = clock
        self.loanWord = Atomic(0)
        self.spanStart = Atomic(.max)
        self.spanEnd = Atomic(.min)
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

    /// Runs one step of the machine at `now` under the lock, with the loan settled first and made again after.
    ///
    /// `now` was read before the lock, so it may be older than a reading another caller has
    /// already applied; the machine counts it as no earlier than that one.
    func step<Result>(at now: Duration, _ body: (inout RateLimiterStateMachine) -> Result) -> Result {
        self.state.withLock { state in
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
            let result = body(&state.machine)
            self.lend(&state)
            return result
        }
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
