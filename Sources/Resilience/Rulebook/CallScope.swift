import Foundation
import Synchronization

/// The facts one call hands down to the calls nested inside it, explicitly set
/// by the library, never inferred.
///
/// A policy, breaker or strategy installs a scope only when it has something to
/// hand down, so a plain call pays nothing for it:
/// - a call declared with an ``Idempotency`` passes it on, so a policy nested
///   inside a `POST` does not repeat what the outer call may not (the policies
///   around it run outside the scope: a declared call that fails tells them through
///   `NestedRetryLedger`, see `NestedRetryLedger.recordFailure(_:ofCallDeclaring:)`);
/// - a time limit the library puts on an attempt runs the attempt under a scope
///   whose ``TimeLimitSignal`` it fires before it cancels the attempt, so a breaker
///   inside can tell "the library timed this out" (a failure of the dependency)
///   from "the caller gave up" (not a failure). `Task.isCancelled` alone is true
///   in both cases.
///
/// - a call with a ``RetryPolicy/deadline`` passes on the time it leaves, so the
///   attempts, time limits and waits of policies nested inside end by then.
/// - a call declared not idempotent that succeeds marks the time limits, hedged
///   attempts and retry calls enclosing it (``noteSucceeded()``), so that a later
///   failure of their attempt does not run it, and the request, again.
///
/// Nested code reads the scope on its failure path only.
@usableFromInline
struct CallScope: Sendable {
    /// The idempotency declared by the nearest enclosing call that declared one.
    var idempotency: Idempotency?
    /// Whether ``idempotency`` is an enclosing policy's classifier's word rather than a
    /// call's declaration: it then ranks below a nested policy's own classifier, which
    /// knows its own request (a token refresh's `GET` inside a `POST`).
    var idempotencyIsAClassifiers = false
    /// The signal of the innermost library time limit enclosing this task; each
    /// signal links to the one enclosing it, so adding one allocates no array.
    var timeLimits: TimeLimitSignal?
    /// The signal ``Hedging`` fires before it cancels an attempt another attempt
    /// beat, innermost first, linked as ``timeLimits`` are.
    var supersessions: TimeLimitSignal?
    /// The deadline of the outermost enclosing call that set one; it bounds nested policies.
    var deadline: InheritedDeadline?
    /// The number of the nearest enclosing ``RetryPolicy`` call that hands a scope down, or 0
    /// for none: the nested-retry ledger addresses an inner policy's word to it (see
    /// `NestedRetryLedger.Address`).
    var retryCall: UInt64 = 0
    /// The number of the nearest enclosing call that hears of a call nested in it that may not run
    /// twice and succeeded, or 0 for none: a ``RetryPolicy`` call that hands a scope down (its
    /// ``retryCall``), a declared ``ResiliencePipeline`` call and a declared ``Hedging`` call that
    /// runs once (see ``hearSucceededCalls()``). The success is noted in the
    /// nested-retry ledger under this number (see `NestedRetryLedger.noteSuccess(at:in:)`), so
    /// that handing it down allocates nothing.
    var succeededCall: UInt64 = 0

    @TaskLocal static var current = CallScope()

    /// The task-local that holds ``current``, for inlinable code that binds a scope around an operation.
    @usableFromInline static var handedDown: TaskLocal<CallScope> { Self.$current }

    /// Whether a library time limit enclosing this task has fired, while the task runs inside
    /// the limited attempt: a task the attempt started that outlived it, or that outlived a
    /// hedged attempt inside the limit, reads `false` (see ``TimeLimitSignal/anyFired(from:across:)``).
    var timeLimitFired: Bool {
        TimeLimitSignal.anyFired(from: self.timeLimits, across: self.supersessions)
    }

    /// Whether an attempt enclosing this task lost a hedging race, while the task runs inside
    /// that attempt, as ``timeLimitFired`` reads it: a task that outlived the attempt, or a time
    /// limit's attempt inside it, reads `false`.
    var supersededFired: Bool {
        TimeLimitSignal.anyFired(from: self.supersessions, across: self.timeLimits)
    }

    /// The current scope with `idempotency` declared, if not `nil`; `byClassifier` when it
    /// is a policy's classifier's word rather than the call's declaration.
    static func declaring(_ idempotency: Idempotency?, byClassifier: Bool = false) -> CallScope? {
        guard let idempotency else { return nil }
        var scope = Self.current
        scope.declare(idempotency, byClassifier: byClassifier)
        return scope
    }

    /// Declares `idempotency` for the calls nested in this scope, and tells the time limits
    /// and hedged attempts enclosing it when the call may not run twice.
    ///
    /// The policies enclosing it are not told here: a plain policy call installs no scope
    /// to reach them through. The declaring call tells them when it fails, through the
    /// ledger a policy leaves its own word in (`NestedRetryLedger.recordFailure(_:ofCallDeclaring:)`).
    mutating func declare(_ idempotency: Idempotency, byClassifier: Bool = false) {
        self.idempotency = idempotency
        self.idempotencyIsAClassifiers = byClassifier
        self.tellEnclosingLimits()
    }

    /// The idempotency enclosing calls hand to a call whose own classifier declares `own`:
    /// a declaration wins over `own`, an enclosing classifier's word does not.
    func handedDownIdempotency(over own: Idempotency?) -> Idempotency? {
        self.idempotencyIsAClassifiers ? own ?? self.idempotency : self.idempotency ?? own
    }

    /// Tells every library time limit and hedged attempt enclosing this scope that a call
    /// inside it may not run twice, when this scope says so.
    ///
    /// The limit that ends an attempt builds the error the layers above judge; the call
    /// that knows its request is a `POST` may be nested deep inside that attempt, where
    /// no error of its own will surface. Marked once it starts, a limit reports the
    /// attempt as not idempotent, so no layer above sends it again, and ``Hedging``
    /// starts no other copy of an attempt that holds such a call.
    private func tellEnclosingLimits() {
        guard let idempotency = self.idempotency, !idempotency.isIdempotent else { return }
        TimeLimitSignal.markNotIdempotent(from: self.timeLimits)
        TimeLimitSignal.markNotIdempotent(from: self.supersessions)
    }

    /// Tells the library time limits, hedged attempts and retry policies enclosing this scope
    /// that a call in it that may not run twice has succeeded: its request reached the
    /// dependency.
    ///
    /// A time-out of their attempt that comes after cannot read as one whose request never left
    /// (see ``TimeLimitSignal/noteARequestMayHaveLeft(from:)``), and a later failure of their
    /// attempt, whatever it says, must not run the attempt again: that would send the request a
    /// second time. Each is marked with the moment, in the nested-retry ledger's count
    /// (`NestedRetryLedger.written`), so that a policy tells a success in its current attempt
    /// from one in an attempt before it (see `NestedRetryLedger.noteSuccess(at:in:)`).
    ///
    /// For the call that declared this scope, as it returns its value; a call that may run
    /// twice tells nothing, since sending it again does no harm.
    @usableFromInline
    func noteSucceeded() {
        self.noteSucceeded(asNotIdempotent: self.idempotency?.isIdempotent == false)
    }

    /// ``noteSucceeded()`` for a call whose own reading of its idempotency is `asNotIdempotent`,
    /// which this scope may not hold (a ``RetryPolicy`` call that hands no scope down, or one whose
    /// classifier's word differs from an enclosing classifier's): a call read as idempotent tells
    /// nothing.
    func noteSucceeded(asNotIdempotent: Bool) {
        guard asNotIdempotent else { return }
        TimeLimitSignal.noteARequestMayHaveLeft(from: self.timeLimits)
        guard self.timeLimits != nil || self.supersessions != nil || self.succeededCall != 0 else { return }
        let moment = NestedRetryLedger.written.wrappingAdd(1, ordering: .relaxed).newValue
        TimeLimitSignal.noteNotIdempotentSuccess(at: moment, from: self.timeLimits)
        TimeLimitSignal.noteNotIdempotentSuccess(at: moment, from: self.supersessions)
        // The nearest call that hears of it; it passes the moment on to the one around it as it ends.
        if self.succeededCall != 0 { NestedRetryLedger.noteSuccess(at: moment, in: self.succeededCall) }
    }

