import Synchronization

/// The facts one call hands down to the calls nested inside it, explicitly set
/// by the library, never inferred.
///
/// A policy, breaker or strategy installs a scope only when it has something to
/// hand down, so a plain call pays nothing for it:
/// - a call declared with an ``Idempotency`` passes it on, so a policy nested
///   inside a `POST` does not repeat what the outer call may not;
/// - a time limit the library puts on an attempt runs the attempt under a scope
///   whose ``TimeLimitSignal`` it fires before it cancels the attempt, so a breaker
///   inside can tell "the library timed this out" (a failure of the dependency)
///   from "the caller gave up" (not a failure). `Task.isCancelled` alone is true
///   in both cases.
///
/// - a call with a ``RetryPolicy/deadline`` passes on the time it leaves, so the
///   attempts, time limits and waits of policies nested inside end by then.
///
/// Nested code reads the scope on its failure path only.
struct CallScope: Sendable {
    /// The idempotency declared by the nearest enclosing call that declared one.
    var idempotency: Idempotency?
    /// The signals of the library time limits enclosing this task, innermost first.
    var timeLimits: [TimeLimitSignal] = []
    /// The signals ``Hedging`` fires before it cancels an attempt another attempt
    /// beat, innermost first.
    var supersessions: [TimeLimitSignal] = []
    /// The deadline of the outermost enclosing call that set one; it bounds nested policies.
    var deadline: InheritedDeadline?

    @TaskLocal static var current = CallScope()

    /// Whether a library time limit enclosing this task has fired.
    var timeLimitFired: Bool {
        self.timeLimits.contains { $0.hasFired }
    }

    /// Whether an attempt enclosing this task lost a hedging race.
    var supersededFired: Bool {
        self.supersessions.contains { $0.hasFired }
    }

    /// The current scope with `signal` added as a supersession signal.
    static func superseded(by signal: TimeLimitSignal) -> CallScope {
        var scope = Self.current
        scope.supersessions.insert(signal, at: 0)
        return scope
    }

    /// The current scope with `idempotency` declared, if not `nil`.
    static func declaring(_ idempotency: Idempotency?) -> CallScope? {
        guard let idempotency else { return nil }
        var scope = Self.current
        scope.idempotency = idempotency
        return scope
    }

    /// The current scope with `signal` added.
    static func limited(by signal: TimeLimitSignal) -> CallScope {
        var scope = Self.current
        scope.timeLimits.insert(signal, at: 0)
        return scope
    }
}

/// Set once by the library when one of its time limits ends an attempt, before
/// the attempt's task is cancelled.
///
/// One allocation: the flag is an atomic stored in the object itself (a `Lock`
/// would add an object and a mutex), because every ``Timeout`` and hedged attempt
/// makes one. Firing releases and reading acquires, so whatever the firing task
/// did before is visible to the task that reads the flag.
final class TimeLimitSignal: Sendable {
    private let fired = Atomic(false)

    init() {}

    /// Records that the time limit, not the caller, is about to cancel the attempt.
    func fire() {
        self.fired.store(true, ordering: .releasing)
    }

    /// Whether ``fire()`` was called.
    var hasFired: Bool {
        self.fired.load(ordering: .acquiring)
    }
}
