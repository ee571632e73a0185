import Synchronization

extension RetryPolicy {
    /// How a wait before a retry ended, and whether the call's deadline had passed first.
    enum WaitEnd {
        /// The wait ran to its end before the deadline.
        case elapsed
        /// The wait ran to its end, and the deadline had passed by then, before any cancellation
        /// of the caller: the clock jumped past both.
        case elapsedPastDeadline
        /// The caller was cancelled during the wait, before the deadline.
        case cancelled
        /// The caller was cancelled after the clock had passed the wait's end and the deadline,
        /// while the wait had not woken yet.
        case cancelledPastDeadline
    }

    /// Waits `delay` on the policy's clock before a retry of the call that began at `start`.
    ///
    /// No wait starts that would end past the deadline, so the caller's cancellation during one
    /// is the caller's, and a deadline that passes after it ends is the deadline's. A clock that
    /// jumps past the wait's end and the deadline at once leaves both passed when the caller
    /// cancels: then whichever came first decides, as it does for a time limit (see
    /// ``Timeout``), settled by `racingDeadline(isolation:start:end:_:)`. A call with no deadline,
    /// its own or an enclosing call's, has no race to settle, and waits as a plain sleep.
    ///
    /// A `delay` of zero or less does not sleep: a clock whose timers wake late would hold the
    /// retry for the timer's lag, although nothing is left to wait for.
    ///
    /// A library time limit around the call whose deadline has passed, before the wait or by its
    /// end, ends it as its cancellation would (``WaitEnd/cancelled``), also before the limit's
    /// timer has woken: no wait starts, and no retry follows one (see `enclosingLimitEnds(start:)`).
    func waitBeforeRetry(isolation: isolated (any Actor)?, _ delay: Duration, start: Duration) async -> WaitEnd {
        if self.enclosingLimitEnds(start: start) { return .cancelled }
        let wake = self.clock.now() + delay
        let (elapsed, passedFirst) = await self.racingDeadline(isolation: isolation, start: start) {
            // As a sleep that is already over: it ends at once, cancelled if the caller is.
            guard delay > .zero else { return !Task.isCancelled }
            do {
                try await self.clock.sleepUntil(wake)
                return true
            } catch {
                return false
            }
        }
        switch (elapsed, passedFirst == .deadline) {
        case (true, false): return self.enclosingLimitEnds(start: start) ? .cancelled : .elapsed
        case (true, true): return .elapsedPastDeadline
        case (false, false): return .cancelled
        case (false, true): return .cancelledPastDeadline
        }
    }

    /// Which limit of a wait had passed when `racingDeadline(isolation:start:end:_:)` first read the clock.
    enum PassedLimit: UInt8 {
        /// The wait's own end (a ``ConnectivityWait``'s `limit`), no later than the deadline.
        case end = 1
        /// The call's deadline, its own or an enclosing call's.
        case deadline = 2
    }

    /// Runs `wait`, a wait of the call that began at `start` (before a retry, for a shared
    /// refresh of its credential, for the network), and tells which of its limits had passed
    /// before the caller's cancellation: the wait's own `end` on the policy's clock, if it has one
    /// that ends the call (a ``ConnectivityWait``'s `limit`), or the call's deadline, its own or
    /// an enclosing call's.
    ///
    /// The wait's own bound ends it at its limit at the latest, so without a clock that jumps, a
    /// cancellation during it is the caller's. A clock that jumps past a limit leaves it passed
    /// when the caller cancels, maybe before the wait's timer has woken: then whichever came
    /// first decides, as it does for a time limit (see ``Timeout``). The caller's cancellation
    /// reads the clock as it comes, in a cancellation handler, and the end of the wait reads it
    /// as the wait returns; the first of the two readings settles the race, once.
    /// `Task.isCancelled` cannot tell the two apart, and a task group's child cancelled by its
    /// group sees it too; the handler hears only the call's own task.
    ///
    /// A wait with neither limit has no race to settle: `wait` runs as it is, and no limit
    /// passed first.
    ///
    /// - Parameter end: When the wait ends the call on the policy's clock, no later than the
    ///   deadline; `nil` for a wait whose own end does not (a backoff, which ends in a retry).
    /// - Returns: What `wait` returned, and which limit had passed at the first reading (the
    ///   caller's cancellation, or the end of the wait when it returned before any
    ///   cancellation): `end` when it had, as it comes no later than the deadline.
    func racingDeadline<Value: Sendable>(
        isolation: isolated (any Actor)?, start: Duration, end: Duration? = nil,
        _ wait: nonisolated(nonsending) () async -> Value
    ) async -> (value: Value, passedFirst: PassedLimit?) {
        // Read here, in the call's task: the cancellation handler runs in the canceller's.
        let inherited = InheritedDeadline.current
        guard end != nil || self.deadline != nil || inherited != nil else { return (await wait(), nil) }
        let race = DeadlineRace()
        let value = await withTaskCancellationHandler {
            await wait()
        } onCancel: {
            race.settle(self.passedLimit(start: start, end: end, inherited: inherited))
        }
        // A cancellation during the wait has settled the race already; otherwise its end settles it.
        let passed = race.settle(self.passedLimit(start: start, end: end, inherited: inherited))
        return (value, passed)
    }