    /// Numbers this scope as a call that hears of the calls nested in it that may not run twice
    /// and succeeded (``succeededCall``), with a new number; returns the number of the call around
    /// it, to which the call passes on what it heard as it ends
    /// (`NestedRetryLedger.endSuccesses(of:passingTo:)`).
    ///
    /// For a declared ``ResiliencePipeline`` call and a declared ``Hedging`` call that runs once:
    /// the policies inside hear of such a success under this number, and when the call fails after
    /// one, it leaves word with its error for the policies around it
    /// (`NestedRetryLedger.recordFailure(_:ofCallHearing:)`). Not on a plain call's path.
    mutating func hearSucceededCalls() -> UInt64 {
        let enclosing = self.succeededCall
        self.succeededCall = NestedRetryLedger.newCall()
        return enclosing
    }

    /// Whether a call that may not run twice succeeded in this scope after `mark`, the nested-retry
    /// ledger's count when a ``RetryPolicy``'s attempt began, as the innermost time limit, hedged
    /// attempt and retry call enclosing the policy were told (``noteSucceeded()``): the attempt then
    /// holds a request that reached the dependency, and is not run again.
    ///
    /// For a policy's failure path only.
    func notIdempotentCallSucceeded(after mark: UInt64) -> Bool {
        (self.succeededCall != 0 && NestedRetryLedger.latestSuccess(in: self.succeededCall) > mark)
            || (self.timeLimits?.notIdempotentCallSucceeded(after: mark) ?? false)
            || (self.supersessions?.notIdempotentCallSucceeded(after: mark) ?? false)
    }

    /// Whether a library time limit enclosing this scope (a ``Timeout``, a policy's
    /// `attemptTimeout`) ends the call running in it before that call starts another attempt or
    /// waits to: the limit's deadline has passed on its clock, though its timer may not have woken
    /// yet, or it has fired, or the caller's cancellation settled it. A limit whose deadline has
    /// passed is claimed for it here (see `TimeLimitSignal.endAtPassedDeadline(from:across:unlessBefore:)`),
    /// unless this scope's ``deadline`` passed no later: the call stops at that deadline.
    ///
    /// For a ``RetryPolicy`` before it tries again or sleeps, and for ``Hedging`` before it starts a
    /// hedge or a replacement: either stops then as when the limit cancelled it. Failure path only:
    /// it reads the limits' clocks.
    func enclosingLimitEnds() -> Bool {
        guard let limits = self.timeLimits else { return false }
        return TimeLimitSignal.endAtPassedDeadline(
            from: limits, across: self.supersessions, unlessBefore: self.deadline)
    }

    /// Whether a library time limit enclosing this scope (a ``Timeout``, a policy's
    /// `attemptTimeout`) came before a wait of the caller's due at `deadline` on `clock` that
    /// ended at it: the limit's deadline came earlier, has passed, and its caller had not given
    /// up before it. The limit then ends the call, as it would have had the clock moved in
    /// steps, when its timer would have cut the wait short first; a limit still pending is
    /// claimed for it (see `TimeLimitSignal.claimEarlier(than:on:from:across:)`).
    ///
    /// For a ``ConcurrencyLimiter``'s caller whose queue timeout woke first in a clock's jump
    /// past both deadlines, and a ``RateLimiter``'s whose wait for a permit did: the wait is
    /// reported cut short, not ended by its own deadline. Failure path, or a wait's end: it
    /// reads the limits' clocks.
    func enclosingLimitCameBefore(_ deadline: Duration, on clock: ElapsedClock) -> Bool {
        guard let limits = self.timeLimits else { return false }
        return TimeLimitSignal.claimEarlier(than: deadline, on: clock, from: limits, across: self.supersessions)
    }

    /// The current scope with a new time-limit signal added, for a limit due at `deadline` on
    /// `clock`; returns both.
    static func limited(until deadline: Duration, on clock: TimeLimitClock) -> (CallScope, TimeLimitSignal) {
        var scope = Self.current
        let signal = TimeLimitSignal(
            enclosing: scope.timeLimits, across: scope.supersessions, clock: clock, deadline: deadline)
        scope.timeLimits = signal
        return (scope, signal)
    }
}

/// Set once by the library when one of its time limits ends an attempt, before
/// the attempt's task is cancelled.
///
/// One allocation: the state is an atomic stored in the object itself (a `Lock`
/// would add an object and a mutex), and the signal links to the one enclosing
/// it, because every ``Timeout`` and hedged attempt makes one. Firing releases and
/// reading acquires, so whatever the firing task did before is visible to the
/// task that reads the flag.
///
/// A time limit and the attempt race to settle the signal: the limit claims it
/// with ``claim()`` before it cancels the attempt, and the attempt's own task
/// marks it with ``complete()`` as soon as the operation returns. Whichever comes
/// first wins, once, so a limit that passes just after the operation finished
/// never claims the call and never reports a time-out for it. The caller's
/// cancellation takes part in the same race through ``yieldToCaller()``: once
/// the caller gave up, a limit that passes while the cancelled operation winds
/// down claims nothing, and the call ends with the operation's own error.
final class TimeLimitSignal: Sendable {
    private static let pending: UInt8 = 0
    private static let fired: UInt8 = 1
    private static let completed: UInt8 = 2
    private static let callerCancelled: UInt8 = 3

