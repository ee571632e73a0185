import Synchronization

/// The shared state of a ``RateLimiter``: its state machine behind a lock, and the
/// token bucket's tokens lent to a lock-free path.
///
/// After each locked step, a token bucket lends every token it holds to
/// ``lentTokens``, with the span in which they may be taken: from the period's
/// start to the next refill, in whole nanoseconds, rounded inwards. A caller whose
/// clock reads within the span takes a token with one compare-and-exchange and no
/// lock, exactly as the machine would have granted it (nothing refills within the
/// span). A caller that finds no lent token, or a clock outside the span, takes the
/// lock; the locked step first takes back what is left of the loan, so the machine
/// never counts a token twice. A sliding window lends nothing and always locks.
final class RateLimiterStorage: Sendable {
    let machine: Lock<RateLimiterStateMachine>
    /// Tokens lent to the lock-free path; only taken from outside the lock.
    let lentTokens: Atomic<Int>
    /// The span of the loan, in nanoseconds on the limiter's elapsed clock.
    let spanStart: Atomic<Int64>
    let spanEnd: Atomic<Int64>

    init(_ machine: RateLimiterStateMachine) {
        self.machine = Lock(machine)
        self.lentTokens = Atomic(0)
        self.spanStart = Atomic(.max)
        self.spanEnd = Atomic(.min)
        self.machine.withLock { self.lend(from: &$0) }
    }

    /// The lock-free path: a lent token, if one is left and `now` is within the loan's span.
    @inline(__always)
    func tryTakeLentToken(now: () -> Duration) -> Bool {
        var tokens = self.lentTokens.load(ordering: .acquiring)
        guard tokens > 0 else { return false }
        let now = now()
        guard now >= .nanoseconds(self.spanStart.load(ordering: .relaxed)),
            now < .nanoseconds(self.spanEnd.load(ordering: .relaxed))
        else { return false }
        while tokens > 0 {
            let (exchanged, original) = self.lentTokens.compareExchange(
                expected: tokens, desired: tokens &- 1, ordering: .relaxed)
            if exchanged { return true }
            tokens = original
        }
        return false
    }

    /// Runs one step of the machine under the lock, with the loan taken back first and made again after.
    func step<Result>(_ body: (inout RateLimiterStateMachine) -> Result) -> Result {
        self.machine.withLock { machine in
            machine.returnTokens(self.lentTokens.exchange(0, ordering: .acquiringAndReleasing))
            let result = body(&machine)
            self.lend(from: &machine)
            return result
        }
    }

    /// Called under the lock: publishes the span first, then the tokens.
    private func lend(from machine: inout RateLimiterStateMachine) {
        guard let loan = machine.lendTokens() else { return }
        self.spanStart.store(Self.nanoseconds(loan.periodStart, roundingUp: true), ordering: .relaxed)
        self.spanEnd.store(Self.nanoseconds(loan.refillDue, roundingUp: false), ordering: .relaxed)
        self.lentTokens.store(loan.tokens, ordering: .releasing)
    }

    /// `duration` in whole nanoseconds, rounded up or down, clamped to `Int64`.
    private static func nanoseconds(_ duration: Duration, roundingUp: Bool) -> Int64 {
        var (quotient, remainder) = duration.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        if roundingUp, remainder > 0 { quotient += 1 }
        if !roundingUp, remainder < 0 { quotient -= 1 }
        return Int64(exactly: quotient) ?? (quotient < 0 ? .min : .max)
    }
}
