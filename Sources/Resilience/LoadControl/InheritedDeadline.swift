/// The deadline of the outermost call that has one, handed down to nested calls
/// through ``CallScope``: the time it leaves bounds every inner policy's attempts,
/// time limits and waits.
///
/// Only a call with a deadline installs it, so a plain call pays nothing.
struct InheritedDeadline: Sendable {
    /// The policy whose call set the deadline, on whose clock it is kept: one reference,
    /// where the clock itself would be several for every copy of the scope to count.
    let policy: RetryPolicy
    /// The deadline, as elapsed time on the policy's clock.
    let end: Duration

    /// The time left, zero or less once passed.
    var remaining: Duration {
        self.end - self.policy.clock.now()
    }

    /// Whether this deadline came no later than a limit's due at `deadline` on `clock`; `false`
    /// on another clock, where the two cannot be ordered. Once the limit's deadline has passed,
    /// `true` says that this one has passed too.
    func passed(noLaterThan deadline: Duration, on clock: ElapsedClock) -> Bool {
        let own = self.policy.clock
        guard own.identity == clock.identity else { return false }
        // The two clocks read one time from different origins: this deadline, on the limit's clock.
        return self.end + (clock.now() - own.now()) <= deadline
    }

    /// The deadline the current task runs under, if any enclosing call set one.
    static var current: InheritedDeadline? {
        CallScope.current.deadline
    }

    /// The shorter of `own` and the inherited deadline's time left.
    static func remaining(within own: Duration?) -> Duration? {
        guard let inherited = Self.current?.remaining else { return own }
        guard let own else { return inherited }
        return Swift.min(own, inherited)
    }

    /// Sets `scope`'s deadline to `end` on `policy`'s clock, a deadline `limit` from the call's
    /// start, unless the deadline it has ends sooner; returns whether it set it.
    static func bound(_ scope: inout CallScope, limit: Duration, end: Duration, policy: RetryPolicy) -> Bool {
        if let existing = scope.deadline, existing.remaining <= limit { return false }
        scope.deadline = InheritedDeadline(policy: policy, end: end)
        return true
    }
}