    private let state = Atomic<UInt8>(TimeLimitSignal.pending)
    /// For a ``Timeout`` and the first attempt of a hedged call: whether the attempt handed
    /// its outcome over at its start (``handOverAtStart()``) or the caller stopped waiting
    /// for that (``closeStart()``).
    private let start = Atomic<UInt8>(TimeLimitSignal.pending)
    /// Whether the attempt's operation returned after the limit fired or the caller's
    /// cancellation settled the signal (``complete()`` lost the race): the limit is over then,
    /// though its state still says who ended it. An attempt that completes first leaves it
    /// `false`, its state saying so (``isCompleted``), until a hedging race supersedes it all
    /// the same (``fire()``), which sets it.
    private let returnedAfterSettled = Atomic<Bool>(false)
    /// How deep this signal sits among the time limits and hedged attempts enclosing it, of both
    /// kinds: one more than the deeper of ``enclosing`` and the innermost signal of the other kind
    /// it was made inside. A signal made inside another, of either kind, is the deeper, so the
    /// walks that stop where the task asking outlived an attempt read a scope's two chains in one
    /// order by it (see ``anyFired(from:across:)``). Made from the two depths as the signal is
    /// made: no reference to the other kind's signal is kept.
    let depth: UInt32
    /// For a ``Timeout``: the registration of the running attempt's deadline, which holds
    /// the attempt's task; ``Self/pending`` before the attempt started, ``Self/cancelledEarly``
    /// once the caller was cancelled before that.
    private let registration = Atomic<UInt64>(UInt64(TimeLimitSignal.pending))
    /// For an attempt of a hedged call: the attempt's task while it runs, for the caller's
    /// cancellation handler (see ``cancelRunningAttempt(guardedBy:)``). Read and
    /// written only under the lock the hedging strategy passes in, its own state's lock: a
    /// lock here would cost every signal an allocation, and the standard library's `Mutex`
    /// is not seen by ThreadSanitizer on Linux. `@exclusivity(unchecked)`: that lock makes
    /// every access exclusive, so the run-time exclusivity check adds nothing.
    @exclusivity(unchecked) nonisolated(unsafe) private var attempt = HedgedAttemptTask.notStarted
    /// Whether a call that may not run twice started inside this limit; set once, never cleared.
    private let enclosesNotIdempotent = Atomic<Bool>(false)
    /// Whether the library saw a request of this limit's attempt that may have left (see
    /// ``noteARequestMayHaveLeft(from:)``); set once, never cleared.
    private let requestMayHaveLeft = Atomic<Bool>(false)
    /// When a call that may not run twice last succeeded in this limit's attempt, in the
    /// nested-retry ledger's count, or 0 for never (see ``noteNotIdempotentSuccess(at:from:)``).
    private let notIdempotentSuccess = Atomic<UInt64>(0)
    /// The error a ``RetryPolicy`` nested in the attempt ended with when this limit cut short
    /// its wait (the error's box, as `NestedRetryLedger` keys it, retained; 0 for none), and how
    /// long before that, in nanoseconds, the failure had come (see ``noteLateError(_:age:)``).
    ///
    /// Retained until the limit takes it (``takeLateErrorAge(of:)``) or the signal goes, so that
    /// no other error made meanwhile (a wrapper, a value the chain's walk boxes) can sit at its
    /// address and pass for it. Only a limit that fired and cut a policy's wait short holds one.
    private let lateErrorBox = Atomic<UInt>(0)
    private let lateErrorAgeNanoseconds = Atomic<Int64>(0)
    /// For the first attempt of a hedged call, which keeps the quiet of the whole call: the end
    /// of the latest retry-after hint the call heard, from one of its attempts or from a call
    /// nested in one, in nanoseconds on ``quietClock``'s clock, or `Int64.min` for none (see
    /// ``holdQuiet(until:)``).
    private let quietEndNanoseconds = Atomic<Int64>(.min)
    /// What measures this signal's time: the limit's own clock, for a ``Timeout`` and a
    /// per-attempt limit, or the hedging strategy's, for an attempt of a hedged call; `nil`
    /// for a signal made with neither (in tests).
    let clock: TimeLimitClock?
    /// For a ``Timeout`` and a per-attempt limit: the limit's deadline, as elapsed time on
    /// ``clock``; zero for every other signal. Read by a policy nested in the attempt before it
    /// tries again (see ``endAtPassedDeadline(from:across:unlessBefore:)``).
    let deadline: Duration
    /// For an attempt of a hedged call after the first: the first attempt's signal, which keeps
    /// the quiet of the whole call (``quietRecord``). The first attempt exists on every path, so
    /// the call's shared record costs no allocation of its own.
    private let firstOfCall: TimeLimitSignal?
    /// The stops of the ``RetryPolicy`` calls nested in the attempt at their own deadlines, once
    /// the clock had passed them: a retained lock over `NestedDeadlineStops`, made with the first
    /// stop and kept until the signal goes; 0 for none (see ``noteDeadlineStop(_:)``). Only a limit
    /// enclosing a policy that stopped so holds one: one word in every signal, and nothing made,
    /// on every other path.
    private let deadlineStops = Atomic<UInt>(0)
    /// The signal of the same kind enclosing this one, if any.
    let enclosing: TimeLimitSignal?
    /// For a time limit (a ``Timeout``'s, a policy's `attemptTimeout`): its clock and its
    /// deadline on it, so that a limit nested in it can tell whether this one came first (see
    /// ``enclosingLimitCameFirst(deadline:on:)``); `nil` for a hedged attempt's signal.
    var due: (clock: ElapsedClock, deadline: Duration)? {
        guard let clock = self.clock, self.quietClock == nil else { return nil }
        return (clock.elapsedClock, self.deadline)
    }
    /// The task that set the limit (or started the hedged call), from which the attempt's own
    /// task was started: the nested-retry ledger's address of a policy nested in the attempt
    /// names it (see `NestedRetryLedger.Address`).
    let host: Int

    /// A signal linked to `enclosing`, made inside `across`, the innermost signal of the other
    /// kind in the same scope (a hedged attempt's for a time limit, a time limit's for a hedged
    /// attempt), measured on `clock`, whose limit, if it has one, is due at `deadline` on that
    /// clock; for a later attempt of a hedged call, `firstOfCall` is the signal of the call's
    /// first attempt. Only `across`'s ``depth`` is read: nothing more is kept of it.
    init(
        enclosing: TimeLimitSignal? = nil, across: TimeLimitSignal? = nil, clock: TimeLimitClock? = nil,
        deadline: Duration = .zero, firstOfCall: TimeLimitSignal? = nil
    ) {
        self.depth = Swift.max(enclosing?.depth ?? 0, across?.depth ?? 0) &+ 1
        self.enclosing = enclosing
        self.clock = clock
        self.deadline = deadline
        self.firstOfCall = firstOfCall
        self.host = NestedRetryLedger.currentTask
    }

    /// For an attempt of a hedged call: the strategy on whose clock ``quietEndNanoseconds`` is
    /// kept; `nil` for every other signal.
    var quietClock: Hedging? {
        guard case .hedging(let hedging) = self.clock else { return nil }
        return hedging
    }

    deinit {
        Self.release(self.lateErrorBox.load(ordering: .relaxed))
        Self.release(self.deadlineStops.load(ordering: .relaxed))
    }

    /// Records that the time limit, not the caller, is about to cancel the attempt, whatever its state.
    ///
    /// An attempt that had completed already is marked as ended all the same
    /// (``attemptHasEnded``), before its state says fired: a task it started that outlived it
    /// must not read the supersession as its own.
    func fire() {
        let (exchanged, original) = self.state.compareExchange(
            expected: Self.pending, desired: Self.fired, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring)
        guard !exchanged else { return }
        if original == Self.completed { self.returnedAfterSettled.store(true, ordering: .releasing) }
        self.state.store(Self.fired, ordering: .releasing)
    }

    /// Claims the attempt for the time limit; `false` when the attempt already completed
    /// or its caller was cancelled first (``yieldToCaller()``).
    ///
    /// Call it before cancelling the attempt, and cancel only on `true`.
    func claim() -> Bool {
        self.state.compareExchange(
            expected: Self.pending, desired: Self.fired, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring
        ).exchanged
    }

    /// Records that the caller, not the time limit, ends the attempt, unless the limit
    /// claimed it first or it already completed; a later ``claim()`` fails.
    ///
    /// Called by the caller's cancellation handler before it cancels the attempt, so the
    /// limit can no longer pass for the cause of the attempt's end, however long the
    /// cancelled operation takes to return.
    func yieldToCaller() {
        _ = self.state.compareExchange(
            expected: Self.pending, desired: Self.callerCancelled, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring)
    }

    /// Marks the attempt as completed by its own task; a later ``claim()`` fails.
    ///
    /// Called by the attempt's task when the operation returns, before its result is published.
    /// When the limit or the caller settled the signal first, records that the operation has
    /// returned all the same; the attempt that completes first stores nothing more.
    func complete() {
        let settled = !self.state.compareExchange(
            expected: Self.pending, desired: Self.completed, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring
        ).exchanged
        if settled { self.returnedAfterSettled.store(true, ordering: .releasing) }
    }

    /// Claims the right to hand the attempt's outcome to the caller as it starts the
    /// attempt; `false` once the caller closed that window with ``closeStart()``.
    ///
    /// Exactly one of this and ``closeStart()`` returns `true`: the winner resumes the
    /// caller's wait for the start, the attempt with its outcome, the caller with none.
    func handOverAtStart() -> Bool {
        self.start.compareExchange(
            expected: Self.pending, desired: Self.completed, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring
        ).exchanged
    }

    /// Closes the window in which the attempt hands its outcome over at its start;
    /// `false` when the attempt already did.
    func closeStart() -> Bool {
        self.start.compareExchange(
            expected: Self.pending, desired: Self.fired, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring
        ).exchanged
    }

