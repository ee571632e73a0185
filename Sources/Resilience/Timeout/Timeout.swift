/// Ends an operation that takes longer than a limit, total or per attempt, at any nesting.
///
/// The operation runs in a task of its own, started on the caller's actor, so a
/// `@MainActor` caller keeps its closure as it is. The task starts at once, on the
/// caller's thread when the caller already runs there; an operation that returns
/// before it first suspends hands its outcome straight back, with no hop. Its
/// deadline is watched on the injected clock by one watcher task that all calls
/// through this timeout (and its copies) share, not by a timer task per call. When
/// the deadline passes first, the timeout first records that its own limit,
/// not the caller, ends the operation (so a ``CircuitBreaker`` inside counts it
/// as a failure, and a caller's cancellation as nothing), then cancels the
/// operation and throws ``TimeoutError``, which reports the request as
/// ``RequestDelivery/mayHaveBeenSent`` and carries the declared idempotency.
/// An operation that fails after the limit fired has its error kept in the
/// ``TimeoutError``'s ``TimeoutError/operationError``, where the rules read what
/// it says about the request (a `POST`, a 429, a retry-after hint). The earliest
/// deadline decides among nested limits: the time-out of a limit nested in the
/// operation whose deadline came no later (a clock that passed both in one move)
/// is passed on as it is, also inside an error of the app's, under
/// `NSUnderlyingErrorKey`, or bridged to `NSError` (see <doc:Timeouts>). The other
/// way round, the time-out of a nested limit whose deadline came later, but which ended
/// the operation after this limit's deadline had passed, does not decide either: this
/// limit claims the call with its own ``TimeoutError``, though its watcher had not woken yet.
/// So does a ``RetryPolicy`` nested in the operation that failed after this limit's deadline
/// had passed: it starts no new attempt and sleeps no backoff, and the call ends with this
/// limit's ``TimeoutError``, as when the watcher woke first.
///
/// Cancellation is cooperative: the timeout waits for the cancelled operation to
/// return, as structured concurrency does everywhere, so an operation that
/// ignores cancellation is not cut short. The limit and the caller's cancellation
/// reach the operation from its start on, also while it still runs synchronously
/// on the caller's thread before its first `await`: work there that checks
/// `Task.isCancelled` or calls `Task.checkCancellation()` stops at the deadline.
/// Whichever comes first, the deadline or the caller's cancellation, ends the call:
/// a caller that cancels first gets the operation's own error, never a
/// ``TimeoutError``, however long the cancelled operation takes to return. A caller
/// that cancels after the deadline passed gets the ``TimeoutError``, also before the
/// watcher has woken to end the call: the cancellation reads the clock as it comes.
///
/// Where it sits decides what it limits: outside a ``RetryPolicy`` it bounds
/// the whole call, waits included; inside, each attempt.
///
/// ```swift
/// let timeout = try Timeout(.seconds(10))
/// let profile = try await timeout.execute {
///     try await api.profile()  // runs on the caller's actor; no @Sendable needed
/// }
/// ```
public struct Timeout: Sendable {
    /// The name reported in errors and events.
    public var name: String { self.settings.name }
    /// The time an operation is allowed.
    public var duration: Duration { self.settings.duration }

    var watcher: DeadlineWatcher { self.settings.watcher }
    var observer: (any StrategyObserver)? { self.settings.observer }

    /// Everything the timeout holds, behind one reference: a pipeline copies its stages
    /// into each call's operation, and a copy of a ``Timeout`` is then one retain
    /// (see ``TimeoutSettings``).
    let settings: TimeoutSettings

    /// Creates a timeout.
    ///
    /// - Parameters:
    ///   - duration: The time an operation is allowed; greater than zero and at most about 146 years.
    ///   - name: The name reported in errors and events.
    ///   - observer: Receives a ``StrategyEvent/Kind/timedOut`` event each time the limit ends an
    ///     operation and decides the call: none when a limit enclosing it on the same clock had an
    ///     earlier deadline that had passed, which then reports the call's time-out (see <doc:Timeouts>).
    ///   - clock: The clock the limit is measured on.
    /// - Throws: ``ConfigurationError`` naming `duration` when it is zero, negative or huge.
    public init(
        _ duration: Duration,
        name: String = "timeout",
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.requirePositive(duration, "duration")
        try ConfigurationError.requireAtMostResilienceMaximum(duration, "duration")
        self.settings = TimeoutSettings(
            name: name, duration: duration, observer: observer, watcher: DeadlineWatcher(clock: ElapsedClock(clock)))
    }

