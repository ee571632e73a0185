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

    /// The current scope with a deadline `limit` from now on `clock`, unless an enclosing one ends sooner.
    static func scope(limit: Duration, clock: ElapsedClock) -> CallScope {
        var scope = CallScope.current
        let candidate = InheritedDeadline(clock: clock, end: clock.now() + limit)
        if let existing = scope.deadline, existing.remaining <= limit { return scope }
        scope.deadline = candidate
        return scope
    }
}