    /// For a ``Timeout``: publishes `registration`, the running attempt's deadline, for
    /// the caller's cancellation handler; `false` when the caller was cancelled before the
    /// attempt started, which the attempt must then do itself.
    func publish(_ registration: UInt64) -> Bool {
        self.registration.compareExchange(
            expected: UInt64(Self.pending), desired: registration, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring
        ).exchanged
    }

    /// For a ``Timeout``'s cancellation handler: the registration through which to cancel
    /// the running attempt, or `nil` after recording that the attempt, not started yet,
    /// must start cancelled (``publish(_:)`` then returns `false`).
    func cancelAttempt() -> UInt64? {
        let (exchanged, published) = self.registration.compareExchange(
            expected: UInt64(Self.pending), desired: Self.cancelledEarly, successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring)
        guard !exchanged, published != Self.cancelledEarly else { return nil }
        return published
    }

    /// The ``registration`` of an attempt whose caller was cancelled before it started;
    /// a deadline watcher numbers its registrations from 1 up, and never reaches it.
    private static let cancelledEarly = UInt64.max

    /// For an attempt of a hedged call, before its operation starts: publishes `task`, the
    /// attempt's own task, for the caller's cancellation handler, or cancels it at once when
    /// the caller was cancelled before the attempt started.
    func attemptStarted<Guarded>(_ task: UnsafeCurrentTask?, guardedBy lock: Lock<Guarded>) {
        guard let task else { return }  // not in a task: nothing to publish, nor to cancel
        let cancelledEarly = lock.withLock { _ in
            if case .cancelledEarly = self.attempt { return true }
            self.attempt = .running(task)
            return false
        }
        if cancelledEarly { task.cancel() }
    }

    /// For an attempt of a hedged call, as soon as its operation returns: withdraws its
    /// task, so that nothing reaches the task through this signal any more.
    func attemptEnded<Guarded>(guardedBy lock: Lock<Guarded>) {
        lock.withLock { _ in self.attempt = .ended }
    }

    /// For the cancellation handler of a hedged call's caller: cancels the attempt while it
    /// runs (the first attempt also while it runs synchronously on the caller's thread,
    /// before any handle to its task exists), or has it start cancelled; an attempt that
    /// ended is left alone.
    ///
    /// The task is taken under the lock and cancelled after it: cancelling runs the
    /// attempt's own cancellation handlers, and no lock is held across those. The attempt
    /// may end in between; the copy taken keeps the task alive until it is dropped, and
    /// cancelling a task that has completed does nothing.
    func cancelRunningAttempt<Guarded>(guardedBy lock: Lock<Guarded>) {
        let running: (any AttemptTask)? = lock.withLock { _ in
            switch self.attempt {
            case .notStarted:
                self.attempt = .cancelledEarly
                return nil
            case .running(let task):
                return task
            case .cancelledEarly, .ended:
                return nil
            }
        }
        running?.cancel()
    }

    /// Whether the attempt's own task marked it completed before any limit claimed it.
    var isCompleted: Bool {
        self.state.load(ordering: .acquiring) == Self.completed
    }

    /// Whether the caller's cancellation settled the signal (``yieldToCaller()``).
    var isYieldedToCaller: Bool {
        self.state.load(ordering: .acquiring) == Self.callerCancelled
    }

    /// Whether the time limit fired (or claimed the attempt).
    var hasFired: Bool {
        self.state.load(ordering: .acquiring) == Self.fired
    }

    /// Whether a call that may not run twice started inside this limit (see
    /// `CallScope.tellEnclosingLimits()`).
    var enclosesNotIdempotentCall: Bool {
        self.enclosesNotIdempotent.load(ordering: .acquiring)
    }

    /// Marks `innermost` and every signal enclosing it as holding a call that may not run twice.
    ///
    /// Stops at the first signal already marked: its enclosing ones were marked with it.
    ///
    /// Crosses signals whose attempt has ended, unlike ``anyFired(from:across:)``: a call in a
    /// task that outlived an attempt (`Task { }` in its operation) still sends its request from
    /// inside every limit and hedged call around that attempt, and running any of them again
    /// would start the task, and send the request, again. Nothing else reads such a mark: every
    /// call, and every attempt of a hedged call or of a policy's `attemptTimeout`, has signals of
    /// its own, and a hedged call starting no other copy of its operation is what it asks for.
    static func markNotIdempotent(from innermost: TimeLimitSignal?) {
        var signal = innermost
        while let current = signal, !current.enclosesNotIdempotent.load(ordering: .relaxed) {
            current.enclosesNotIdempotent.store(true, ordering: .releasing)
            signal = current.enclosing
        }
    }

    /// Whether the library saw a request of this limit's attempt that may have left: a failure
    /// it read in the attempt did not prove its request never left (``noteARequestMayHaveLeft(from:)``).
    ///
    /// What the attempt ends with then proves nothing about the attempt's request: an offline
    /// failure or a refusal at a gate came after a request that may have reached the dependency.
    var sawARequestLeave: Bool {
        self.requestMayHaveLeft.load(ordering: .acquiring)
    }

    /// Records, in `innermost` and every signal enclosing it, that a request of their attempts
    /// may have left: a failure the library read there did not prove it never left.
    ///
    /// A ``RetryPolicy`` tells its enclosing limits so when an attempt fails that way, before it
    /// tries again, and a call declared not idempotent when it succeeds (`CallScope.noteSucceeded()`). The facts of the call then travel with it: a limit that ends the attempt
    /// later, while the policy waits for the network after an offline try that sent nothing, does
    /// not read that last try as the whole attempt's (an attempt that sent a request, lost the
    /// connection, then found the network down may have reached the dependency). Written by the
    /// attempt's task before it goes on, read by the limit after it has waited for that task, or
    /// by a breaker in that task. Stops at the first signal already marked: its enclosing ones
    /// were marked with it.
    ///
    /// Crosses signals whose attempt has ended, as ``markNotIdempotent(from:)`` does: a request a
    /// task that outlived an attempt sent left from inside the limits around that attempt, and a
    /// late failure that never left does not speak for them. A breaker reads the mark only across
    /// running attempts (``anyFiredSawARequestLeave(from:across:)``).
    static func noteARequestMayHaveLeft(from innermost: TimeLimitSignal?) {
        var signal = innermost
        while let current = signal, !current.requestMayHaveLeft.load(ordering: .relaxed) {
            current.requestMayHaveLeft.store(true, ordering: .releasing)
            signal = current.enclosing
        }
    }

    /// Records in `innermost` and every signal enclosing it that a call that may not run twice
    /// succeeded in their attempts at `moment`, in the nested-retry ledger's count (see
    /// `CallScope.noteSucceeded()`). Written by the attempt's task as the call returns, read on
    /// a failure path only: by the limit once its attempt failed, by a policy nested in it.
    ///
    /// Crosses signals whose attempt has ended, as ``markNotIdempotent(from:)`` does: the request
    /// of a task that outlived an attempt reached the dependency from inside the limits, hedged
    /// calls and policies around that attempt, and running their attempt again would send it
    /// again; as the nested-retry ledger hears of it under the enclosing policy's call, whatever
    /// attempt the task started in.
    static func noteNotIdempotentSuccess(at moment: UInt64, from innermost: TimeLimitSignal?) {
        var signal = innermost
        while let current = signal {
            current.notIdempotentSuccess.max(moment, ordering: .releasing)
            signal = current.enclosing
        }
    }

    /// Whether a call that may not run twice succeeded in this limit's attempt after `mark`
    /// (any, for 0), in the nested-retry ledger's count.
    func notIdempotentCallSucceeded(after mark: UInt64) -> Bool {
        self.notIdempotentSuccess.load(ordering: .acquiring) > mark
    }