    /// A timeout whose deadlines `watcher` watches; for tests that choose how it sleeps.
    init(_ duration: Duration, watcher: DeadlineWatcher) {
        self.settings = TimeoutSettings(name: "timeout", duration: duration, observer: nil, watcher: watcher)
    }

    /// Runs `operation`, ending it with ``TimeoutError`` if it outlives ``duration``.
    ///
    /// A call declared not idempotent here tells the policies around it when it fails:
    /// the ``TimeoutError`` reports the declaration, and an operation's own failure that
    /// does not prove its request never left is reported to them as a policy that stops
    /// on it reports it (see ``NestedRetries``), so they do not send the request again.
    ///
    /// - Parameters:
    ///   - idempotency: Whether the call may run twice, reported by the error
    ///     and handed down to the calls nested inside; defaults to what an
    ///     enclosing call declared.
    ///   - operation: The call to limit. It starts on the caller's actor.
    /// - Returns: The operation's value.
    /// - Throws: ``TimeoutError`` when the limit ended the operation, holding the
    ///   operation's own error when it failed after the limit fired; otherwise the
    ///   operation's own error, unchanged, also when it is, or wraps, the time-out
    ///   of a limit nested in the operation whose deadline came no later than this one's.
    @inlinable
    public nonisolated(nonsending) func execute<Value: Sendable>(
        idempotency: Idempotency? = nil,
        @_inheritActorContext operation: sending @escaping @isolated(any) () async throws -> Value
    ) async throws -> Value {
        // `@_inheritActorContext` is the attribute `Task.init` uses: a closure
        // written on the main actor stays on the main actor when it reaches the task.
        // The parameter is `sending` and is sent exactly once, to the task; the compiler
        // cannot follow it through the call that starts the task, hence the unsafe local.
        nonisolated(unsafe) let operation = operation
        return try await self.run(
            SentOperation(body: operation), on: operation.isolation, idempotency: idempotency,
            calling: { try await $0.run() })
    }

    /// Runs `operation` in a task isolated to `isolation`, ending it with ``TimeoutError``
    /// if it outlives ``duration``: ``execute(idempotency:operation:)``, and the pipeline's
    /// stage, which hands in the rest of the pipeline and its caller's isolation, so that
    /// the stages inside run where the caller runs, with no closure made for them.
    ///
    /// `call` runs the operation in the task. The caller writes it where `Operation` is
    /// known, capturing nothing: it costs no allocation, and the stages inside run as code
    /// specialized for them.
    ///
    /// Inlinable, with ``start(_:_:on:scope:limit:)`` and ``attempt(_:_:limit:start:)``: the
    /// part that depends on the operation's value type is specialized in the caller's module,
    /// where, compiled once for every type, it looked up the generic metadata of its task, its
    /// continuation and its results on every call. What does not depend on the value type (the
    /// call's scope and signal, the watcher, the failure path) stays out of line, in
    /// ``TimeLimit``.
    @inlinable
    nonisolated(nonsending) func run<Operation: PipelineOperation>(
        _ operation: Operation,
        on isolation: (any Actor)?,
        idempotency: Idempotency?,
        calling call: nonisolated(nonsending) @escaping @Sendable (Operation) async throws -> Operation.Value
    ) async throws -> Operation.Value {
        let (scope, limit) = TimeLimit.open(self, declaring: idempotency)
        let result = await Self.start(operation, call, on: isolation, scope: scope, limit: limit)
        switch result {
        case .success(let value):
            // A call declared here that may not run twice reached the dependency: the limits around it hear so.
            if idempotency != nil { scope.noteSucceeded() }
            return value
        case .failure(let error):
            throw limit.failure(error, of: self, declaring: idempotency, scope: scope)
        }
    }

