/// Runs an async operation again when it fails, with jittered exponential
/// backoff, a classifier that decides what is worth retrying, server
/// retry-after hints, an overall deadline and an optional shared retry budget.
///
/// Create one policy per dependency and share it among all the call sites and
/// tasks that talk to that dependency:
///
/// ```swift
/// let policy = try RetryPolicy(
///     maximumAttempts: 4,
///     backoff: .exponential(initial: .milliseconds(200), maximum: .seconds(10))
/// )
/// let profile = try await policy.execute { try await api.fetchProfile() }
/// ```
///
/// The operation runs in the caller's isolation: a `@MainActor` caller may touch
/// main-actor state inside it, and a call that succeeds never hops to another
/// executor. Only the failure path visits the policy's actor, which owns the
/// random generator and the counters.
///
/// What a call does after its operation throws, in order:
/// 1. The ``Rulebook``'s rules, which no classifier can change: a cancelled call
///    stops (``RetryStopReason/cancelled``), and so does a call inside a library time
///    limit (a ``Timeout``, an enclosing policy's `attemptTimeout`) whose deadline has
///    passed on its clock, also before the limit's timer has woken, as when the limit
///    cancelled it: the limit reports its time-out (see <doc:Timeouts>); an HTTP 429
///    anywhere in the error's chain stops (``RetryStopReason/tooManyRequests``), its hint
///    still reported;
///    a call that is not idempotent (see ``Idempotency``) stops once the request
///    may have reached the server (``RetryStopReason/notIdempotent``).
/// 2. A call given a ``CredentialRecovery`` recovers its credential after a
///    credential failure, and a call given a ``ConnectivityWait`` waits for the
///    network after an offline failure (at most ``ConnectivityWait/maximumWaits`` times,
///    after which an offline failure is judged as any other); either then tries again at
///    once, without spending an attempt (<doc:RecoveringCredentials>, <doc:WaitingForTheNetwork>).
///    A refresh that fails for now is retried with the backoff, each retry taking an attempt.
///    A failure a policy nested in the operation already retried to exhaustion
///    stops this one too (``RetryStopReason/retriedByInnerPolicy``; see
///    ``NestedRetries``), and an ``AdaptiveThrottle``'s local rejection stops it
///    (``RetryStopReason/throttled``).
/// 3. The classifier decides; `nil` falls back to ``DefaultRetryClassifier``.
/// 4. Out of attempts, a server hint above ``maximumRetryAfter``, a wait that would
///    pass the ``deadline`` (or an enclosing policy's), or an empty ``budget`` each stop the call.
/// 5. Otherwise it waits `max(jittered backoff, hint)` on the policy's clock and
///    tries again, unless an enclosing time limit's deadline has passed by then (as in 1);
///    cancellation during the wait ends the call at once (with
///    `CancellationError`, or with the failure it waited on when an enclosing time
///    limit of the library's cancelled it, so that the layers above learn what it said).
///
/// Inside an attempt of a ``Hedging`` call, a retry-after hint the hedged call heard from
/// another of its attempts counts as a hint of this call's too, for what is left of it: the
/// policy does not send again before it has passed, also when it heard of it while waiting,
/// or about to retry at once after a recovered credential or the network's return, and the
/// same limits stop it (``maximumRetryAfter``, the deadline). The outcome's
/// ``RetryOutcome/retryAfter`` reports it, and the observer hears of a wait it lengthened as
/// one more ``RetryObserver/retryScheduled(_:)`` event for the same attempt.
///
/// The error that ends a call is the operation's own, unchanged, so `catch`
/// clauses for your error types keep working (a failed credential recovery ends
/// it with the refresh's error instead). Use ``outcome(operation:)``
/// to also learn the number of attempts and the stop reason.
public final actor RetryPolicy {
    /// The name every event of this policy carries, such as the dependency it calls.
    public nonisolated let name: String
    /// The most attempts a call makes, counting the first.
    public nonisolated let maximumAttempts: Int
    /// The delay schedule before jitter.
    public nonisolated let backoff: Backoff
    /// The randomness added to each delay.
    public nonisolated let jitter: Jitter
    /// Decides which failures are worth retrying.
    public nonisolated let classifier: any RetryClassifier
    /// The time a call may spend across its attempts and waits, if limited.
    ///
    /// No attempt starts, and no wait begins, that would end past it. An attempt
    /// already running is cut short by it only when the call runs its attempts
    /// under a time limit (``execute(attemptTimeout:idempotency:operation:)``,
    /// whose limit is the shorter of the timeout and the time left), because
    /// otherwise the operation runs in the caller's own task, which the policy
    /// cannot stop without cancelling the caller.
    ///
    /// A caller that cancels after the deadline passed: when the running attempt's
    /// limit was the time left before the deadline, the limit ended the attempt first,
    /// even if its timer had not woken yet, so the call ends with ``AttemptTimeoutError``
    /// and ``RetryStopReason/deadlineExceeded``. An attempt without a time limit is not
    /// ended by the deadline, so a cancellation while it runs past the deadline is the
    /// caller's: the attempt's own outcome, and ``RetryStopReason/cancelled``. No wait
    /// (before a retry, for a refresh of a credential, between refresh retries, for the
    /// network) lasts past the deadline, so a cancellation during a wait is the caller's
    /// too, unless the clock jumped past the deadline before the caller cancelled: the
    /// deadline passed first, and the call stops with ``RetryStopReason/deadlineExceeded``
    /// and the error it would have stopped with had the wait woken first (the failure it
    /// waited to retry; the failure that asked for the refresh or the network), whether or
    /// not the wait has woken.
    /// A library time limit around the call (a ``Timeout``, an enclosing policy's
    /// `attemptTimeout`) that a clock passed in the same move, and that cut the wait short,
    /// passes that failure on when this deadline came no later than its own; when its own came
    /// first, it claims the call, also if its timer had not woken yet (see <doc:Timeouts>).
    ///
    /// A deadline given beyond the package's longest duration (about 146 years) is kept as
    /// that longest, as ``configuration`` reads it back.
    public nonisolated let deadline: Duration?
    /// The longest server-requested wait the policy will honour; a longer hint stops the call.
    ///
    /// A limit given beyond the package's longest duration (about 146 years) is kept as that
    /// longest, which every hint is cut to (see ``ErrorHints/retryAfter(of:)``).
    public nonisolated let maximumRetryAfter: Duration
    /// The token bucket shared by every call through this policy, if any.
    public nonisolated let budget: RetryBudget?
    /// Receives attempt, retry and completion events, if set.
    public nonisolated let observer: (any RetryObserver)?
    /// Whether this policy retries a failure a policy nested inside it already retried to exhaustion.
    public nonisolated let nestedRetries: NestedRetries
    /// The client-side adaptive throttle every attempt goes through, if set.
    ///
    /// Each attempt, the first and every retry, asks the throttle before it is sent
    /// and counts as one request; the outcome counts as accepted or not as
    /// ``AdaptiveThrottle/record(_:)`` says. An attempt the throttle rejects is not
    /// sent, and the call ends at once with ``AdaptiveThrottleRejection`` and
    /// ``RetryStopReason/throttled`` (after the backoff that preceded a retry, no
    /// further wait, no budget spent), since retrying would defeat the throttle. Share one throttle among the policies
    /// and breakers that call one server side by side; do not give it to two layers
    /// nested in one another, which would ask it twice for one request.
    public nonisolated let throttle: AdaptiveThrottle?

    nonisolated let clock: ElapsedClock
    /// Watches the deadlines of the attempts run under ``execute(attemptTimeout:idempotency:operation:)``,
    /// on ``clock``, as a ``Timeout``'s watcher does its calls': one task for all of them.
    nonisolated let attemptWatcher: DeadlineWatcher
    /// Whether even a first-attempt success must read the clock, report to the observer, ask the
    /// throttle or hand its classifier's declaration down to nested calls.
    @usableFromInline nonisolated let needsFullPath: Bool
    /// The classifier's declaration that calls are not idempotent, which nested calls inherit;
    /// `nil` when the classifier declares nothing, or declares the calls idempotent.
    nonisolated let classifierDeclarationToHandDown: Idempotency?
    /// Whether every call hands a scope down to the calls nested in it: for the deadline, or
    /// for the classifier's declaration. Read as one flag, so that a call that does not never
    /// copies the optionals it derives from.
    nonisolated let handsDownScope: Bool
    /// Whether ``observer`` is set, read as one flag for the same reason.
    nonisolated let hasObserver: Bool
    private var generator: AnyRandomNumberGenerator
    private var counters = RetryStatistics()

    /// Creates a policy, validating every setting.
    ///
    /// Where the settings are known to be valid, ``init(name:configuration:classifier:budget:observer:nestedRetries:throttle:clock:generator:)``
    /// builds a policy without `try`: `RetryPolicy(configuration: .default)`.
    ///
    /// - Parameters:
    ///   - name: The name every event carries; defaults to `"default"`.
    ///   - maximumAttempts: Attempts per call, counting the first; at least 1. Defaults to 3,
    ///     the most Google's SRE guidance recommends.
    ///   - backoff: The delay schedule; defaults to ``Backoff/default``.
    ///   - jitter: The randomness on each delay; defaults to ``Jitter/full``.
    ///   - classifier: Decides retryability; `nil` answers fall back to ``DefaultRetryClassifier``.
    ///   - deadline: A limit on the whole call's attempts and waits; greater than zero. The
    ///     policy stops rather than start an attempt or a wait that would pass it; see ``deadline``.
    ///     One beyond about 146 years (the package's longest duration) counts as that longest.
    ///   - maximumRetryAfter: The longest server hint honoured; zero or more. Defaults to 60 s.
    ///     One beyond about 146 years counts as that longest.
    ///   - budget: A retry budget shared with other calls, or `nil` for none.
    ///   - observer: Receives events, or `nil`.
    ///   - nestedRetries: Whether to retry what an inner policy already retried to exhaustion;
    ///     defaults to ``NestedRetries/innermostLayer`` (do not).
    ///   - throttle: A client-side adaptive throttle every attempt goes through, shareable with
    ///     the policies and breakers that call the same server, or `nil` (the default) for none;
    ///     see ``throttle``.
    ///   - clock: The clock for waits and the deadline; inject a test clock in tests.
    ///   - generator: The randomness for jitter; inject a seeded one for repeatable schedules.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public init(
        name: String = "default",
        maximumAttempts: Int = 3,
        backoff: Backoff = .default,
        jitter: Jitter = .default,
        classifier: any RetryClassifier = DefaultRetryClassifier(),
        deadline: Duration? = nil,
        maximumRetryAfter: Duration = .seconds(60),
        budget: RetryBudget? = nil,
        observer: (any RetryObserver)? = nil,
        nestedRetries: NestedRetries = .innermostLayer,
        throttle: AdaptiveThrottle? = nil,
        clock: some Clock<Duration> = ContinuousClock(),
        generator: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) throws(ConfigurationError) {
        let configuration = try RetryPolicyConfiguration(
            maximumAttempts: maximumAttempts, backoff: backoff, jitter: jitter, deadline: deadline,
            maximumRetryAfter: maximumRetryAfter)
        self.init(
            name: name, configuration: configuration, classifier: classifier, budget: budget, observer: observer,
            nestedRetries: nestedRetries, throttle: throttle, clock: clock, generator: generator)
    }

    /// Creates a policy with the package defaults: 3 attempts, exponential backoff with full
    /// jitter, ``DefaultRetryClassifier``, retry-after hints honoured up to 60 s, no deadline,
    /// budget, observer or throttle, on the system's continuous clock.
    ///
    /// The defaults are valid, so this needs no `try`:
    ///
    /// ```swift
    /// let policy = RetryPolicy()
    /// ```
    ///
    /// It is the same as `RetryPolicy(configuration: .default)`; change any setting with
    /// ``init(name:maximumAttempts:backoff:jitter:classifier:deadline:maximumRetryAfter:budget:observer:nestedRetries:throttle:clock:generator:)``.
    public init() {
        self.init(configuration: .default)
    }

    /// Creates a policy from settings already validated; it cannot fail, so it does not throw.
    ///
    /// ```swift
    /// let policy = RetryPolicy(configuration: .default)
    /// let decoded = RetryPolicy(name: "inventory", configuration: settings, observer: metrics)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name every event carries; defaults to `"default"`.
    ///   - configuration: The attempts, backoff, jitter, deadline and longest honoured hint;
    ///     ``RetryPolicyConfiguration/default`` for the package defaults.
    ///   - classifier: Decides retryability; `nil` answers fall back to ``DefaultRetryClassifier``.
    ///   - budget: A retry budget shared with other calls, or `nil` for none.
    ///   - observer: Receives events, or `nil`.
    ///   - nestedRetries: Whether to retry what an inner policy already retried to exhaustion;
    ///     defaults to ``NestedRetries/innermostLayer`` (do not).
    ///   - throttle: A client-side adaptive throttle every attempt goes through, shareable with
    ///     the policies and breakers that call the same server, or `nil` (the default) for none;
    ///     see ``throttle``.
    ///   - clock: The clock for waits and the deadline; inject a test clock in tests.
    ///   - generator: The randomness for jitter; inject a seeded one for repeatable schedules.
    public init(
        name: String = "default",
        configuration: RetryPolicyConfiguration,
        classifier: any RetryClassifier = DefaultRetryClassifier(),
        budget: RetryBudget? = nil,
        observer: (any RetryObserver)? = nil,
        nestedRetries: NestedRetries = .innermostLayer,
        throttle: AdaptiveThrottle? = nil,
        clock: some Clock<Duration> = ContinuousClock(),
        generator: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.name = name
        self.maximumAttempts = configuration.maximumAttempts
        self.backoff = configuration.backoff
        self.jitter = configuration.jitter
        self.classifier = classifier
        self.deadline = configuration.deadline?.clampedToResilienceRange
        self.maximumRetryAfter = configuration.maximumRetryAfter.clampedToResilienceRange
        self.budget = budget
        self.observer = observer
        self.nestedRetries = nestedRetries
        self.throttle = throttle
        let elapsed = ElapsedClock(clock)
        self.clock = elapsed
        self.attemptWatcher = DeadlineWatcher(clock: elapsed)
        // Read once: a classifier's declaration is part of its configuration.
        let handedDown = classifier.declaredIdempotency.flatMap { $0.isIdempotent ? nil : $0 }
        self.classifierDeclarationToHandDown = handedDown
        self.handsDownScope = configuration.deadline != nil || handedDown != nil
        self.hasObserver = observer != nil
        self.needsFullPath =
            configuration.deadline != nil || observer != nil || throttle != nil || handedDown != nil
        self.generator = AnyRandomNumberGenerator(generator)
    }

    /// The attempts, backoff, jitter, deadline and longest honoured hint, as one value.
    ///
    /// Durations beyond the package's longest (about 146 years) read back cut to it.
    public nonisolated var configuration: RetryPolicyConfiguration {
        RetryPolicyConfiguration(
            uncheckedMaximumAttempts: self.maximumAttempts, backoff: self.backoff, jitter: self.jitter,
            deadline: self.deadline, maximumRetryAfter: self.maximumRetryAfter)
    }

    /// The counters so far.
    public var statistics: RetryStatistics {
        self.counters
    }

    // MARK: - Running operations

    /// Runs `operation`, retrying its failures as the policy allows.
    ///
    /// The call runs on the caller's executor from start to finish: a
    /// `nonisolated(nonsending)` function, it switches to no other executor on its
    /// way in or out, so a `@MainActor` caller's operation runs on the main actor
    /// and may touch its state.
    /// (A closure written inside a `nonisolated(nonsending)` function is an ordinary
    /// nonisolated closure here, and runs on the global concurrent executor.)
    ///
    /// The first attempt runs as a bare `try await operation()` would, even in a
    /// task that is already cancelled: the operation decides what cancellation
    /// means to it. Every wait and every retry checks for cancellation first, and a
    /// `CancellationError` is never retried. ``CircuitBreaker`` treats a cancelled
    /// task the same way.
    ///
    /// - Parameter operation: The work to attempt. It runs in the caller's isolation.
    /// - Returns: The operation's value from the first attempt that succeeds.
    /// - Throws: The error of the last attempt, unchanged (a ``CircuitBreakerOpenError``
    ///   retried to exhaustion comes as an equal error in a box of its own), or `CancellationError` when
    ///   the task was cancelled while waiting to retry, or as that wait ended (no retry goes out
    ///   once the caller has left), the last attempt's error when one of the library's time
    ///   limits enclosing the call cancelled it, so that the limit keeps it.
    @inlinable
    public nonisolated(nonsending) func execute<Value>(
        operation: () async throws -> Value
    ) async throws -> Value {
        // The fast path is kept tiny so that it inlines and specializes into the caller:
        // one flag test, the operation, and a budget refund. Everything else lives in
        // `retry(isolation:firstFailure:operation:)`. The actor is `final` for the same
        // reason: Swift 6.3 does not inline a non-final actor's methods into other
        // modules, which costs an executor switch per call.
        guard self.canTakeFastPath else {
            return try await self.retry(isolation: #isolation, firstFailure: nil, operation: operation)
        }
        let mark = NestedRetryLedger.mark
        let value: Value
        do {
            value = try await operation()
        } catch {
            return try await self.retry(
                isolation: #isolation, firstFailure: FirstAttemptFailure(error, ledgerMark: mark), operation: operation)
        }
        self.budget?.recordSuccess()
        return value
    }

    /// The loop of ``execute(operation:)``, for a policy that cannot take the fast path or
    /// after the fast path's first attempt failed; the value comes back through the
    /// operation, which stores it.
    ///
    /// The loop itself is `retryLoop(isolation:firstFailure:operation:)`, out of line and not
    /// generic: compiled once for a `Void` operation, it looks up no generic metadata per
    /// call, and the caller passes it the operation's context on its stack, as it is. (A
    /// generic loop looked up the metadata of the outcome and result types on every call;
    /// an inlinable one, specialized with the caller's closure, had the caller retain that
    /// closure's captures on the fast path too.)
    @inlinable
    func retry<Value>(
        isolation: isolated (any Actor)?,
        firstFailure: FirstAttemptFailure?,
        operation: () async throws -> Value
    ) async throws -> Value {
        var value: Value?
        try await self.retryLoop(isolation: isolation, firstFailure: firstFailure) { value = try await operation() }
        // The loop returns normally only after an attempt that succeeded, which stored its value.
        guard let value else { throw CancellationError() }
        return value
    }

    /// Runs `operation` as ``execute(operation:)`` does, and reports the whole outcome.
    ///
    /// Never throws: the operation's error, if the call failed, is in `result`. Like
    /// ``execute(operation:)``, it runs on the caller's executor, runs the first attempt
    /// even in a cancelled task, and checks for cancellation before every wait and retry.
    @inlinable
    public nonisolated(nonsending) func outcome<Value>(
        operation: () async throws -> Value
    ) async -> RetryOutcome<Value> {
        await self.run(isolation: #isolation, firstFailure: nil, options: .plain) { _ in try await operation() }
    }

    /// Runs `operation`, retrying its failures as the policy allows and as `idempotency` permits.
    ///
    /// A call that is not idempotent, such as a `POST` that places an order, is
    /// sent again only after a failure that proves it never reached the server
    /// (a refused connection, a breaker's rejection); a timeout, a dropped
    /// connection or any answer from the server, a 503 included, ends it with
    /// ``RetryStopReason/notIdempotent``. Policies nested inside the operation
    /// inherit the declaration.
    ///
    /// ```swift
    /// let receipt = try await policy.execute(idempotency: .notIdempotent) {
    ///     try await payments.charge(order)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - idempotency: Whether the operation may run twice with the same effect as once.
    ///   - operation: The work to attempt. It runs in the caller's isolation.
    /// - Returns: The operation's value from the first attempt that succeeds.
    /// - Throws: The error of the last attempt, unchanged, or `CancellationError`.
    @inlinable
    public nonisolated(nonsending) func execute<Value>(
        idempotency: Idempotency,
        operation: () async throws -> Value
    ) async throws -> Value {
        try await self.run(isolation: #isolation, firstFailure: nil, options: .valueOnly(declaring: idempotency)) { _ in
            try await operation()
        }.get()
    }

    /// Runs `operation` as ``execute(idempotency:operation:)`` does, and reports the whole outcome.
    @inlinable
    public nonisolated(nonsending) func outcome<Value>(
        idempotency: Idempotency,
        operation: () async throws -> Value
    ) async -> RetryOutcome<Value> {
        await self.run(isolation: #isolation, firstFailure: nil, options: .declaring(idempotency)) { _ in
            try await operation()
        }
    }

    /// Runs `operation` with a time limit on each attempt, retrying as the policy allows.
    ///
    /// An attempt that outlives `attemptTimeout` (or the time left before the
    /// ``deadline``, if sooner) is cancelled and fails with ``AttemptTimeoutError``.
    /// The request may have reached the server, so it is retried only when the
    /// call is idempotent (see ``Idempotency``). A ``CircuitBreaker`` inside the
    /// operation counts the timed-out attempt as a failure, although its task was
    /// cancelled: the library, not the caller, ended it.
    ///
    /// The cancelled attempt is waited for. If it still returns a value, that value
    /// is the attempt's; if it fails with an error of its own, the error is kept in
    /// ``AttemptTimeoutError/operationError``, and what it says about the request
    /// (a `POST`, a 429, a retry-after hint) holds for the retry decision.
    ///
    /// Whichever comes first, the limit or the caller's cancellation, ends the attempt.
    /// A caller that cancels before the limit passed ends it with the attempt's own error,
    /// however long the cancelled attempt takes to return. A caller that cancels after the
    /// limit passed, even before the limit's timer has woken, leaves it a time-out: the
    /// call ends with ``AttemptTimeoutError``, and stops for the reason the time-out gives
    /// (``RetryStopReason/exhausted`` with no attempt left, ``RetryStopReason/deadlineExceeded``
    /// past the ``deadline``), or ``RetryStopReason/cancelled`` where it would have been retried.
    /// A ``TimeoutError`` or ``AttemptTimeoutError`` from a limit inside the operation is read
    /// the same way wherever it sits in the failure's chain, wrapped or bridged to `NSError`.
    /// Nested limits follow the earliest deadline (see <doc:Timeouts>): an attempt that fails
    /// with the error of a limit inside it whose deadline came no later than the attempt's,
    /// as thrown or in any of those shapes, fails with that error, not a time-out of its own.
    ///
    /// The operation must be `Sendable` because each attempt runs in a task of its own,
    /// and it must respond to cancellation for the limit to take effect. It runs in the
    /// caller's isolation all the same: a closure written on the main actor is
    /// isolated to it (the way `Task.init`'s is), so it may touch the caller's state.
    /// Each attempt's task starts at once, as a ``Timeout``'s does: on the caller's thread
    /// when the caller runs where the operation is isolated (a main-actor closure from the
    /// main actor, a closure of a global actor from that actor), so no job queued on that
    /// actor runs between the call, or the decision to retry, and the attempt's start, and
    /// an attempt that returns before it first suspends hands its value back with no hop.
    /// The deadlines of all the attempts are watched by one task per policy, not a timer per attempt.
    ///
    /// - Parameters:
    ///   - attemptTimeout: The time each attempt may take; greater than zero. One beyond about
    ///     146 years (the package's longest duration) counts as that longest, as ``deadline`` does.
    ///   - idempotency: Whether the operation may run twice; `nil` inherits the enclosing
    ///     call's declaration, or takes the classifier's, or assumes idempotent.
    ///   - operation: The work to attempt, in a task of its own started at once in the caller's isolation.
    /// When an enclosing call's deadline has already passed, no attempt starts: the call
    /// fails with a ``LimiterRejectionError`` whose reason is
    /// ``LimiterRejectionError/Reason/noTimeLeft`` (nothing was sent, so a breaker around it
    /// counts nothing), its outcome's stop reason is ``RetryStopReason/deadlineExceeded`` with
    /// no attempt, and the observer hears of no call, as for an invalid `attemptTimeout`.
    ///
    /// - Throws: The error of the last attempt, unchanged; ``ConfigurationError`` without
    ///   running the operation when `attemptTimeout` is not greater than zero.
    public nonisolated(nonsending) func execute<Value: Sendable>(
        attemptTimeout: Duration,
        idempotency: Idempotency? = nil,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.outcome(attemptTimeout: attemptTimeout, idempotency: idempotency, operation: operation).get()
    }

    /// Runs `operation` with a time limit on each attempt and reports the whole outcome.
    public nonisolated(nonsending) func outcome<Value: Sendable>(
        attemptTimeout: Duration,
        idempotency: Idempotency? = nil,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async -> RetryOutcome<Value> {
        guard attemptTimeout > .zero else {
            // No attempt could ever finish in zero time: fail at once, running nothing.
            let error = ConfigurationError(
                setting: "attemptTimeout", value: attemptTimeout.exactDescription, accepted: "greater than zero")
            return RetryOutcome(
                result: .failure(error), attempts: 0, stopReason: .notRetryable, retryAfter: nil, elapsed: .zero)
        }
        if let left = self.timeLeft(start: self.clock.now()), left <= .zero {
            // Only an enclosing call's deadline can have passed already: no attempt could start.
            let refusal = LimiterRejectionError(limiterName: self.name, reason: .noTimeLeft)
            return RetryOutcome(
                result: .failure(refusal), attempts: 0, stopReason: .deadlineExceeded, retryAfter: nil, elapsed: .zero)
        }
        let name = self.name
        let timeout = attemptTimeout.clampedToResilienceRange
        let declared =
            idempotency ?? CallScope.current.handedDownIdempotency(over: self.classifier.declaredIdempotency)
        return await self.run(isolation: #isolation, firstFailure: nil, options: .declaring(idempotency)) { deadline in
            let limit = deadline.timeLeft().map { Swift.min($0, timeout) } ?? timeout
            // The deadline passed between the check before this attempt and now: the attempt
            // does not start, and the call stops at the deadline before the next one.
            guard limit > .zero else { throw LimiterRejectionError(limiterName: name, reason: .noTimeLeft) }
            return try await Self.withTimeLimit(limit, idempotency: declared, policy: self, operation: operation)
        }
    }

    // MARK: - Fast path helpers

    /// Whether a call can run its first attempt without the loop: no deadline and no observer.
    ///
    /// No cancellation check: the first attempt runs as a bare call would (see ``execute(operation:)``).
    @inlinable
    nonisolated var canTakeFastPath: Bool {
        !self.needsFullPath
    }

    /// The retry loop of ``execute(operation:)``, then the error, if the call failed.
    @usableFromInline
    func retryLoop(
        isolation: isolated (any Actor)?,
        firstFailure: FirstAttemptFailure?,
        operation: nonisolated(nonsending) () async throws -> Void
    ) async throws {
        try await self.drive(isolation: isolation, firstFailure: firstFailure, options: .valueOnly(declaring: nil)) {
            _ in try await operation()
        }.get()
    }

    // MARK: - The retry loop

    /// The whole retry loop, in the caller's isolation: the out-of-line entry point of
    /// every call but the inlined ones (``execute(operation:)`` and the pipeline stage).
    ///
    /// Inlinable so that a caller's specialization of it knows `Value` (no generic metadata
    /// to look up per call) and inlines the loop and the attempt; never inlined itself.
    ///
    /// - Parameters:
    ///   - firstFailure: The failure of a first attempt the fast path already ran, if any.
    ///   - options: What the caller declared about this call.
    ///   - attempt: Runs one attempt, in the caller's isolation; it may ask its argument for
    ///     the time left before the deadline.
    @inlinable @inline(never)
    package func run<Value>(
        isolation: isolated (any Actor)?,
        firstFailure: FirstAttemptFailure?,
        options: CallOptions,
        attempt: nonisolated(nonsending) (AttemptDeadline) async throws -> Value
    ) async -> RetryOutcome<Value> {
        await self.drive(isolation: isolation, firstFailure: firstFailure, options: options, attempt: attempt)
    }

    /// `run(isolation:firstFailure:options:attempt:)` for an attempt that is an ordinary
    /// nonisolated closure: one that hands its own operation a value that need not be
    /// `Sendable` (the CloudKit batch's items), which a `nonisolated(nonsending)` attempt
    /// could not pass to an operation of an ordinary function type.
    package func runConcurrentAttempt<Value>(
        isolation: isolated (any Actor)?,
        firstFailure: FirstAttemptFailure?,
        options: CallOptions,
        attempt: (AttemptDeadline) async throws -> Value
    ) async -> RetryOutcome<Value> {
        await self.drive(isolation: isolation, firstFailure: firstFailure, options: options) { deadline in
            try await attempt(deadline)
        }
    }

    /// The retry loop, the one implementation every call goes through.
    ///
    /// It is inlinable so that a caller can inline it around its operation: an
    /// operation that only this code calls, and only directly, needs no closure of
    /// its own (a pipeline's `@isolated(any)` operation would otherwise be a heap
    /// allocation per call, on its success path too). For that, every step other
    /// than the attempt itself is an out-of-line call that never takes the operation:
    /// `begin(firstFailure:options:)` and `nextAttempt(_:)` before an attempt,
    /// `attemptSucceeded(_:)` and `attemptFailed(isolation:_:ran:_:)` after it,
    /// `finish(isolation:_:_:_:)` when the call stops before one.
    ///
    /// A first attempt that succeeds awaits nothing but the attempt (and the task-local
    /// binding of a scope the call hands down): every step it takes is synchronous and
    /// nonisolated, and the attempt is `nonisolated(nonsending)`, so the call never leaves
    /// the caller's executor. Only a failure, or a success after failures, visits the actor.
    @inlinable
    func drive<Value>(
        isolation: isolated (any Actor)?,
        firstFailure: FirstAttemptFailure?,
        options: CallOptions,
        attempt: nonisolated(nonsending) (AttemptDeadline) async throws -> Value
    ) async -> RetryOutcome<Value> {
        var call = self.begin(firstFailure: firstFailure, options: options)
        // A declaration and a deadline are handed down to nested calls; a plain call installs nothing.
        if let scope = self.scopeToHandDown(options, call: &call) {
            // After the success below is noted: it passes on to the call around this one.
            defer { self.endSucceededCalls(&call) }
            let outcome = await CallScope.handedDown.withValue(
                scope, operation: { await self.loop(isolation: isolation, options, &call, attempt) },
                isolation: isolation)
            // A call that may not run twice reached the dependency: the calls around it hear so.
            if Self.reachedTheDependency(outcome) { self.noteSucceeded(call, handingDown: scope) }
            return outcome
        }
        let outcome = await self.loop(isolation: isolation, options, &call, attempt)
        // A call whose classifier declares its request not idempotent hands nothing down inside a
        // call that declared an idempotency already, and no deadline; when that declaration says
        // it may not run twice, the call still tells of its success.
        if call.succeedsAsNotIdempotent, Self.reachedTheDependency(outcome) {
            self.noteSucceeded(call, handingDown: nil)
        }
        return outcome
    }

    /// Whether a call reached its dependency as one that succeeded does: it succeeded, or its last
    /// attempt held back items that may have been applied and left nothing to send again
    /// (`AttemptFailureStandIn.endsTheCallAsNotIdempotent`).
    @inlinable
    static func reachedTheDependency<Value>(_ outcome: RetryOutcome<Value>) -> Bool {
        switch outcome.result {
        case .success: return outcome.stopReason == .succeeded
        case .failure(let error): return outcome.stopReason == .notIdempotent && endsTheCallAsNotIdempotent(error)
        }
    }

    /// The loop of `drive(isolation:firstFailure:options:attempt:)`, under the scope it hands down.
    @inlinable
    func loop<Value>(
        isolation: isolated (any Actor)?,
        _ options: CallOptions,
        _ call: inout Call,
        _ attempt: nonisolated(nonsending) (AttemptDeadline) async throws -> Value
    ) async -> RetryOutcome<Value> {
        while true {
            let failure: any Error
            let ran: Bool
            switch self.nextAttempt(&call) {
            case .run:
                do {
                    let value = try await attempt(AttemptDeadline(policy: self, start: call.start))
                    let end = self.attemptSucceeded(&call)
                    if end.attempts > 1 { await self.recordSuccessAfterFailures(isolation: isolation, call) }
                    return RetryOutcome(end, value: value)
                } catch {
                    failure = error
                    ran = true
                }
            case .failed(let error):
                failure = error
                ran = false
            case .stop(let error, let reason):
                return RetryOutcome(await self.finish(isolation: isolation, call, .failure(error), reason))
            }
            if let end = await self.attemptFailed(isolation: isolation, failure, ran: ran, options, &call) {
                return RetryOutcome(end)
            }
        }
    }

    /// The state of a call about to make its first attempt, or to handle the failure of the one the fast path made.
    ///
    /// The clock is read only when the call needs the time it started: for its deadline, for
    /// an observer, or for an outcome that reports its `elapsed`.
    @usableFromInline
    nonisolated func begin(firstFailure: FirstAttemptFailure?, options: CallOptions) -> Call {
        let measuresElapsed = options.reportsElapsed || self.hasObserver
        return Call(
            start: measuresElapsed || self.deadline != nil ? self.clock.now() : .zero,
            measuresElapsed: measuresElapsed,
            state: CallState(attempts: firstFailure == nil ? 0 : 1, ledgerMark: firstFailure?.ledgerMark ?? 0),
            pendingFailure: firstFailure?.error)
    }

    /// What comes before the next attempt: the checks that may stop the call, the attempt's count, and the throttle.
    @usableFromInline
    nonisolated func nextAttempt(_ call: inout Call) -> NextAttempt {
        if let failure = call.pendingFailure {
            call.pendingFailure = nil
            return .failed(failure)
        }
        // The first attempt runs even in a cancelled task, as a bare call would, and
        // before any deadline can have passed; a retry never starts in a cancelled task,
        // nor once the deadline passed.
        if call.state.attempts > 0 {
            // An enclosing time limit whose deadline has passed ends the call as its cancellation
            // would, also before its timer has woken (see `enclosingLimitEnds(start:)`).
            if self.isCancelledOrEndedByALimit(start: call.start) {
                let ending = self.endingOnCancellation(
                    after: call.state.lastError, receivedAt: call.state.lastErrorReceivedAt)
                // A deadline the clock passed before the caller was cancelled stops the call, with
                // the failure it waited on, as the deadline's check below would have.
                if call.state.deadlinePassedBeforeCancellation, let lastError = call.state.lastError {
                    return .stop(lastError, .deadlineExceeded)
                }
                return .stop(ending, .cancelled)
            }
            if let remaining = self.timeLeft(start: call.start), remaining <= .zero,
                let lastError = call.state.lastError
            {
                return .stop(lastError, .deadlineExceeded)
            }
        }
        call.state.attempts += 1
        call.state.ledgerMark = NestedRetryLedger.mark
        if let rejection = self.admitAttempt() {
            return .failed(rejection)
        }
        return .run
    }

    /// Ends a call whose attempt succeeded; the counters are left to
    /// `recordSuccessAfterFailures(isolation:_:)` when attempts failed before it.
    @usableFromInline
    nonisolated func attemptSucceeded(_ call: inout Call) -> CallEnd {
        self.recordAttemptAccepted()
        self.budget?.recordSuccess()
        return self.conclude(call, .success(()), .succeeded)
    }

    /// Counts the failed attempts and the retries of a call that succeeded after them.
    @usableFromInline
    func recordSuccessAfterFailures(isolation: isolated (any Actor)?, _ call: Call) async {
        await self.record(failedAttempts: call.state.attempts - 1, retries: call.state.retries, stop: .succeeded)
    }

    /// Handles a failure: plans what follows it and waits for the next attempt, or ends the call.
    ///
    /// - Parameters:
    ///   - error: The attempt's error, or the throttle's rejection of it.
    ///   - ran: Whether the attempt ran (and its failure counts for the throttle).
    /// - Returns: How the call ended, or `nil` to make another attempt.
    @usableFromInline
    func attemptFailed(
        isolation: isolated (any Actor)?,
        _ error: any Error,
        ran: Bool,
        _ options: CallOptions,
        _ call: inout Call
    ) async -> CallEnd? {
        if ran { self.recordAttemptFailure(error) }
        call.state.lastError = error
        call.state.deadlinePassedBeforeCancellation = false
        // Only a call a library time limit may cut short ends with a failure it has been waiting on.
        call.state.lastErrorReceivedAt = CallScope.current.timeLimits == nil ? nil : self.clock.now()
        var plan = await self.plan(
            isolation: isolation, after: error, options: options, call: &call.state, start: call.start)
        while true {
            // A retry-after hint a hedged call around this one heard from another of its attempts
            // holds the retry back: one at once (a recovered credential, the network back), and
            // one whose wait ended before that hint, heard meanwhile, has passed.
            // It is a hint of this call's too: the outcome reports it, and the observer hears of
            // the longer wait as a retry scheduled once more, its delay the extra wait.
            if case .retryNow = plan, let left = TimeLimitSignal.quietLeft(from: CallScope.current.supersessions) {
                call.state.lastHint = left
                plan = self.heardQuiet(left, start: call.start)
                if case .wait(let delay) = plan {
                    self.observer?.retryScheduled(
                        .init(
                            policyName: self.name, attempt: call.state.attempts, delay: delay, error: error,
                            retryAfter: left))
                }
            }
            switch plan {
            case .stop(let reason):
                return await self.finish(isolation: isolation, call, .failure(error), reason)
            case .stopWithError(let reason, let replacement):
                return await self.finish(isolation: isolation, call, .failure(replacement), reason)
            case .retryNow:
                return nil
            case .wait(let delay):
                switch await self.waitBeforeRetry(isolation: isolation, delay, start: call.start) {
                case .elapsed:
                    plan = .retryNow
                case .elapsedPastDeadline:
                    // The clock passed the wait's end and the deadline before any cancellation of the
                    // caller: one that comes before the next attempt's checks leaves the deadline's stop.
                    call.state.deadlinePassedBeforeCancellation = true
                    return nil
                case .cancelled:
                    let ending = self.endingOnCancellation(
                        after: call.state.lastError, receivedAt: call.state.lastErrorReceivedAt)
                    return await self.finish(isolation: isolation, call, .failure(ending), .cancelled)
                case .cancelledPastDeadline:
                    // The deadline passed first: the call stops there, with the failure it waited on,
                    // as it would have had the wait woken before the cancellation. An enclosing limit
                    // that cancelled it hears how long ago the failure came, as below.
                    _ = self.endingOnCancellation(after: error, receivedAt: call.state.lastErrorReceivedAt)
                    return await self.finish(isolation: isolation, call, .failure(error), .deadlineExceeded)
                }
            }
        }
    }

    /// What a retry about to go out waits for when a ``Hedging`` call around this one heard a
    /// retry-after hint from another of its attempts of which `left` has not passed yet
    /// (`TimeLimitSignal.quietLeft(from:)`): the rest of it, or a stop, when that is longer than
    /// ``maximumRetryAfter`` or the time left before the deadline, as for the call's own hint.
    /// Read on the failure path only.
    nonisolated func heardQuiet(_ left: Duration, start: Duration) -> Plan {
        if left > self.maximumRetryAfter { return .stop(.retryAfterTooLong) }
        if let remaining = self.timeLeft(start: start), left >= remaining { return .stop(.deadlineExceeded) }
        return .wait(left)
    }

    /// The error a call ends with when its task is cancelled before a retry, or while it
    /// waits for a credential or the network, after `lastError`.
    ///
    /// When one of the library's time limits enclosing the call cancelled it (an enclosing
    /// policy's `attemptTimeout`, a ``Timeout``), or a hedging race it lost, the call ends
    /// with `lastError`, the failure it was waiting to retry: the limit keeps it as its late
    /// error (see `LateOperationError`), so what it says (a retry-after hint, a 429, a
    /// request that may not run twice, an offline device) reaches the layers above, which
    /// would otherwise see a bare cancellation and send again too soon. When the caller
    /// cancelled it, the call ends with `CancellationError`, as before.
    ///
    /// The library's signals tell the two apart, explicitly: `Task.isCancelled` is true in both.
    nonisolated static func cancellationEnding(lastError: (any Error)?) -> any Error {
        guard let lastError else { return CancellationError() }
        let scope = CallScope.current
        return scope.timeLimitFired || scope.supersededFired ? lastError : CancellationError()
    }

    /// ``cancellationEnding(lastError:)`` for a failure the call received at `receivedAt` on
    /// the policy's clock, and has been waiting on since: when a library time limit keeps it,
    /// the limit learns how long ago it came (`TimeLimitSignal.noteLateError(_:age:)`), so that
    /// the layers above count its retry-after hint from the response, not from the limit's end.
    nonisolated func endingOnCancellation(after lastError: (any Error)?, receivedAt: Duration?) -> any Error {
        let ending = Self.cancellationEnding(lastError: lastError)
        if let lastError, let receivedAt, !(ending is CancellationError) {
            let scope = CallScope.current
            TimeLimitSignal.noteLateError(
                lastError, age: self.clock.now() - receivedAt, from: scope.timeLimits, across: scope.supersessions)
        }
        return ending
    }

    /// Tells the library time limits enclosing the call (a ``Timeout``, an enclosing policy's
    /// `attemptTimeout`), fired or not, that the call, begun at `start`, stops with `error` at
    /// this policy's own deadline, which the clock has passed: a clock that passed that deadline
    /// and a limit's in one move wakes them in no set order. A limit that woke first and cut
    /// short the policy's wait (or claimed the call as the policy stopped), its deadline coming
    /// later, passes `error` on rather than claim the call; a limit whose timer has not woken,
    /// its deadline coming first, claims the call (see `TimeLimitSignal.noteDeadlineStop(_:)`).
    /// Nothing when no limit encloses the call, or when only an enclosing call's deadline had
    /// passed, not this policy's: the limits keep what they would claim. Every limit around the
    /// call hears of it, also past an attempt this call's task outlived: each reads it only for
    /// the error its own attempt ends with (see `TimeLimitSignal.noteDeadlineStop(_:from:)`).
    nonisolated func noteDeadlineStop(_ error: any Error, start: Duration) {
        guard let deadline = self.deadline, let signals = CallScope.current.timeLimits,
            self.clock.now() - start >= deadline
        else { return }
        TimeLimitSignal.noteDeadlineStop(
            NestedDeadlineStop(error: error, end: TimeLimitEnd(clock: self.clock, deadline: start + deadline)),
            from: signals)
    }

    /// What the caller declared about one call.
    @usableFromInline
    package struct CallOptions {
        /// The call's idempotency; `nil` to inherit, or to take the classifier's.
        var idempotency: Idempotency?
        /// A classifier that replaces the policy's for this call (the SQLite transaction helper's).
        var classifier: (any RetryClassifier)?
        /// Recovers the call's credential after a credential failure (see `RetryPolicy+Recovery.swift`).
        var recovery: (any CallRecovery)?
        /// Waits for connectivity after an offline failure (see `RetryPolicy+Connectivity.swift`).
        var connectivity: ConnectivityWait?
        /// Where the operation reports what it knows about its own failed attempt (the SQLite
        /// transaction helper's); read for this call's decisions only, never handed down.
        var attemptReport: AttemptReport?
        /// Whether the caller reads the outcome's `elapsed`; `execute`, which returns the
        /// value alone, does not, so its calls without an observer or a deadline read no clock.
        var reportsElapsed = true
    }

    /// What one call has seen so far.
    struct CallState {
        var attempts: Int
        /// The nested-retry ledger's mark when the last attempt started: only records
        /// written after it are an inner policy's word about that attempt.
        var ledgerMark: UInt64 = 0
        var retries = 0
        var lastError: (any Error)?
        /// When ``lastError`` came, on the policy's clock; read only under a library time limit
        /// (see `endingOnCancellation(after:receivedAt:)`), `nil` otherwise.
        var lastErrorReceivedAt: Duration?
        var previousDelay: Duration?
        var lastHint: Duration?
        /// Whether the last wait before a retry found the deadline passed when it ended, before
        /// any cancellation of the caller (a clock that jumped past both): a cancellation that
        /// follows stops the call at the deadline, not as the caller's (see `waitBeforeRetry`).
        var deadlinePassedBeforeCancellation = false
        /// Attempts that do not count against ``maximumAttempts``: refused for a stale
        /// credential, or failed offline before a wait for connectivity.
        var uncountedAttempts = 0
        /// Whether the call has recovered its credential (at most once per call).
        var hasRecovered = false
        /// The waits for the network the call has begun, after an offline attempt or refresh:
        /// at most ``ConnectivityWait/maximumWaits``.
        var networkWaits = 0
        /// Whether the idempotency rule stopped the call, whatever reason it reports (see
        /// `Rulebook.reportedStop`): an enclosing policy must not send the request again either.
        var stoppedAsNotIdempotent = false
        /// Refreshes of a credential retried after one that failed for now: each takes one of
        /// ``maximumAttempts`` although the operation did not run for it.
        var refreshRetries = 0
        /// This call's number in the scope it hands down, or 0 when it hands none down
        /// (see `NestedRetryLedger.Address`). Also its number for the calls nested in it that may
        /// not run twice and succeed (`CallScope.succeededCall`): a call that hands a scope down
        /// hears of them whatever its own idempotency (one that may not run twice may still run
        /// its attempt again after a failure that proves its request never left).
        var retryCall: UInt64 = 0
        /// The number of the nearest enclosing call that hands a scope down, when this call
        /// numbers itself: the call its own word is for.
        var enclosingRetryCall: UInt64 = 0
        /// The number of the nearest enclosing call that hears of such successes, when this call
        /// does (when it numbers itself): the call it passes them on to as it ends.
        var enclosingSucceededCall: UInt64 = 0
        /// Whether this call's success is told to the calls around it as that of a call that may
        /// not run twice: the call's own reading of its idempotency says so, the one its failures
        /// are judged by (`Rulebook.idempotency(of:declared:classifier:)`): its caller's declaration,
        /// else the nearest enclosing call's, else its classifier's word, and never the classifier's
        /// word over a declaration (see `scopeToHandDown(_:call:)`). Settled only for a call that
        /// hands a scope down, or whose classifier's word would be handed down.
        var succeedsAsNotIdempotent = false

        /// The attempts that count against ``maximumAttempts``: the operation's, less those that
        /// do not count, plus the refresh retries.
        var countedAttempts: Int { self.attempts - self.uncountedAttempts + self.refreshRetries }
    }

    /// One call's progress through the loop, which only the loop's out-of-line steps read.
    @usableFromInline
    struct Call {
        /// The policy's clock reading when the call began; zero when the call needs no time (see `begin`).
        @usableFromInline let start: Duration
        /// Whether the call reports the time it took: to an observer, or in its outcome.
        let measuresElapsed: Bool
        var state: CallState
        /// The failure of a first attempt the fast path ran, until the loop handles it.
        var pendingFailure: (any Error)?

        /// See `CallState.succeedsAsNotIdempotent`.
        @usableFromInline var succeedsAsNotIdempotent: Bool { self.state.succeedsAsNotIdempotent }
    }

    /// What comes before the next attempt, as `nextAttempt(_:)` decides.
    @usableFromInline
    enum NextAttempt {
        /// Run the attempt.
        case run
        /// Handle `error` as the attempt's failure without running it: the fast path's
        /// failure, or the throttle's rejection.
        case failed(any Error)
        /// Stop before the attempt, ending the call with `error`.
        case stop(any Error, RetryStopReason)
    }

    /// How a call ended, less its value: what the loop needs to build the ``RetryOutcome``.
    @usableFromInline
    struct CallEnd {
        /// The error that ended the call, or `nil` when it succeeded.
        @usableFromInline let error: (any Error)?
        @usableFromInline let attempts: Int
        @usableFromInline let stopReason: RetryStopReason
        @usableFromInline let retryAfter: Duration?
        @usableFromInline let elapsed: Duration
    }

    enum Plan {
        case stop(RetryStopReason)
        /// Stop, ending the call with `error` instead of the attempt's (a failed recovery's error, a cancellation).
        case stopWithError(RetryStopReason, any Error)
        /// Try again at once: the state that failed the attempt has been recovered.
        case retryNow
        case wait(Duration)
    }

    /// Decides what follows a failed attempt; runs in the caller's isolation except for one hop to draw jitter.
    private func plan(
        isolation: isolated (any Actor)?,
        after error: any Error,
        options: CallOptions,
        call: inout CallState,
        start: Duration
    ) async -> Plan {
        let reported = options.attemptReport?.take() ?? .none
        var analysis = FailureAnalysis(error)
        // An attempt that left nothing to send again but held items back ends the call itself.
        if endsTheCallAsNotIdempotent(error) { return self.endAsNotIdempotent(after: error, analysis: analysis, call) }
        // The operation proved its attempt had no effect: as good as a request never sent.
        if reported == .noEffect { analysis = analysis.provingNoEffect() }
        // A library time limit around the call whose deadline has passed ends the attempt, as
        // its timer would have had it woken before the attempt failed: the failure is read as
        // one in a task that limit cancelled (see `enclosingLimitEnds(start:)`).
        let cancelled = self.isCancelledOrEndedByALimit(start: start)
        // A request that may have left: the library time limits around the call hear of it, so
        // that a later try that never left (offline, at a gate) does not speak for their attempt.
        // A failure in a cancelled task is not one: a limit that ended the attempt reads it itself.
        if !analysis.delivery.provesNotSent, !analysis.endedWaitingAtAGate, !cancelled,
            let limits = CallScope.current.timeLimits
        {
            TimeLimitSignal.noteARequestMayHaveLeft(from: limits)
        }
        let status = analysis.httpStatus
        var hint = analysis.retryAfter
        if let hint { call.lastHint = hint }
        // A hint from the dependency asks the hedged calls around this one for quiet too: their
        // other attempts, and the policies in them, send nothing before it has passed, and they
        // start no attempt before then (`TimeLimitSignal.hearQuiet(_:from:onlyOn:)`); those on
        // this policy's clock, on which its own wait for the hint ends when theirs does. A
        // refusal at one of the library's own gates speaks for that gate alone.
        if let hint, hint > .zero, let attempts = CallScope.current.supersessions,
            Rulebook.loadedTheDependency(analysis)
        {
            TimeLimitSignal.hearQuiet(hint, from: attempts, onlyOn: self.clock)
        }
        let classifier = options.classifier ?? self.classifier
        let idempotency = Rulebook.idempotency(of: analysis, declared: options.idempotency, classifier: classifier)
        let isDeclared = Rulebook.idempotencyIsDeclared(options.idempotency)

        // The rules no classifier can change. A failure in a task that is cancelled
        // cannot be retried whoever cancelled it: any attempt would be cancelled too. The
        // caller's cancellation is then why the call stops, unless the failure is a library
        // time limit's, which ended the attempt before the caller gave up (the limit settles
        // that race, see `TimeLimitSignal`): such a call stops for the reason it would have
        // stopped for had the limit ended it a moment before, and for the cancellation only
        // where it would have been retried (`cancelledAfterTimeOut` below). The limit's error
        // says so wherever it sits in the failure's chain (wrapped in an app's error, under
        // `NSUnderlyingErrorKey`, bridged), not only as thrown.
        let timedOutFirst = cancelled && analysis.holdsTimeLimitError
        let ruled: RetryStopReason? =
            cancelled && !timedOutFirst ? .cancelled : Rulebook.stopReason(for: analysis, idempotency: idempotency)
        let reportedStop: RetryStopReason? = reported == .mustNotRepeat ? .notRetryable : nil
        if var ruled = ruled ?? self.nestedStop(after: error, analysis: analysis, call: call)
            ?? self.stopAfterSucceededCall(call) ?? reportedStop
        {
            if ruled == .notIdempotent {
                // Nothing is sent again; the classifier may still say that the person must sign in.
                call.stoppedAsNotIdempotent = true
                let context = RetryContext(
                    attempt: call.attempts, idempotency: idempotency, analysis: analysis,
                    idempotencyIsDeclared: isDeclared)
                ruled = Rulebook.reportedStop(
                    forNotIdempotent: Self.decision(
                        for: error, context: context, classifier: classifier, options: options),
                    analysis: analysis)
            }
            // Server pushback costs budget like any retryable failure.
            if ruled == .tooManyRequests { self.budget?.recordFailure() }
            self.observer?.attemptFailed(
                .init(policyName: self.name, attempt: call.attempts, error: error, httpStatus: status, retryAfter: hint)
            )
            return .stop(ruled)
        }
        if !cancelled,
            let recovered = await self.recoveryPlan(
                isolation: isolation, after: error, analysis: analysis, options: options, call: &call, start: start)
        {
            return recovered
        }

        let context = RetryContext(
            attempt: call.attempts, idempotency: idempotency, analysis: analysis,
            idempotencyIsDeclared: isDeclared)
        let decision = Self.decision(for: error, context: context, classifier: classifier, options: options)
        if let floor = decision.retryAfter {
            hint = Swift.max(hint ?? .zero, floor)
            call.lastHint = hint
        }
        self.observer?.attemptFailed(
            .init(policyName: self.name, attempt: call.attempts, error: error, httpStatus: status, retryAfter: hint))
        guard decision.isRetryable else { return .stop(decision.stopReason ?? .notRetryable) }

        // A hedged call around this one heard a retry-after hint from another of its attempts:
        // it asks this call for quiet too (see `heardQuiet(_:start:)`).
        // The outcome reports it as the last hint seen.
        if let heard = TimeLimitSignal.quietLeft(from: CallScope.current.supersessions) {
            hint = Swift.max(hint ?? .zero, heard)
            call.lastHint = hint
        }
        // A breaker's or a limiter's rejection, or a request that never left an offline
        // device, put no load on the dependency, so it costs no token.
        if Rulebook.loadedTheDependency(analysis) {
            self.budget?.recordFailure()
        }
        if call.countedAttempts >= self.maximumAttempts { return .stop(.exhausted) }
        if let hint, hint > self.maximumRetryAfter { return .stop(.retryAfterTooLong) }
        if cancelled { return .stop(self.cancelledAfterTimeOut(start: start)) }

        // The schedule counts the attempts that count: a wait for the network or a
        // recovered credential moves it on no more than it spends an attempt.
        let jittered = await self.nextDelay(forRetry: call.countedAttempts - 1, previous: call.previousDelay)
        let delay = Swift.max(jittered, hint ?? .zero)
        if let left = self.timeLeft(start: start), delay >= left {
            return .stop(.deadlineExceeded)
        }
        if let budget = self.budget, !budget.allowsRetry { return .stop(.budgetExhausted) }

        // Decorrelated jitter grows from the previous sleep (AWS's formula reads `sleep * 3`):
        // the wait made, a longer hint's included, not only the draw.
        call.previousDelay = delay
        call.retries += 1
        self.observer?.retryScheduled(
            .init(policyName: self.name, attempt: call.attempts, delay: delay, error: error, retryAfter: hint))
        return .wait(delay)
    }

    /// Ends a call whose attempt left nothing to send again but held back items that may have been
    /// applied (`AttemptFailureStandIn.endsTheCallAsNotIdempotent`): it stops with
    /// ``RetryStopReason/notIdempotent``, whatever the rules would read in the failure, a cancelled
    /// task's included, as a call whose attempt succeeded would have returned. The observer hears
    /// of the attempt's failure when its operation threw one; the budget counts the call's end
    /// as a success, as the throttle does (`recordAttemptFailure(_:)`).
    private nonisolated func endAsNotIdempotent(after error: any Error, analysis: FailureAnalysis, _ call: CallState)
        -> Plan
    {
        self.budget?.recordSuccess()
        if (error as? any AttemptFailureStandIn)?.operationThrew ?? true {
            self.observer?.attemptFailed(
                .init(
                    policyName: self.name, attempt: call.attempts, error: error, httpStatus: analysis.httpStatus,
                    retryAfter: analysis.retryAfter))
        }
        return .stop(.notIdempotent)
    }

    /// The classifier's decision on a failure. A call-specific classifier (the SQLite helper's)
    /// retries only what it knows; the policy's own falls back to the default rules.
    private nonisolated static func decision(
        for error: any Error, context: RetryContext, classifier: any RetryClassifier, options: CallOptions
    ) -> RetryDecision {
        classifier.decision(for: error, context: context)
            ?? (options.classifier == nil
                ? DefaultRetryClassifier().decision(for: error, context: context) ?? .retry : .doNotRetry)
    }

    /// Why a call stops whose attempt a library time limit ended before the caller gave up,
    /// when the rules would retry it: the deadline, when it has passed (the limit that ended
    /// the attempt was the time left before it, or came after it), else the caller's cancellation,
    /// which leaves no retry to run.
    private nonisolated func cancelledAfterTimeOut(start: Duration) -> RetryStopReason {
        if let left = self.timeLeft(start: start), left <= .zero { return .deadlineExceeded }
        return .cancelled
    }

    /// Ends a call with `result` (its value left out), reporting to the observer and the counters.
    @usableFromInline
    func finish(
        isolation: isolated (any Actor)?,
        _ call: Call,
        _ result: Result<Void, any Error>,
        _ reason: RetryStopReason
    ) async -> CallEnd {
        let end = self.conclude(call, result, reason)
        if reason != .succeeded || call.state.attempts > 1 {
            // An attempt whose operation returned, although the call did not succeed, is not a failed one.
            let lastSucceeded: Bool
            if case .failure(let error) = result, let standIn = error as? any AttemptFailureStandIn {
                lastSucceeded = !standIn.operationThrew
            } else {
                lastSucceeded = reason == .succeeded
            }
            let failed = lastSucceeded ? call.state.attempts - 1 : call.state.attempts
            await self.record(failedAttempts: failed, retries: call.state.retries, stop: reason)
        }
        return end
    }

    /// Ends a call with `result` (its value left out), reporting to the observer; the
    /// counters are the caller's to record, on the actor.
    nonisolated func conclude(_ call: Call, _ result: Result<Void, any Error>, _ reason: RetryStopReason) -> CallEnd {
        let elapsed = call.measuresElapsed ? self.clock.now() - call.start : .zero
        var error: (any Error)?
        if case .failure(let failure) = result { error = self.noteStop(reason, error: failure, call: call.state) }
        if reason == .deadlineExceeded, let error { self.noteDeadlineStop(error, start: call.start) }
        if self.hasObserver, let observer = self.observer {
            observer.callFinished(
                .init(
                    policyName: self.name, attempts: call.state.attempts, stopReason: reason,
                    retryAfter: call.state.lastHint, elapsed: elapsed, error: error))
        }
        return CallEnd(
            error: error, attempts: call.state.attempts, stopReason: reason, retryAfter: call.state.lastHint,
            elapsed: elapsed)
    }

    // MARK: - Actor-isolated state

    func nextDelay(forRetry retry: Int, previous: Duration?) -> Duration {
        self.jitter.delay(for: self.backoff, attempt: retry, previous: previous, using: &self.generator)
    }

    private func record(failedAttempts: Int, retries: Int, stop reason: RetryStopReason) {
        self.counters.failedAttempts += failedAttempts
        self.counters.retries += retries
        self.counters.stopReasons[reason, default: 0] += 1
    }

    // MARK: - Per-attempt time limit

    /// Runs one attempt of `operation` under a limit of `limit` from now, as a ``Timeout`` runs
    /// its operation (`Timeout.start(_:_:on:scope:limit:)`): in a task started at once on the
    /// operation's isolation, on the caller's thread when the caller already runs there, whose
    /// deadline the policy's ``attemptWatcher`` watches; an attempt that returns before it first
    /// suspends hands its outcome straight back, with no hop.
    ///
    /// The attempt runs under a signal the limit claims before it cancels the attempt, so a
    /// breaker inside tells this time limit from the caller giving up. The attempt marks it
    /// completed as soon as it returns, and the caller's cancellation settles it for the caller
    /// unless the limit had passed by then (see `TimeLimit.callerCancelled()`). The signal knows
    /// the deadline and its clock: a policy nested in the attempt that would try again once it
    /// has passed claims the attempt for this limit instead.
    nonisolated(nonsending) static func withTimeLimit<Value: Sendable>(
        _ limit: Duration,
        idempotency: Idempotency?,
        policy: RetryPolicy,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        let watcher = policy.attemptWatcher
        let deadline = watcher.now() + limit
        let (scope, signal) = CallScope.limited(until: deadline, on: .policy(policy))
        let timeLimit = TimeLimit(watcher: watcher, deadline: deadline, signal: signal)
        let result = await Timeout.start(
            SentOperation(body: operation), { try await $0.run() }, on: operation.isolation, scope: scope,
            limit: timeLimit)
        switch result {
        case .success(let value):
            // Also when the limit fired first: the attempt finished after all, and the work was done.
            return value
        case .failure(let error):
            throw Self.attemptFailure(error, under: timeLimit, limit: limit, idempotency: idempotency)
        }
    }

    /// The error an attempt that failed with `error` under `timeLimit` ends with: `error` itself
    /// unless the limit claimed the attempt, or when `error` is the end of a limit nested in the
    /// attempt that came first; otherwise the ``AttemptTimeoutError`` that reports it.
    private static func attemptFailure(
        _ error: any Error, under timeLimit: TimeLimit, limit: Duration, idempotency: Idempotency?
    ) -> any Error {
        let signal = timeLimit.signal
        let clock = timeLimit.watcher.clock
        let deadline = timeLimit.deadline
        // The attempt's own failure, before the limit fired (the caller's cancellation before the
        // limit passed included, however long the cancelled attempt took to return): thrown on,
        // with word for the policies around when a call in the attempt that may not run twice
        // succeeded before it failed. Unless it is the end of a limit nested in it, due later,
        // that came after this deadline had passed (a clock that passed both in one move woke
        // that limit first), or the stop of a policy nested in the attempt at its own deadline,
        // due later, after this one had passed: this limit came first then and claims the
        // attempt, as its timer would have had the clock stepped (see
        // `TimeLimitSignal.cameFirst(before:deadline:on:)`).
        guard signal.hasFired || signal.cameFirst(before: error, deadline: deadline, on: clock) else {
            NestedRetryLedger.recordFailure(error, ofAttemptUnder: signal)
            return error
        }
        // The limit claimed the attempt: its watcher, or the caller's cancellation once the limit
        // had passed. The cancelled attempt's outcome is taken rather than dropped (see
        // `LateOperationError`).
        let late = LateOperationError.kept(error)
        // A limit nested in the attempt whose deadline came no later ended it, though this one
        // fired too (a clock that passed both in one move): its error goes on as it is.
        if let late, signal.nestedLimitCameFirst(late, deadline: deadline, on: clock) { return late }
        // Built once the attempt has ended, so that a call inside it that declared itself not
        // idempotent, however late it started, is reported, and so is what the attempt's own
        // late error says about its request.
        return AttemptTimeoutError(
            timeout: limit,
            requestIdempotency: LateOperationError.idempotency(
                signal.reportedIdempotency(declared: idempotency), tightenedBy: late),
            operationError: late, operationErrorAge: late.flatMap { signal.takeLateErrorAge(of: $0) },
            earlierRequestMayHaveLeft: signal.sawARequestLeave,
            limitEnd: TimeLimitEnd(clock: clock, deadline: deadline))
    }
}

extension RetryOutcome {
    /// The outcome of a call that ended with `value`.
    @inlinable
    init(_ end: RetryPolicy.CallEnd, value: Value) {
        self.init(
            result: .success(value), attempts: end.attempts, stopReason: end.stopReason, retryAfter: end.retryAfter,
            elapsed: end.elapsed)
    }

    /// The outcome of a call that ended with an error.
    @inlinable
    init(_ end: RetryPolicy.CallEnd) {
        // A call that ends without a value always ends with an error; the fallback is never taken.
        self.init(
            result: .failure(end.error ?? CancellationError()), attempts: end.attempts, stopReason: end.stopReason,
            retryAfter: end.retryAfter, elapsed: end.elapsed)
    }
}

extension RetryPolicy.CallOptions {
    /// Options that declare nothing: the call inherits, or takes the classifier's word.
    @usableFromInline
    static var plain: Self { Self() }

    /// Options that declare `idempotency` and nothing else, for the package's other modules.
    @usableFromInline
    package static func declaring(_ idempotency: Idempotency?) -> Self {
        Self(idempotency: idempotency)
    }

    /// Options that declare `idempotency`, for a caller that reads the outcome's value alone
    /// (an `execute`): the call measures no `elapsed` unless an observer hears it.
    @usableFromInline
    package static func valueOnly(declaring idempotency: Idempotency?) -> Self {
        Self(idempotency: idempotency, reportsElapsed: false)
    }
}

/// What an attempt may ask of its call: the time it has left before the deadline.
///
/// Computed only when asked, by the attempts that limit themselves to it (an attempt
/// timeout, a request that sends the time left), so every other attempt reads no clock
/// and no task-local for it.
@usableFromInline
package struct AttemptDeadline: Sendable {
    @usableFromInline let policy: RetryPolicy
    /// The policy's clock reading when the call began.
    @usableFromInline let start: Duration

    @inlinable
    init(policy: RetryPolicy, start: Duration) {
        self.policy = policy
        self.start = start
    }

    /// The time left before the call's deadline or an enclosing call's, whichever is sooner; `nil` for none.
    package func timeLeft() -> Duration? {
        self.policy.timeLeft(start: self.start)
    }
}

/// The failure of a first attempt that ``RetryPolicy``'s fast path ran before the loop.
@usableFromInline
package struct FirstAttemptFailure {
    /// The attempt's error.
    @usableFromInline let error: any Error
    /// The nested-retry ledger's mark when the attempt started.
    @usableFromInline let ledgerMark: UInt64

    @inlinable
    init(_ error: any Error, ledgerMark: UInt64) {
        self.error = error
        self.ledgerMark = ledgerMark
    }
}