    /// Whether a fired signal from `innermost` outwards saw a request of its attempt that may
    /// have left (``sawARequestLeave``): for a failure read in the task a limit cancelled, whose
    /// innermost signal of the other kind is `across`. The signals are read as
    /// ``anyFired(from:across:)`` reads them.
    static func anyFiredSawARequestLeave(from innermost: TimeLimitSignal?, across: TimeLimitSignal?) -> Bool {
        var saw = false
        Self.walkRunning(from: innermost, across: across) { current in
            saw = current.hasFired && current.sawARequestLeave
            return !saw
        }
        return saw
    }

    /// The idempotency an attempt this limit ended is reported with: `declared`, made
    /// stricter when a call inside declared itself not idempotent.
    func reportedIdempotency(declared: Idempotency?) -> Idempotency? {
        if let declared, !declared.isIdempotent { return declared }
        return self.enclosesNotIdempotentCall ? .notIdempotent : declared
    }

    /// Records that a policy nested in the attempt, cut short by this limit while it waited
    /// to retry `error`, ends with it, which it had received `age` before.
    ///
    /// The limit keeps the error (see `LateOperationError`), and its retry-after hint runs
    /// from the response, not from the limit's end: the layers above read it less `age`
    /// (see ``takeLateErrorAge(of:)``). Written by the attempt's task before it returns, read by
    /// the limit after it has waited for that task. Only on that failure path: it retains the
    /// error's box, which ``takeLateErrorAge(of:)`` or the signal's end releases.
    func noteLateError(_ error: any Error, age: Duration) {
        self.lateErrorAgeNanoseconds.store(Self.nanoseconds(of: age), ordering: .relaxed)
        let retained = UInt(bitPattern: Unmanaged.passRetained(Self.box(of: error)).toOpaque())
        Self.release(self.lateErrorBox.exchange(retained, ordering: .acquiringAndReleasing))
    }

    /// How long before the limit's end `error`, the attempt's late error, had been received,
    /// when a policy nested in the attempt said so (``noteLateError(_:age:)``) for this very
    /// error or for an error `error` wraps; `nil` otherwise (a late failure of the operation's
    /// own came as the limit ended). Releases what the note kept: the limit asks once.
    ///
    /// The error the policy ended with is found in `error`'s chain by its identity, the heap box
    /// a rethrow, a `Result` or a task hands on, so it is found where the code between the policy
    /// and the limit kept it as it came: as thrown, as an app's enum case's payload, as a stored
    /// property (reflection hands on the box). Where the code in between bridged it to `NSError`
    /// or kept it under `NSUnderlyingErrorKey`, it is found by what its `NSError` form keeps of it
    /// (see ``holds(_:box:in:orSameDomainAndCode:)``): an `NSError` instance by its identity, a
    /// library time limit's error by its end. A Swift value rebuilt on the way, or bridged or read
    /// back from a `userInfo` on Linux, which makes a new value, is not guessed from its domain and
    /// code, which another failure may share: there the age is lost, and the layers above count
    /// the hint whole from when the limit ended the attempt, longer than the server asked, never shorter.
    func takeLateErrorAge(of error: any Error) -> Duration? {
        let address = self.lateErrorBox.exchange(0, ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: address) else { return nil }
        let late = unsafeBitCast(Unmanaged<AnyObject>.fromOpaque(pointer).takeRetainedValue(), to: (any Error).self)
        let found = Self.holds(late, box: address, in: error)
        return found ? .nanoseconds(self.lateErrorAgeNanoseconds.load(ordering: .relaxed)) : nil
    }

    /// Whether `error`'s chain holds `noted`, a failure a policy nested in the attempt told this
    /// limit of, whose heap box is at `box`: for the limit's failure path only.
    ///
    /// Found by identity first, the box a rethrow, a `Result`, a task or a wrapper that keeps it
    /// as it came hands on. Bridged to `NSError` (`error as NSError`), or kept under
    /// `NSUnderlyingErrorKey` and read back, the error is boxed anew; it is then found by what
    /// its `NSError` form keeps that no other failure has:
    /// - an `NSError` instance (an SDK's error, an error the operation made so) is the same
    ///   object there, found by its identity;
    /// - a library time limit's error keeps its end (``TimeLimitEnd``) in the `userInfo` of its
    ///   `NSError` form, and of a copy made with the same `userInfo`, found by that instance.
    ///
    /// For those two nothing else is taken for it: another failure of the same domain and code is
    /// another failure. A Swift value bridges (on Linux) to its domain and code alone;
    /// `orSameDomainAndCode` then takes for it an `NSError` instance of the chain, or the error one
    /// keeps under `NSUnderlyingErrorKey`, with the same domain and code, since nothing better
    /// survives; a Swift value elsewhere in the chain was never bridged, and is another failure.
    private static func holds(
        _ noted: any Error, box: UInt, in error: any Error, orSameDomainAndCode: Bool = false
    ) -> Bool {
        var found = false
        ErrorChain.walk(error) { node in
            found = Self.identity(of: node) == box
            return !found
        }
        if found { return true }
        if type(of: noted) is NSError.Type {
            let object = noted as NSError
            ErrorChain.walk(error) { node in
                found = type(of: node) is NSError.Type && (node as NSError) === object
                return !found
            }
            return found
        }
        if let end = TimeLimitEnd.of(ErrorChain.Node(noted)) {
            ErrorChain.walkNodes(error) { node in
                found = TimeLimitEnd.of(node) === end
                return !found
            }
            return found
        }
        guard orSameDomainAndCode else { return false }
        let bridged = noted as NSError
        let same = { (form: NSError) in form.code == bridged.code && form.domain == bridged.domain }
        ErrorChain.walk(error) { node in
            // Only what bridging made or kept: an `NSError` instance, and the error it keeps under
            // `NSUnderlyingErrorKey`, read back as a new value on Linux. A Swift value elsewhere in
            // the chain, never bridged, is another failure, whatever it would bridge to (`as
            // NSError` bridges any Swift error on Linux: the opened value's own type tells).
            guard type(of: node as Any) is NSError.Type else { return true }
            let form = node as NSError
            found =
                same(form) || (form.userInfo[NSUnderlyingErrorKey] as? any Error).map { same($0 as NSError) } ?? false
            return !found
        }
        return found
    }

    /// The heap box `error` refers to: stable across rethrows, task groups and `Result`s, as
    /// `NestedRetryLedger` relies on.
    private static func box(of error: any Error) -> AnyObject {
        unsafeBitCast(error as any Error, to: AnyObject.self)
    }

    /// The address of the heap box `error` refers to.
    private static func identity(of error: any Error) -> UInt {
        UInt(bitPattern: ObjectIdentifier(Self.box(of: error)))
    }

    /// Releases the object retained at `address`, if any: the box ``noteLateError(_:age:)`` keeps,
    /// the record of stops ``noteDeadlineStop(_:)`` makes.
    private static func release(_ address: UInt) {
        guard let pointer = UnsafeRawPointer(bitPattern: address) else { return }
        Unmanaged<AnyObject>.fromOpaque(pointer).release()
    }

    /// `duration` in whole nanoseconds, zero or more, clamped to `Int64` (about 292 years).
    private static func nanoseconds(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowAgain ? .max : total
    }