    /// Starts the task that runs `operation` on `isolation` (the main actor for a
    /// main-actor closure), and runs it there at once, up to its first suspension;
    /// returns the task, and the operation's outcome if it returned before it first
    /// suspended.
    ///
    /// Running it at once (`Task.immediate`) spares the task's first trip through the
    /// executor: no enqueue and no thread woken to start it. This function is isolated
    /// to `isolation`, so the operation starts there in every case: on the caller's
    /// thread when the caller is already there (a main-actor closure from the main
    /// actor, a nonisolated one from a nonisolated caller), otherwise after the hop
    /// into this function. Where `Task.immediate` is missing (Apple systems before
    /// their 2026 releases) the task is enqueued as a plain `Task`.
    ///
    /// An operation that returns before it first suspends hands its outcome over
    /// through the continuation this function waits on, which is then resumed before
    /// it is awaited: no suspension, and no wait for the task's result, which from an
    /// actor would leave the actor and come back. Otherwise this function resumes the
    /// continuation itself, with no outcome, once the task has suspended; the signal
    /// decides which of the two does, once.
    ///
    /// The task inherits `scope` from the binding around its creation. The binding is
    /// made here, synchronously: an `async` binding's closure would leave the caller's
    /// actor and come back, two hops on the main actor.
    ///
    /// The caller's cancellation handler is installed here, before the task starts, and
    /// stays until its outcome is in: it cancels the task through the registration the
    /// task makes as it starts (see ``TimeLimit``). Here, not in the nonisolated core:
    /// a closure written in a `nonisolated(nonsending)` function is isolated to no actor,
    /// so from the main actor the handler's closure would leave it and come back. A
    /// caller cancelled before this point, during the hop to `isolation` included, finds
    /// the handler run at once, and the task starts cancelled.
    @inlinable
    static func start<Operation: PipelineOperation>(
        _ operation: Operation,
        _ call: nonisolated(nonsending) @escaping @Sendable (Operation) async throws -> Operation.Value,
        on isolation: isolated (any Actor)?,
        scope: CallScope,
        limit: TimeLimit
    ) async -> Result<Operation.Value, any Error> {
        await withTaskCancellationHandler {
            var started: Task<Operation.Value, any Error>?
            let early = await withUnsafeContinuation(isolation: isolation) {
                (start: UnsafeContinuation<Result<Operation.Value, any Error>?, Never>) in
                started = CallScope.handedDown.withValue(scope) {
                    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                        Task.immediate {
                            _ = isolation  // captured, so the task starts on `isolation`
                            return try await Self.attempt(operation, call, limit: limit, start: start)
                        }
                    } else {
                        Task {
                            _ = isolation
                            return try await Self.attempt(operation, call, limit: limit, start: start)
                        }
                    }
                }
                if limit.closeStart() { start.resume(returning: nil) }
            }
            // The operation returned before it first suspended: no wait for the task's result.
            if let early { return early }
            return await started!.result
        } onCancel: {
            limit.callerCancelled()
        }
    }

    /// The body of the task that runs `operation`.
    ///
    /// Before the operation starts, it registers the deadline with the task itself, so
    /// that the limit, and the caller's cancellation, can cancel the task from the first
    /// instruction of the operation on, while it still runs synchronously on the caller's
    /// thread. As soon as the operation returns, it marks the signal completed (a limit
    /// that passes later leaves the call alone) and withdraws the registration, so that
    /// nothing cancels the task once it is done; then it hands the outcome to `start` if
    /// the caller still waits there.
    @inlinable
    nonisolated(nonsending) static func attempt<Operation: PipelineOperation>(
        _ operation: Operation,
        _ call: nonisolated(nonsending) @Sendable (Operation) async throws -> Operation.Value,
        limit: TimeLimit,
        start: UnsafeContinuation<Result<Operation.Value, any Error>?, Never>
    ) async throws -> Operation.Value {
        let registration = limit.registerCurrentTask()
        let outcome: Result<Operation.Value, any Error>
        do {
            outcome = .success(try await call(operation))
        } catch {
            outcome = .failure(error)
        }
        limit.operationReturned(registration)
        if limit.handOverAtStart() { start.resume(returning: outcome) }
        return try outcome.get()
    }
}

/// One call's time limit, as the task that runs the operation and the caller's
/// cancellation handler see it: its deadline on its watcher, and its signal.
///
/// Its methods are the part of a ``Timeout`` call that does not depend on the operation's
/// value type, kept out of line so that neither the watcher nor the signal is exposed to
/// the inlinable core.
@usableFromInline
struct TimeLimit: Sendable {
    let watcher: DeadlineWatcher
    /// Elapsed time on the watcher's clock by which the operation must return.
    let deadline: Duration
    let signal: TimeLimitSignal

    /// Opens a call through `timeout`: the current scope with a new signal added, and
    /// `idempotency` declared when not `nil`; and the call's limit, due ``Timeout/duration``
    /// from now.
    @usableFromInline
    static func open(_ timeout: Timeout, declaring idempotency: Idempotency?) -> (CallScope, TimeLimit) {
        let watcher = timeout.watcher
        let deadline = watcher.now() + timeout.duration
        // The signal knows the deadline too: a policy nested in the call that would try again
        // once it has passed ends the call for this limit instead (see `TimeLimitSignal`).
        var (scope, signal) = CallScope.limited(until: deadline, on: .watcher(watcher))
        if let idempotency { scope.declare(idempotency) }
        return (scope, TimeLimit(watcher: watcher, deadline: deadline, signal: signal))
    }

