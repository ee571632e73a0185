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
    /// ``Timeout``), settled by `racingDeadline(isolation:start:_:)`. A call with no deadline,
    /// its own or an enclosing call's, has no race to settle, and waits as a plain sleep.
    func waitBeforeRetry(isolation: isolated (any Actor)?, _ delay: Duration, start: Duration) async -> WaitEnd {
        let wake = self.clock.now() + delay
        let (elapsed, deadlinePassedFirst) = await self.racingDeadline(isolation: isolation, start: start) {
            do {
                try await self.clock.sleepUntil(wake)
                return true
            } catch {
                return false
            }
        }
        switch (elapsed, deadlinePassedFirst) {
        case (true, false): return .elapsed
        case (true, true): return .elapsedPastDeadline
        case (false, false): return .cancelled
        case (false, true): return .cancelledPastDeadline
        }
    }

    /// Runs `wait`, a wait of the call that began at `start` (before a retry, for a shared
    /// refresh of its credential, for the network), and tells whether the call's deadline, its
    /// own or an enclosing call's, had passed before the caller's cancellation.
    ///
    /// The wait's own bound ends it at the deadline at the latest, so without a clock that jumps,
    /// a cancellation during it is the caller's. A clock that jumps past the deadline leaves it
    /// passed when the caller cancels, maybe before the wait's timer has woken: then whichever
    /// came first decides, as it does for a time limit (see ``Timeout``). The caller's
    /// cancellation reads the clock as it comes, in a cancellation handler, and the end of the
    /// wait reads it as the wait returns; the first of the two readings settles the race, once.
    /// `Task.isCancelled` cannot tell the two apart, and a task group's child cancelled by its
    /// group sees it too; the handler hears only the call's own task.
    ///
    /// A call with no deadline has no race to settle: `wait` runs as it is, and the deadline never
    /// passed first.
    ///
    /// - Returns: What `wait` returned, and whether the deadline had passed at the first reading:
    ///   the caller's cancellation, or the end of the wait when it returned before any cancellation.
    func racingDeadline<Value: Sendable>(
        isolation: isolated (any Actor)?, start: Duration, _ wait: nonisolated(nonsending) () async -> Value
    ) async -> (value: Value, deadlinePassedFirst: Bool) {
        // Read here, in the call's task: the cancellation handler runs in the canceller's.
        let inherited = InheritedDeadline.current
        guard self.deadline != nil || inherited != nil else { return (await wait(), false) }
        let race = DeadlineRace()
        let value = await withTaskCancellationHandler {
            await wait()
        } onCancel: {
            race.settle(deadlinePassed: self.deadlinePassed(start: start, inherited: inherited))
        }
        // A cancellation during the wait has settled the race already; otherwise its end settles it.
        let passed = race.settle(deadlinePassed: self.deadlinePassed(start: start, inherited: inherited))
        return (value, passed)
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

/// Settles, once, whether a call's deadline had passed at the first of two moments: the caller's
/// cancellation during one of the call's waits, and the end of that wait.
///
/// Failure path only: one is made for each wait of a call that has a deadline.
private final class DeadlineRace: Sendable {
    private static let open: UInt8 = 0
    private static let passed: UInt8 = 1
    private static let notPassed: UInt8 = 2

    private let state = Atomic<UInt8>(DeadlineRace.open)

    /// Settles the race with `deadlinePassed`, unless it is settled already; returns what it was settled with.
    @discardableResult
    func settle(deadlinePassed: Bool) -> Bool {
        let (exchanged, original) = self.state.compareExchange(
            expected: Self.open, desired: deadlinePassed ? Self.passed : Self.notPassed,
            ordering: .acquiringAndReleasing)
        return exchanged ? deadlinePassed : original == Self.passed
    }
}