    /// Records that a policy nested in the attempt stopped at its own deadline, as `stop` says,
    /// which the clock had passed: this limit, whether it fired or not, may have had its deadline
    /// passed in the same move.
    ///
    /// When this limit fired and cut the policy's wait short, the policy's deadline may have come
    /// first: the limit then passes on the error the policy ended with, as it passes on the error
    /// of a limit nested in the attempt (see ``nestedPolicyStopped(_:before:on:)``). When it had
    /// not fired, its own deadline may have come first, its timer waking after the policy's wait:
    /// the limit then claims the call (see ``nestedPolicyStopped(_:after:on:)``). Written by the
    /// attempt's task, and by the tasks it runs, before they return, read by the limit after it
    /// has waited for the attempt. Only on that failure path.
    ///
    /// Every stop is kept, up to a few (`NestedDeadlineStops`), each with the failure it holds:
    /// policies side by side in the attempt, or one after another, each tell the limit of their
    /// own, and the limit reads the stops of the failure its attempt ends with
    /// (``takeDeadlineStops(of:)``). The record is made with the first stop; its lock is held only
    /// to add a stop or take them all, and the stop it drops to make room, holding the app's
    /// failure, is released after the lock.
    func noteDeadlineStop(_ stop: NestedDeadlineStop) {
        let dropped = self.makingDeadlineStopRecord().withLock { $0.add(stop) }
        withExtendedLifetime(dropped) {}  // released here, after the lock
    }