    /// The error a call through `timeout` that failed with `error` throws: `error` itself
    /// unless this limit claimed the call, or when `error` is the time-out of a limit nested
    /// in the call that came first (see `TimeLimitEnd`); otherwise the ``TimeoutError`` that
    /// reports it, after telling the observer.
    @usableFromInline
    func failure(_ error: any Error, of timeout: Timeout, declaring idempotency: Idempotency?, scope: CallScope)
        -> any Error
    {
        // Fired only when the limit claimed the call before the operation returned and
        // before the caller was cancelled: an operation that failed on its own first, or
        // that winds down after its caller gave up, reports its own error (save the nested
        // limit's end below).
        // A limit nested in the operation whose deadline came no later ended it, though this
        // one fired too (a clock that passed both deadlines in one move wakes them in no set
        // order): that limit decided, and its error goes on as it is, with no event here.
        // So did a policy nested in it that stopped at its own deadline, which came no later.
        // A limit nested in the operation whose deadline came later, but which ended it after
        // this one's had passed, woke first (a clock that passed both in one move): this limit
        // came first and claims the call, as its watcher would have had the clock stepped.
        // So does a policy nested in it that stopped at its own deadline, due later, after this
        // one's had passed, its wait waking before this watcher.
        // Only an error that is such a limit's end: a value returned late stays returned.
        let clock = self.watcher.clock
        let claimed = self.signal.hasFired || self.signal.cameFirst(before: error, deadline: self.deadline, on: clock)
        guard claimed, !self.signal.nestedLimitCameFirst(error, deadline: self.deadline, on: clock) else {
            // A policy around a call declared here runs outside the declaration: it hears
            // of it here. The limit's own error below reports it, as its request's idempotency.
            NestedRetryLedger.recordFailure(error, ofCallDeclaring: idempotency)
            // So does it of a call in the operation that may not run twice and succeeded before it failed.
            NestedRetryLedger.recordFailure(error, ofAttemptUnder: self.signal)
            return error
        }
        // The operation's own error came after the limit fired: kept, so that the rules
        // still hear what it says (a `POST`, a 429), unless it is the limit's cancellation.
        let late = LateOperationError.kept(error)
        let timeoutError = TimeoutError(
            timeoutName: timeout.name, timeout: timeout.duration,
            requestIdempotency: LateOperationError.idempotency(
                self.signal.reportedIdempotency(declared: scope.idempotency), tightenedBy: late),
            operationError: late, operationErrorAge: late.flatMap { self.signal.takeLateErrorAge(of: $0) },
            earlierRequestMayHaveLeft: self.signal.sawARequestLeave,
            limitEnd: TimeLimitEnd(clock: self.watcher.clock, deadline: self.deadline))
        // A limit enclosing this one whose deadline came earlier had passed it: that limit came
        // first and claims the call, reporting its own time-out, as it would have had the clock
        // stepped (it would have cancelled the operation before this deadline came, and this
        // limit would have reported nothing). One event for the call, from the limit that decided.
        // Not a limit around an attempt this call's task outlived (a task that attempt started):
        // that limit cancels nothing here, and this time-out is reported here or nowhere.
        if !self.signal.enclosingLimitCameFirst(deadline: self.deadline, on: clock, across: scope.supersessions) {
            timeout.observer?.observe(StrategyEvent(strategyName: timeout.name, kind: .timedOut, error: timeoutError))
        }
        return timeoutError
    }

    /// Registers the deadline of the running attempt, the current task; returns the registration.
    ///
    /// A caller cancelled before this (during the hop to the operation's start, say)
    /// left no registration to cancel through: the attempt cancels itself instead, before
    /// the operation starts.
    @usableFromInline
    func registerCurrentTask() -> UInt64 {
        withUnsafeCurrentTask { task in
            let registration = self.watcher.register(self.deadline, TimeoutExpiry(signal: self.signal, attempt: task))
            if !self.signal.publish(registration) { task?.cancel() }
            return registration
        }
    }

    /// The operation returned: marks the signal completed, so that a limit that passes
    /// later leaves the call alone, and withdraws `registration`, so that nothing cancels
    /// the task once it is done.
    @usableFromInline
    func operationReturned(_ registration: UInt64) {
        self.signal.complete()
        self.watcher.withdraw(registration)
    }

