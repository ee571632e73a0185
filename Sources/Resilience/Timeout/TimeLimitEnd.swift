/// When one of the library's time limits ended a call, and when its deadline was, both on
/// its own clock: kept by the error the limit throws (``TimeoutError``,
/// ``AttemptTimeoutError``, a ``ConcurrencyLimiter``'s
/// ``LimiterRejectionError/Reason/queueTimedOut``), so that a limit enclosing it that
/// fired too can tell which of the two deadlines came first.
///
/// A clock that passes several deadlines in one move (a test clock's advance, a device
/// that slept) wakes their limits in no set order: the outer limit may fire first, and
/// the inner one claim the call as the cancellation reaches it. Without this, the outer
/// limit, having fired, would take the inner limit's error for the operation's late one
/// and report a time-out of its own, though its deadline came later.
///
/// Made only on a time limit's failure path, once per error.
final class TimeLimitEnd: Sendable {
    /// The clock of the limit that ended the call.
    let clock: ElapsedClock
    /// The limit's deadline, on ``clock``.
    let deadline: Duration
    /// When the limit's error was made, on ``clock``: after the call it ended returned.
    let endedAt: Duration

    /// The end of a call whose limit, due at `deadline` on `clock`, ends it now.
    init(clock: ElapsedClock, deadline: Duration) {
        self.clock = clock
        self.deadline = deadline
        self.endedAt = clock.now()
    }

    /// Whether this limit, not an enclosing one due at `deadline` on `clock` that fired
    /// too, decided the call: its own deadline came no later, and its error left it no
    /// earlier than that deadline.
    ///
    /// The second condition keeps the enclosing limit's claim where the call went on after
    /// this limit had ended its part (a policy waiting to retry the time-out when the
    /// enclosing limit cut it short): the error is then what the call held, not what ended it.
    /// Limits on different clocks cannot be ordered: the enclosing one keeps its claim.
    func decided(beforeDeadline deadline: Duration, on clock: ElapsedClock) -> Bool {
        guard clock.identity == self.clock.identity else { return false }
        // The two clocks read one time from different origins: move this limit's readings
        // onto the enclosing limit's clock.
        let offset = clock.now() - self.clock.now()
        return self.deadline + offset <= deadline && self.endedAt + offset >= deadline
    }

    /// The end kept by `error`, when it is one of the library's time limits' own errors as
    /// the Swift value (not bridged, not wrapped).
    static func of(_ error: any Error) -> TimeLimitEnd? {
        if let limit = error as? TimeoutError { return limit.limitEnd }
        if let limit = error as? AttemptTimeoutError { return limit.limitEnd }
        if let rejection = error as? LimiterRejectionError { return rejection.limitEnd }
        return nil
    }

    /// Whether `error`, which a call failed with after an enclosing limit due at `deadline`
    /// on `clock` fired, is the error of a limit nested in the call that decided it first
    /// (see ``decided(beforeDeadline:on:)``): the enclosing limit then passes it on as it is.
    static func decidedEarlier(_ error: any Error, than deadline: Duration, on clock: ElapsedClock) -> Bool {
        Self.of(error)?.decided(beforeDeadline: deadline, on: clock) ?? false
    }
}