    /// The limit of a wait of the call that began at `start` that has passed: its own `end`, or
    /// the call's deadline (or `inherited`).
    ///
    /// Reads no task-local: a cancellation handler calls it from the canceller's task.
    private nonisolated func passedLimit(start: Duration, end: Duration?, inherited: InheritedDeadline?) -> PassedLimit?
    {
        if let end, self.clock.now() >= end { return .end }
        return self.deadlinePassed(start: start, inherited: inherited) ? .deadline : nil
    }

    /// Whether a library time limit enclosing the call that began at `start` (a ``Timeout``, an
    /// enclosing policy's `attemptTimeout`) ends it before it tries again or waits to: its
    /// deadline has passed on its clock, though its timer may not have woken yet (a clock that
    /// jumped, a timer that wakes late), or it has fired, or the caller's cancellation settled it.
    ///
    /// A limit whose deadline has passed is claimed for that limit here, as its timer would have
    /// claimed it (see `TimeLimitSignal.endAtPassedDeadline(from:across:unlessBefore:)`): the call then
    /// stops as when the limit cancelled it, with the failure it had, and the limit reports its
    /// time-out. Not when this policy's own deadline has passed too: the call stops there, and
    /// the limits compare that deadline with theirs (see `noteDeadlineStop(_:start:)`); nor when
    /// a deadline enclosing calls hand down passed no later than the limit's.
    ///
    /// Failure path only: one task-local read, and the limits' clocks when there are limits.
    nonisolated func enclosingLimitEnds(start: Duration) -> Bool {
        let scope = CallScope.current
        guard scope.timeLimits != nil else { return false }
        if let deadline = self.deadline, self.clock.now() - start >= deadline { return false }
        return scope.enclosingLimitEnds()
    }

    /// Whether the call that began at `start` stops as a cancelled one: its task is cancelled, or
    /// a library time limit around it ends it (``enclosingLimitEnds(start:)``). Failure path only.
    nonisolated func isCancelledOrEndedByALimit(start: Duration) -> Bool {
        Task.isCancelled || self.enclosingLimitEnds(start: start)
    }

    /// Whether the deadline of the call that began at `start`, or `inherited`, has passed.
    ///
    /// Reads no task-local: a cancellation handler calls it from the canceller's task.
    private nonisolated func deadlinePassed(start: Duration, inherited: InheritedDeadline?) -> Bool {
        if let deadline = self.deadline, self.clock.now() - start >= deadline { return true }
        if let inherited, inherited.remaining <= .zero { return true }
        return false
    }
}

/// Settles, once, which limit of a call's wait had passed at the first of two moments: the
/// caller's cancellation during the wait, and the end of that wait.
///
/// Failure path only: one is made for each wait of a call that has a deadline or a limit of its own.
private final class DeadlineRace: Sendable {
    private static let open: UInt8 = 0
    private static let noneSettled: UInt8 = 3

    private let state = Atomic<UInt8>(DeadlineRace.open)

    /// Settles the race with `passed`, unless it is settled already; returns what it was settled with.
    @discardableResult
    func settle(_ passed: RetryPolicy.PassedLimit?) -> RetryPolicy.PassedLimit? {
        let (exchanged, original) = self.state.compareExchange(
            expected: Self.open, desired: passed?.rawValue ?? Self.noneSettled, ordering: .acquiringAndReleasing)
        return exchanged ? passed : RetryPolicy.PassedLimit(rawValue: original)
    }
}