    /// Claims the right to hand the outcome to the caller as it starts the task (see
    /// ``TimeLimitSignal/handOverAtStart()``).
    @usableFromInline
    func handOverAtStart() -> Bool { self.signal.handOverAtStart() }

    /// Closes the window in which the task hands its outcome over at its start (see
    /// ``TimeLimitSignal/closeStart()``).
    @usableFromInline
    func closeStart() -> Bool { self.signal.closeStart() }

    /// The caller was cancelled: cancels the running attempt through its registration,
    /// or has it start cancelled. An attempt that already returned is left alone.
    ///
    /// The signal is settled first, by the watcher's clock read now, at the cancellation.
    /// When the deadline has not passed, it is settled for the caller: the registration stays
    /// with the watcher until the attempt returns, and a deadline that passes while the
    /// cancelled operation winds down (awaiting its cleanup, say) must not claim the call,
    /// or the caller's cancellation would come out as a ``TimeoutError`` that a breaker
    /// counts and a fallback answers. When the deadline has passed, the limit claims the
    /// call here, as its watcher would have a moment earlier had it woken in time (on a test
    /// clock, it wakes only once the clock's advance has resumed its sleep; on the system's
    /// clocks, a little after the deadline): a deadline that passed before the caller gave
    /// up stays a time-out, whether or not the watcher has run its expiry yet. A limit that
    /// claimed the call before the caller gave up keeps it.
    ///
    /// It runs in the caller's cancellation handler, where no lock of the package is held,
    /// so reading the clock there is safe.
    @usableFromInline
    func callerCancelled() {
        if self.watcher.now() >= self.deadline {
            _ = self.signal.claim()
        } else {
            self.signal.yieldToCaller()
        }
        guard let registration = self.signal.cancelAttempt() else { return }
        self.watcher.cancel(registration)
    }
}

/// The operation handed to ``Timeout/execute(idempotency:operation:)``, as the
/// pipeline operation its task runs: no closure is made around it.
@usableFromInline
struct SentOperation<Value: Sendable>: PipelineOperation {
    /// The caller's closure; sent once, to the task that calls it, hence unchecked.
    @usableFromInline nonisolated(unsafe) let body: @isolated(any) () async throws -> Value

    @inlinable
    init(body: @escaping @isolated(any) () async throws -> Value) {
        self.body = body
    }

    @inlinable
    nonisolated(nonsending) func run() async throws -> Value {
        try await self.body()
    }
}

/// What the watcher does when a ``Timeout``'s limit passes: record that the limit,
/// not the caller, ends the operation, then cancel it.
///
/// It holds the task of the attempt it limits, so that it can cancel the attempt while
/// the attempt runs synchronously on the caller's thread, before any handle to its task
/// exists. The attempt withdraws the registration, and with it this expiry, before it
/// completes; a copy the watcher already took (the deadline came due) or a cancellation
/// handler took (the caller was cancelled) keeps the task alive until it is dropped, and
/// cancelling a task that has completed does nothing.
private struct TimeoutExpiry: DeadlineExpiry {
    let signal: TimeLimitSignal
    /// The attempt's task. `UnsafeCurrentTask` is not `Sendable`, since most of what it
    /// offers may be used only by the task itself; `cancel()`, the one thing used here,
    /// is also on `Task` and may be called from any thread, as the standard library
    /// documents. Each copy holds a strong reference to the task, which keeps the task
    /// alive as long as the copy lives: that is how the standard library implements the
    /// type (Swift 6.x), not a documented promise (its documentation says a stored
    /// reference does not affect the task's life cycle). A copy may be cancelled after
    /// the attempt withdrew its registration, outside the lock, so the code relies on it;
    /// Docs/DesignDecisions.md records the risk.
    nonisolated(unsafe) let attempt: UnsafeCurrentTask?

    func deadlineReached() {
        // Claimed before the cancellation, so a breaker inside counts a time-out; an
        // operation that already returned keeps its own outcome and is not cancelled. One
        // whose caller gave up first is cancelled without a claim, and so is one the caller's
        // cancellation handler claimed for the limit (the deadline had passed when the caller
        // gave up): that cancellation may have come after the watcher took this deadline as
        // due, when withdrawing it no longer reached the attempt, so it is passed on here.
        _ = self.signal.claim()
        guard !self.signal.isCompleted else { return }
        self.attempt?.cancel()
    }

    func callerCancelled() {
        self.attempt?.cancel()
    }
}