    /// The lock over the stops of the policies nested in the attempt (``noteDeadlineStop(_:)``),
    /// once a policy told this limit of one; `nil` before.
    ///
    /// Kept until the signal goes, once made: read without a reference of its own.
    var deadlineStopRecord: Lock<NestedDeadlineStops>? {
        let address = self.deadlineStops.load(ordering: .acquiring)
        guard let pointer = UnsafeRawPointer(bitPattern: address) else { return nil }
        return Unmanaged<Lock<NestedDeadlineStops>>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// ``deadlineStopRecord``, made now when no policy told this limit of a stop before: one
    /// record wins, whichever task makes it first.
    private func makingDeadlineStopRecord() -> Lock<NestedDeadlineStops> {
        if let record = self.deadlineStopRecord { return record }
        let made = Unmanaged.passRetained(Lock(NestedDeadlineStops()))
        let (exchanged, original) = self.deadlineStops.compareExchange(
            expected: 0, desired: UInt(bitPattern: made.toOpaque()), successOrdering: .acquiringAndReleasing,
            failureOrdering: .acquiring)
        if exchanged { return made.takeUnretainedValue() }
        made.release()  // another task made the record first
        return Unmanaged<Lock<NestedDeadlineStops>>.fromOpaque(UnsafeRawPointer(bitPattern: original)!)
            .takeUnretainedValue()
    }

    /// The ends of the deadlines of the policies nested in the attempt that stopped with `error`,
    /// the attempt's error, or with an error it holds (``noteDeadlineStop(_:)``), oldest first;
    /// none when no policy did. The limit asks once: every stop is taken out, and those of other
    /// failures are dropped.
    ///
    /// Each stop is found by its failure's identity, as ``takeLateErrorAge(of:)`` finds its error,
    /// or, when the code in between bridged it to `NSError`, by what its `NSError` form keeps of
    /// it: an `NSError` instance by its identity, a library time limit's error by its end (see
    /// ``holds(_:box:in:orSameDomainAndCode:)``). Only when no stop is found so, by the domain and
    /// code of a Swift value that bridging on Linux left nothing else of: another failure of the
    /// same domain and code (another request's `URLError(.timedOut)` kept under
    /// `NSUnderlyingErrorKey`, say) is then taken for the stop, which only decides which of two
    /// passed deadlines the call reports.
    ///
    /// The stops are taken out under the lock, and compared and released after it: the walk along
    /// `error`'s chain may run the app's code (a `CustomNSError`'s `userInfo`), and releasing a
    /// stop may release the app's failure.
    func takeDeadlineStops(of error: any Error) -> [TimeLimitEnd] {
        guard let record = self.deadlineStopRecord else { return [] }
        let stops = record.withLock { $0.takeAll() }
        let found = stops.compactMap { stop in
            Self.holds(stop.error, box: Self.identity(of: stop.error), in: error) ? stop.end : nil
        }
        if !found.isEmpty { return found }
        // No stop's failure is in the chain as itself: where the code in between bridged a Swift
        // value on Linux, its domain and code are all that is left of it.
        return stops.compactMap { stop in
            Self.holds(stop.error, box: Self.identity(of: stop.error), in: error, orSameDomainAndCode: true)
                ? stop.end : nil
        }
    }

    /// Whether a policy nested in this limit's attempt stopped with `error` at its own deadline
    /// (``takeDeadlineStops(of:)``), which came no later than this limit's, due at `deadline` on
    /// `clock`, the same clock only (see `TimeLimitEnd.decided(beforeDeadline:on:)`).
    ///
    /// Where several policies stopped with that very error (a policy around a policy, which passes
    /// the inner one's failure on), the earliest decided it: one that came no later is enough.
    func nestedPolicyStopped(_ error: any Error, before deadline: Duration, on clock: ElapsedClock) -> Bool {
        self.takeDeadlineStops(of: error).contains { $0.decided(beforeDeadline: deadline, on: clock) }
    }

    /// Whether a policy nested in this limit's attempt stopped with `error` at its own deadline
    /// (``takeDeadlineStops(of:)``) after this limit's deadline, due at `deadline` on `clock`,
    /// had passed, its own deadline coming later: this limit came first, though its timer had not
    /// woken (see `TimeLimitEnd.ended(afterEarlierDeadline:on:)`). Nothing is taken, and the
    /// answer is `false`, while `deadline` has not passed (one reading of the clock).
    ///
    /// Where several policies stopped with that very error, every one of them must have come
    /// after: one that came first decided the error before this limit's deadline.
    func nestedPolicyStopped(_ error: any Error, after deadline: Duration, on clock: ElapsedClock) -> Bool {
        guard clock.now() >= deadline else { return false }
        let ends = self.takeDeadlineStops(of: error)
        return !ends.isEmpty && ends.allSatisfy { $0.ended(afterEarlierDeadline: deadline, on: clock) }
    }

    /// Whether this limit, due at `deadline` on `clock`, came first though its timer had not fired
    /// when the attempt ended with `error`: the attempt has completed, and `error` is the end of a
    /// limit nested in it (``TimeLimitEnd/passedEarlier(_:than:on:)``) or of a policy nested in it
    /// at its own deadline (``nestedPolicyStopped(_:after:on:)``), due later, that came after
    /// `deadline` had passed.
    func cameFirst(before error: any Error, deadline: Duration, on clock: ElapsedClock) -> Bool {
        self.isCompleted
            && (TimeLimitEnd.passedEarlier(error, than: deadline, on: clock)
                || self.nestedPolicyStopped(error, after: deadline, on: clock))
    }

    /// Whether `error` is the end of a limit nested in this one (``TimeLimitEnd/decidedEarlier(_:than:on:)``)
    /// or of a policy nested in it at its own deadline (``nestedPolicyStopped(_:before:on:)``)
    /// that came no later than this limit's `deadline` on `clock`: its error goes on as it is.
    func nestedLimitCameFirst(_ error: any Error, deadline: Duration, on clock: ElapsedClock) -> Bool {
        TimeLimitEnd.decidedEarlier(error, than: deadline, on: clock)
            || self.nestedPolicyStopped(error, before: deadline, on: clock)
    }

    /// Whether a time limit enclosing this one, on the same clock, came first: its deadline came
    /// earlier than `deadline`, this limit's on `clock`, and has passed, and its caller had not
    /// given up before it (``isYieldedToCaller``). That limit claims the call, as it would have
    /// had the clock moved in steps, when it would have cancelled the attempt before this limit's
    /// deadline came (see ``cameFirst(before:deadline:on:)``): this limit, which a clock that
    /// passed both deadlines in one move woke first, ended the attempt but does not report it.
    /// Limits on different clocks cannot be ordered: `false` for those. On the failure path only.
    ///
    /// The limits read are those around the attempt this limit's call runs in, `across` the
    /// innermost hedged attempt's signal in its scope, as ``anyFired(from:across:)`` reads them:
    /// the walk stops at the first signal, of either kind, whose attempt has ended. This limit
    /// then runs in a task that outlived that attempt (`Task { }` in its operation, which took
    /// the scope), which no limit around the attempt cancels: whatever their deadlines, none of
    /// them came first, and this limit's time-out, its own, is reported here.
    func enclosingLimitCameFirst(deadline: Duration, on clock: ElapsedClock, across: TimeLimitSignal?) -> Bool {
        var cameFirst = false
        Self.walkRunning(from: self.enclosing, across: across) { current in
            if let due = current.due, due.clock.identity == clock.identity, !current.isYieldedToCaller {
                // The two clocks read one time from different origins: move the enclosing
                // limit's deadline onto this limit's clock.
                let now = clock.now()
                let theirs = due.deadline + (now - due.clock.now())
                cameFirst = theirs < deadline && theirs <= now
            }
            return !cameFirst
        }
        return cameFirst
    }

    /// Tells every limit from `innermost` outwards, fired or not, that a policy nested in it
    /// stopped at its own deadline (see ``noteDeadlineStop(_:)``).
    ///
    /// Crosses signals whose attempt has ended: a limit reads the note only for the error its own
    /// attempt ends with (``takeDeadlineStops(of:)``), which holds the policy's when its operation
    /// awaited the task that outlived a nested attempt, and the stop then says which deadline came
    /// first as it does for a policy in the attempt. A limit whose attempt has ended reads nothing.
    static func noteDeadlineStop(_ stop: NestedDeadlineStop, from innermost: TimeLimitSignal?) {
        var signal = innermost
        while let current = signal {
            current.noteDeadlineStop(stop)
            signal = current.enclosing
        }
    }

    /// Tells every fired limit from `innermost` outwards that a policy nested in it ends with
    /// `error`, received `age` before (see ``noteLateError(_:age:)``); the limits whose attempt
    /// the policy runs in only, `across` the innermost hedged attempt's signal around the policy
    /// (see ``anyFired(from:across:)``).
    static func noteLateError(
        _ error: any Error, age: Duration, from innermost: TimeLimitSignal?, across: TimeLimitSignal?
    ) {
        Self.walkRunning(from: innermost, across: across) { current in
            if current.hasFired { current.noteLateError(error, age: age) }
            return true
        }
    }

    /// For an attempt of a hedged call: the signal that keeps the quiet of the call, the same for
    /// all its attempts (its first attempt's).
    private var quietRecord: TimeLimitSignal { self.firstOfCall ?? self }

    /// For an attempt of a hedged call: records that the call heard a retry-after hint that ends
    /// at `end` on the strategy's clock, unless a later end is recorded. Kept once for the whole
    /// call (``quietRecord``): written by the call, for a hint from one of its attempts, and by
    /// what is nested in an attempt (``hearQuiet(_:from:onlyOn:)``); read by the policies nested in any
    /// of its attempts before they send again (``quietLeft(from:)``), and by the call before it
    /// starts an attempt (``quietEnd``).
    func holdQuiet(until end: Duration) {
        let (seconds, attoseconds) = end.components
        var nanoseconds = Self.nanoseconds(of: end)
        // Rounded up, so the quiet never ends before the hint does.
        if seconds >= 0, attoseconds % 1_000_000_000 != 0, nanoseconds < .max { nanoseconds += 1 }
        self.quietRecord.quietEndNanoseconds.max(nanoseconds, ordering: .releasing)
    }

    /// For an attempt of a hedged call: the end of the latest retry-after hint the call heard
    /// (``holdQuiet(until:)``), on the strategy's clock, or `nil` for none.
    var quietEnd: Duration? {
        let end = self.quietRecord.quietEndNanoseconds.load(ordering: .acquiring)
        return end == .min ? nil : .nanoseconds(end)
    }

    /// Tells every hedged call enclosing `innermost` that a call nested in one of its attempts
    /// (a hedged call, a ``RetryPolicy``) heard a retry-after hint of `hint` from the dependency
    /// just now: each holds quiet until it has passed on its own clock (``holdQuiet(until:)``),
    /// so its other attempts, and the policies in them, do not send before then, and it starts
    /// no attempt before then. On the failure path only.
    ///
    /// With `clock`, only the calls on the same clock hear it: a policy that waits out its own
    /// hint on its clock and then reads what the calls around it heard (``quietLeft(from:)``)
    /// must find the hint passed there too, which a call on another clock (a test's clock
    /// beside the system's) cannot promise.
    ///
    /// Crosses attempts that have ended: a hint heard in a task that outlived an attempt (`Task { }`
    /// in its operation) came from the dependency the hedged call's other attempts send to, so the
    /// call holds back, while it runs, as for a hint from a running attempt. The quiet is the
    /// call's own: a later call starts with none.
    static func hearQuiet(_ hint: Duration, from innermost: TimeLimitSignal?, onlyOn clock: ElapsedClock? = nil) {
        guard hint > .zero else { return }
        var signal = innermost
        while let current = signal {
            if let hedging = current.quietClock, clock.map({ $0.identity == hedging.clockIdentity }) ?? true {
                current.holdQuiet(until: hedging.now() + hint)
            }
            signal = current.enclosing
        }
    }

    /// The longest time left of the retry-after hints the hedged calls enclosing `innermost`
    /// heard (``holdQuiet(until:)``), or `nil` when none is left.
    ///
    /// Crosses attempts that have ended, as ``hearQuiet(_:from:onlyOn:)`` does: a policy in a task
    /// that outlived an attempt sends to the dependency that asked the call for quiet, and waits
    /// too. A hint lasts as long as the server asked, and no call's quiet reaches another call.
    static func quietLeft(from innermost: TimeLimitSignal?) -> Duration? {
        var left: Duration?
        var signal = innermost
        while let current = signal {
            if let clock = current.quietClock, let end = current.quietEnd {
                let remaining = end - clock.now()
                if remaining > .zero { left = Swift.max(left ?? .zero, remaining) }
            }
            signal = current.enclosing
        }
        return left
    }

    /// Ends the attempt of the innermost library time limit from `innermost` outwards whose
    /// deadline the clock has passed, as its timer would have had it woken first: claims it for
    /// that limit. Returns whether a limit, or the caller's cancellation, ends the attempt the
    /// policy asking runs in: one claimed here, or one that had fired or yielded to the caller.
    ///
    /// For a ``RetryPolicy`` nested in the attempt, before it tries again or sleeps before a
    /// retry: a clock that passed the deadline (a jump, a timer that wakes late) may leave the
    /// limit's timer asleep while the policy runs on, and the policy would start a try the limit
    /// is about to cancel, a request that may reach the dependency after the limit's time-out.
    /// Claimed, the limit reports its time-out when the attempt returns, whatever its timer does
    /// (see `TimeLimit.failure(_:of:declaring:scope:)`), and the policy stops as when the timer
    /// cancelled it. A claimed limit nested in another whose deadline came earlier still leaves
    /// the call to that one, as when its timer ends the call first (see `TimeLimitEnd`).
    ///
    /// `inherited`, the deadline enclosing policies hand down, when it has passed too and came
    /// no later on the same clock, leaves the limits alone: the policy stops at that deadline, as
    /// it would have had the clock stepped. A limit whose attempt's operation has returned (a
    /// policy in an unstructured task the attempt started, which took its scope) is over, and
    /// ends nothing, whether it had completed, fired or yielded to the caller; nor does a limit
    /// around it, nor one around a hedged attempt that has ended, of which `across` is the
    /// innermost signal in the policy's scope: the policy runs in a task that outlived that
    /// attempt, which no limit around the attempt cancels (the walk stops there, as
    /// ``anyFired(from:across:)``'s does).
    ///
    /// Failure path only: a limit's clock is read for each pending signal, innermost first.
    static func endAtPassedDeadline(
        from innermost: TimeLimitSignal?, across: TimeLimitSignal?, unlessBefore inherited: InheritedDeadline?
    ) -> Bool {
        var signal = innermost
        var other = across
        while let current = signal {
            // The hedged attempts made inside this limit, innermost first.
            while let inside = other, inside.depth > current.depth {
                if inside.attemptHasEnded { return false }
                other = inside.enclosing
            }
            // The limit's timer, or the caller, is cancelling the attempt, unless the attempt's
            // operation has returned: the policy asking then runs in a task that outlived it,
            // which nothing cancelled, neither this limit nor one around it.
            if current.attemptHasEnded { return false }
            switch current.state.load(ordering: .acquiring) {
            case Self.fired, Self.callerCancelled:
                return true
            case Self.pending:
                guard let clock = current.clock?.elapsedClock, clock.now() >= current.deadline else { break }
                if let inherited, inherited.passed(noLaterThan: current.deadline, on: clock) { return false }
                // Lost only to the attempt's end, which leaves the limit over, or to a timer or a
                // caller that settled it a moment before.
                return current.claim() || !current.isCompleted
            default:
                return false  // completed a moment ago: over, as above
            }
            signal = current.enclosing
        }
        return false
    }

    /// Whether `innermost` or any signal enclosing it fired while its attempt runs: whether a
    /// library time limit (or a hedging race), not the caller, is cancelling the task asking,
    /// whose innermost signal of the other kind (a hedged attempt's for a time limit, a time
    /// limit's for a hedged attempt) is `across`.
    ///
    /// The walk stops at the first signal whose attempt has ended (``attemptHasEnded``), of
    /// either kind: the task asking outlived that attempt, so it is an unstructured task the
    /// attempt's operation started (a background refresh, `Task { … }`), which took the call's
    /// scope with it. No limit cancels such a task, neither that attempt's nor one enclosing it,
    /// of either kind: a ``Timeout`` around a hedged call whose attempt the task outlived may
    /// fire while another attempt runs on, and a hedging race around a ``Timeout`` whose operation
    /// the task outlived may supersede the attempt running on after it. The task's owner cancels
    /// it, and that is the caller's cancellation. A limit the task sets up itself sits inside the
    /// ended signal and still counts.
    static func anyFired(from innermost: TimeLimitSignal?, across: TimeLimitSignal?) -> Bool {
        var fired = false
        Self.walkRunning(from: innermost, across: across) { current in
            fired = current.hasFired
            return !fired
        }
        return fired
    }

    /// Whether a limit from `innermost` outwards, on the same clock as `clock`, was due before
    /// `deadline` on it and has passed, its caller not having given up before it: one that fired
    /// is ending the attempt already; one still pending (its timer not yet woken) is claimed for
    /// its limit here, which then reports its time-out when the attempt returns, as when its
    /// timer woke first. The signals read are those around the running attempt, `across` the
    /// innermost hedged attempt's signal, as ``anyFired(from:across:)`` reads them. Limits on
    /// other clocks cannot be ordered and are passed over.
    static func claimEarlier(
        than deadline: Duration, on clock: ElapsedClock, from innermost: TimeLimitSignal?, across: TimeLimitSignal?
    ) -> Bool {
        var cameFirst = false
        Self.walkRunning(from: innermost, across: across) { current in
            guard let due = current.due, due.clock.identity == clock.identity else { return true }
            // The two clocks read one time from different origins: move the limit's deadline
            // onto `clock`.
            let now = clock.now()
            let theirs = due.deadline + (now - due.clock.now())
            guard theirs < deadline, theirs <= now else { return true }
            switch current.state.load(ordering: .acquiring) {
            case Self.fired:
                cameFirst = true
            case Self.pending:
                // Lost only to a timer that fired a moment before (it ends the call all the
                // same), or to the caller's cancellation or the attempt's end.
                cameFirst = current.claim() || current.hasFired
            default:
                break  // the caller gave up first, or the attempt is over
            }
            return !cameFirst
        }
        return cameFirst
    }

    /// Hands `visit` the signals from `innermost` outwards, of its kind, up to the first signal,
    /// of either kind, whose attempt has ended (``attemptHasEnded``), or until `visit` returns
    /// `false`. `across` is the innermost signal of the other kind in the same scope: the two
    /// chains are read in one order, innermost first, by ``depth``, so that an ended attempt of
    /// the other kind inside a signal stops the walk before it. Failure paths only.
    private static func walkRunning(
        from innermost: TimeLimitSignal?, across: TimeLimitSignal?, _ visit: (TimeLimitSignal) -> Bool
    ) {
        var signal = innermost
        var other = across
        while let current = signal {
            // The signals of the other kind made inside this one, innermost first.
            while let inside = other, inside.depth > current.depth {
                if inside.attemptHasEnded { return }
                other = inside.enclosing
            }
            if current.attemptHasEnded || !visit(current) { return }
            signal = current.enclosing
        }
    }

    /// Whether the operation of this signal's attempt has ended (returned or thrown, a
    /// cancellation among the throws): ``complete()`` ran, whoever settled the signal, or the
    /// attempt had ended before a hedging race superseded it (``fire()``).
    ///
    /// Read on failure paths only, by a task that holds this signal in its scope: a task inside
    /// the attempt reads `false`, a task the attempt's operation started and that outlived it
    /// reads `true`.
    var attemptHasEnded: Bool {
        self.isCompleted || self.returnedAfterSettled.load(ordering: .acquiring)
    }
}

/// The clock a ``TimeLimitSignal`` is measured on, through the one reference that holds it:
/// a signal holding the clock itself would count several references for every call.
enum TimeLimitClock: Sendable {
    /// A ``Timeout``'s: its deadline watcher's.
    case watcher(DeadlineWatcher)
    /// A ``RetryPolicy``'s per-attempt limit: the policy's.
    case policy(RetryPolicy)
    /// An attempt of a ``Hedging`` call: the strategy's.
    case hedging(Hedging)

