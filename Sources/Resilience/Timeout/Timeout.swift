/// Ends an operation that takes longer than a limit, total or per attempt, at any nesting.
///
/// The operation runs in a task of its own, started on the caller's actor, so a
/// `@MainActor` caller keeps its closure as it is. Its deadline is watched on the
/// injected clock by one watcher task that all calls through this timeout (and
/// its copies) share, not by a timer task per call. When the deadline passes
/// first, the timeout first records that its own limit,
/// not the caller, ends the operation (so a ``CircuitBreaker`` inside counts it
/// as a failure, and a caller's cancellation as nothing), then cancels the
/// operation and throws ``TimeoutError``, which reports the request as
/// ``RequestDelivery/mayHaveBeenSent`` and carries the declared idempotency.
///
/// Cancellation is cooperative: the timeout waits for the cancelled operation to
/// return, as structured concurrency does everywhere, so an operation that
/// ignores cancellation is not cut short.
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
    public let name: String
    /// The time an operation is allowed.
    public let duration: Duration

    let watcher: DeadlineWatcher
    let observer: (any StrategyObserver)?

    /// Creates a timeout.
    ///
    /// - Parameters:
    ///   - duration: The time an operation is allowed; greater than zero and at most about 146 years.
    ///   - name: The name reported in errors and events.
    ///   - observer: Receives a ``StrategyEvent/Kind/timedOut`` event each time the limit ends an operation.
    ///   - clock: The clock the limit is measured on.
    /// - Throws: ``ConfigurationError`` naming `duration` when it is zero, negative or huge.
    public init(
        _ duration: Duration,
        name: String = "timeout",
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.requirePositive(duration, "duration")
        try ConfigurationError.require(
            duration <= .resilienceMaximum, "duration", duration, "at most \(Duration.resilienceMaximum)")
        self.duration = duration
        self.name = name
        self.observer = observer
        self.watcher = DeadlineWatcher(clock: ElapsedClock(clock))
    }

    /// A timeout whose deadlines `watcher` watches; for tests that choose how it sleeps.
    init(_ duration: Duration, watcher: DeadlineWatcher) {
        self.duration = duration
        self.name = "timeout"
        self.observer = nil
        self.watcher = watcher
    }

    /// Runs `operation`, ending it with ``TimeoutError`` if it outlives ``duration``.
    ///
    /// - Parameters:
    ///   - idempotency: Whether the call may run twice, reported by the error
    ///     and handed down to the calls nested inside; defaults to what an
    ///     enclosing call declared.
    ///   - operation: The call to limit. It starts on the caller's actor.
    /// - Returns: The operation's value.
    /// - Throws: ``TimeoutError`` when the limit ended the operation; otherwise
    ///   the operation's own error, unchanged.
    public nonisolated(nonsending) func execute<Value: Sendable>(
        idempotency: Idempotency? = nil,
        @_inheritActorContext operation: sending @escaping @isolated(any) () async throws -> Value
    ) async throws -> Value {
        // `@_inheritActorContext` is the attribute `Task.init` uses: a closure
        // written on the main actor stays on the main actor when it reaches the task.
        var (scope, signal) = CallScope.limited()
        if let idempotency { scope.idempotency = idempotency }
        let declared = scope.idempotency
        let deadline = self.watcher.now() + self.duration
        // The parameter is `sending` and is sent exactly once, to the task; the compiler
        // cannot follow it through the call that starts the task, hence the unsafe local.
        nonisolated(unsafe) let operation = operation
        let task = await Self.start(on: operation.isolation, scope: scope, signal: signal, operation)
        // No timer task per call: the shared watcher claims the signal, then cancels the task.
        let registration = self.watcher.register(deadline, TimeoutExpiry(signal: signal, task: task))
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        self.watcher.withdraw(registration)
        switch result {
        case .success(let value):
            return value
        case .failure(let error):
            // Fired only when the limit claimed the call before the operation returned:
            // an operation that failed on its own first reports its own error.
            guard signal.hasFired else { throw error }
            let timeout = TimeoutError(timeoutName: self.name, timeout: self.duration, requestIdempotency: declared)
            self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .timedOut, error: timeout))
            throw timeout
        }
    }

    /// Starts the task that runs `operation` on the operation's own actor (the main
    /// actor for a main-actor closure), so it starts there without a hop.
    ///
    /// The task inherits `scope` from the binding around its creation. The binding is
    /// made here, synchronously: an `async` binding's closure would leave the caller's
    /// actor and come back, two hops on the main actor. The task marks `signal` completed
    /// as soon as the operation returns, before its result is published: a watcher that
    /// looks after that finds the call settled and leaves it alone.
    private static func start<Value: Sendable>(
        on isolation: isolated (any Actor)?,
        scope: CallScope,
        signal: TimeLimitSignal,
        _ operation: sending @escaping @isolated(any) () async throws -> Value
    ) -> Task<Value, any Error> {
        nonisolated(unsafe) let operation = operation  // sent once, to the task
        return CallScope.$current.withValue(scope) {
            Task {
                _ = isolation  // captured, so the task starts on the operation's actor
                defer { signal.complete() }
                return try await operation()
            }
        }
    }
}

/// What the watcher does when a ``Timeout``'s limit passes: record that the limit,
/// not the caller, ends the operation, then cancel it.
private struct TimeoutExpiry<Value: Sendable>: DeadlineExpiry {
    let signal: TimeLimitSignal
    let task: Task<Value, any Error>

    func deadlineReached() {
        // Claimed before the cancellation, so a breaker inside counts a time-out; an
        // operation that already returned keeps its own outcome, and is not cancelled.
        guard self.signal.claim() else { return }
        self.task.cancel()
    }
}
