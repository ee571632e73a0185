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
/// The error keeps it wherever the app puts it: wrapped, it is the same value; bridged to
/// `NSError`, the instance is in its `userInfo` (``BridgedLibraryError/limitEndKey``), so that
/// an enclosing limit finds it along the error's chain (see ``decidedEarlier(_:than:on:)``).
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
    /// Limits on different clocks cannot be ordered: the enclosing one keeps its claim. The
    /// clocks are told apart by their identity, which stays valid as long as this end lives,
    /// since the end holds its clock (through its `userInfo` entry in a bridged error too).
    func decided(beforeDeadline deadline: Duration, on clock: ElapsedClock) -> Bool {
        guard clock.identity == self.clock.identity else { return false }
        // The two clocks read one time from different origins: move this limit's readings
        // onto the enclosing limit's clock.
        let offset = clock.now() - self.clock.now()
        return self.deadline + offset <= deadline && self.endedAt + offset >= deadline
    }

    /// Whether an enclosing limit due at `deadline` on `clock` came before this limit: its
    /// deadline came earlier than this one's, and had passed when this limit ended the call.
    ///
    /// The other side of ``decided(beforeDeadline:on:)``: a clock that passed both deadlines in
    /// one move may wake this limit first, and the enclosing limit then finds the call ended
    /// before its own timer woke. Different clocks cannot be ordered: `false`.
    func ended(afterEarlierDeadline deadline: Duration, on clock: ElapsedClock) -> Bool {
        guard clock.identity == self.clock.identity else { return false }
        let offset = clock.now() - self.clock.now()
        return deadline < self.deadline + offset && deadline <= self.endedAt + offset
    }

    /// The end kept by the node's error, when it is one of the library's time limits' own
    /// errors: as the Swift value, or in its `NSError` form, bridged from that value or copied
    /// from it with the same domain, code and `userInfo` (under
    /// ``BridgedLibraryError/limitEndKey``, which holds this very instance).
    ///
    /// Concrete casts, each asked only of an error that may be of that type.
    static func of(_ node: ErrorChain.Node) -> TimeLimitEnd? {
        let error = node.error
        if node.kinds.contains(.timeLimit) {
            if let limit = error as? TimeoutError { return limit.limitEnd }
            if let limit = error as? AttemptTimeoutError { return limit.limitEnd }
        }
        if node.kinds.contains(.deliveryReporting), let rejection = error as? LimiterRejectionError {
            return rejection.limitEnd
        }
        return BridgedLibraryError.limitEnd(of: node)
    }

    /// Whether `error`, which a call failed with after an enclosing limit due at `deadline`
    /// on `clock` fired, holds the error of a limit nested in the call that decided it first
    /// (see ``decided(beforeDeadline:on:)``): the enclosing limit then passes `error` on as it is.
    ///
    /// The nested limit's error is looked for along the chain the failure analysis walks
    /// (``ErrorChain``): as thrown, kept by an error of the app's (an enum case's payload, a
    /// stored property), under `NSUnderlyingErrorKey` or `NSMultipleUnderlyingErrorsKey`, in a
    /// wrapper of the library's (``UnderlyingErrorProviding``), and bridged to `NSError`, whose
    /// `userInfo` keeps the end itself. An `NSError` form that lost that entry (archived, sent
    /// to another process, rebuilt from other values) has no end to compare: the enclosing
    /// limit then keeps the call, as for limits on different clocks. The walk runs only once an
    /// enclosing limit has fired, on the failure path.
    static func decidedEarlier(_ error: any Error, than deadline: Duration, on clock: ElapsedClock) -> Bool {
        var decided = false
        ErrorChain.walkNodes(error) { node in
            decided = Self.of(node)?.decided(beforeDeadline: deadline, on: clock) ?? false
            return !decided
        }
        return decided
    }

    /// Whether `error`, which a call failed with before an enclosing limit due at `deadline` on
    /// `clock` fired, holds the error of a limit nested in the call that ended it after that
    /// deadline had passed, its own deadline coming later (see
    /// ``ended(afterEarlierDeadline:on:)``): the enclosing limit came first, and claims the call
    /// although its timer has not woken yet, as it would have had the clock moved in steps.
    ///
    /// Looked for along the same chain as ``decidedEarlier(_:than:on:)``, on the failure path
    /// of a call whose own limit had not fired; the walk runs only once `deadline` has passed
    /// (one reading of the clock first), so a call that failed in time walks nothing here.
    static func passedEarlier(_ error: any Error, than deadline: Duration, on clock: ElapsedClock) -> Bool {
        guard clock.now() >= deadline else { return false }
        var passed = false
        ErrorChain.walkNodes(error) { node in
            passed = Self.of(node)?.ended(afterEarlierDeadline: deadline, on: clock) ?? false
            return !passed
        }
        return passed
    }
}