    /// The clock.
    var elapsedClock: ElapsedClock {
        switch self {
        case .watcher(let watcher): watcher.clock
        case .policy(let policy): policy.clock
        case .hedging(let hedging): hedging.watcher.clock
        }
    }
}

/// An attempt of a hedged call, as its caller's cancellation handler sees it.
///
/// Its layout is known when the package is compiled: the task is held as an existential
/// (`AttemptTask`), not as `UnsafeCurrentTask`, whose layout the standard library keeps to
/// itself. An `UnsafeCurrentTask` stored in this enum made every copy, test and assignment
/// of it a call into the run time's generic enum functions, and the layout of the
/// ``TimeLimitSignal`` holding it one computed at run time (Docs/Benchmarks.md, "The first
/// attempt's cancellation slot", has the measurements).
private enum HedgedAttemptTask {
    /// The attempt has not started its operation yet.
    case notStarted
    /// The attempt runs its operation.
    case running(any AttemptTask)
    /// The caller was cancelled before the attempt started: it starts cancelled.
    case cancelledEarly
    /// The attempt's operation returned.
    case ended
}

/// A task the caller's cancellation handler may cancel: a hedged attempt's own
/// `UnsafeCurrentTask`.
///
/// `UnsafeCurrentTask` is not `Sendable`, since most of what it offers may be used only by
/// the task itself; `cancel()`, the one thing used here, is also on `Task` and may be called
/// from any thread, as the standard library documents. Each copy holds a reference to the
/// task, which keeps it alive as long as the copy lives (the timeout's expiry notes the same
/// reliance). The one-word value fits in the existential's inline buffer: no allocation.
private protocol AttemptTask {
    /// Cancels the task.
    func cancel()
}

extension UnsafeCurrentTask: AttemptTask {}
