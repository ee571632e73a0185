/// The deadline of the outermost call that has one, handed down to nested calls
/// through ``CallScope``: the time it leaves bounds every inner policy's attempts,
/// time limits and waits.
///
/// Only a call with a deadline installs it, so a plain call pays nothing.
struct InheritedDeadline: Sendable {
    /// The clock the deadline was set on.
    let clock: ElapsedClock
    /// The deadline, as elapsed time on `clock`.
    let end: Duration

    /// The time left, zero or less once passed.
    var remaining: Duration {
        self.end - self.clock.now()
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

    /// Sets `scope`'s deadline to `end` on `clock`, a deadline `limit` from the call's start,
    /// unless the deadline it has ends sooner; returns whether it set it.
    static func bound(_ scope: inout CallScope, limit: Duration, end: Duration, clock: ElapsedClock) -> Bool {
        if let existing = scope.deadline, existing.remaining <= limit { return false }
        scope.deadline = InheritedDeadline(clock: clock, end: end)
        return true
    }
}
