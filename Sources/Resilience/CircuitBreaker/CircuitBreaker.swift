/// Stops calling a dependency that keeps failing, tells callers how long to
/// wait, and probes for recovery without a stampede.
///
/// Create one breaker per dependency (or one per host with a
/// ``CircuitBreakerRegistry``) and share it among every call site and task
/// that talks to it:
///
/// ```swift
/// let breaker = try CircuitBreaker(
///     name: "inventory",
///     tripRule: .consecutiveFailures(5),
///     openDuration: .growing(initial: .seconds(5), maximum: .seconds(120))
/// )
///
/// do {
///     let stock = try await breaker.execute { try await inventory.stock(for: item) }
///     show(stock)
/// } catch let rejection as CircuitBreakerOpenError {
///     showBanner("Inventory is unavailable; try again in \(rejection.retryAfter ?? .seconds(5))")
/// }
/// ```
///
/// ## States
/// - **Closed:** calls run; the ``CircuitBreakerConfiguration/tripRule`` counts failures
///   (as judged by the ``CircuitBreakerConfiguration/classifier``) and opens the breaker
///   when its threshold is reached.
/// - **Open:** calls fail at once with ``CircuitBreakerOpenError``, which carries the
///   time left, for the ``CircuitBreakerConfiguration/openDuration`` (fixed, or growing
///   with each consecutive trip). A server's retry-after hint may open it too
///   (``CircuitBreakerConfiguration/pushback``).
/// - **Half-open:** once the open time has passed, the next callers become probes, at
///   most ``CircuitBreakerConfiguration/maximumProbes`` at a time; the rest are
///   rejected. ``CircuitBreakerConfiguration/successesToClose`` successful probes close
///   the breaker; one failed probe re-opens it. A probe still running after its
///   ``CircuitBreakerConfiguration/probeLease`` loses its slot to the next caller, so a
///   hung probe cannot wedge the breaker.
/// - **Isolated:** held open by ``isolate()`` until ``reset()``.
///
/// Transitions happen when a call arrives or finishes (or a snapshot is taken),
/// judged against the injected clock; there are no timers. Every transition
/// starts a new generation, and a call's result counts only in the generation
/// that admitted it: a slow call from before a trip can neither re-open a
/// breaker that has since closed nor close one that has since opened.
///
/// ## A clock that goes back
/// A jump back of the injected clock (a wall clock set back, a custom clock) counts as
/// no time elapsed. A caller whose reading is behind the latest one the breaker
/// counted, and would be rejected or has a result to count, reads the clock again; a
/// second reading still behind it proves the jump, and the breaker counts on from where
/// it was, adding the jump to every later reading. A closed breaker, which rejects
/// nothing, proves it by its results: its time window runs on from the new readings,
/// snapshot or not. An open breaker then stays open for what was left of
/// its open time at the last reading it counted, measured on the clock's new readings:
/// at most its open duration from the first reading after the jump, never the jump on
/// top of it. (A rejection without the lock counts no reading, so the time between the
/// breaker's last counted reading and the jump is not counted either.) Probe leases
/// and a time window's buckets run on the same way, without losing or counting a call
/// twice, and a slow-call rule times a call that spans the jump on that one line. The
/// times the breaker reports (``CircuitBreakerSnapshot/openedAt``,
/// ``CircuitBreakerSnapshot/takenAt``, a transition's time) are on its own time line,
/// which never goes back: behind the clock's readings by the jumps. The system's
/// continuous clock never goes back.
///
/// ## Cost
/// The operation runs in the caller's isolation, as with ``RetryPolicy``: a
/// `@MainActor` caller may touch main-actor state inside it, and no call hops
/// to another executor. While closed under the consecutive-failures rule with
/// no failure pending, a call that succeeds reads one atomic word before and
/// one after the operation: no lock, no clock, no allocation (a slow-call rule
/// adds two clock reads). Under a time-window rule, a success reads a cheap
/// reading of the clock that is never early (with the system's continuous clock on
/// Linux, the coarse monotonic clock plus three ticks) and counts itself in the
/// current bucket with one compare-and-exchange, no lock, unless it is the first
/// call of a new bucket. A rejection while open or
/// isolated takes no lock either. Failures, count-window rules (which record
/// every call), probes and the other states take the breaker's lock briefly,
/// never across the operation, an observer call or an await.
///
/// ## With a retry policy
/// The two nest either way round, with different meanings:
///
/// - **Retry around breaker** (`policy.execute { try await breaker.execute { ... } }`):
///   the breaker sees every attempt. When it rejects one, ``CircuitBreakerOpenError``
///   is retryable and carries the open time left as a retry-after hint, so the policy
///   waits at least that long before its next attempt, which then probes the breaker;
///   if the wait exceeds the policy's `maximumRetryAfter` (or its deadline), the policy
///   stops and throws the rejection. An isolated breaker's rejection is not retryable.
/// - **Breaker around retry** (`breaker.execute { try await policy.execute { ... } }`):
///   the breaker sees whole retried calls: one failure per call that exhausted its
///   attempts, one success per call that eventually succeeded. It trips later, but a
///   rejection costs no attempts at all. A 429 stops the policy at once and reaches the
///   breaker, whose pushback then opens it for the server's hint.
///
/// Retry around breaker is the usual choice: the policy rides out a short outage
/// and the breaker stops it from hammering a long one.
public final class CircuitBreaker: Sendable {
    /// The name rejections and events carry, such as the dependency's host.
    public let name: String
    /// The breaker's settings.
    public let configuration: CircuitBreakerConfiguration
    /// Receives state changes and rejections, if set.
    public let observer: (any CircuitBreakerObserver)?
    /// The client-side adaptive throttle every call goes through first, if set.
    ///
    /// The throttle decides before the breaker: a call it rejects fails with
    /// ``AdaptiveThrottleRejection`` without running, takes no permit and counts as
    /// nothing, neither a failure of the dependency nor a rejection by the breaker
    /// (it never reached the server). The breaker's ``observer`` hears of it as of any
    /// rejected call, with ``CircuitBreakerRejectionEvent/throttleRejection`` set to the
    /// refusal the caller receives. A call the breaker then rejects is not counted
    /// by the throttle either. A call that runs counts as one request, and its outcome
    /// as accepted or not as ``AdaptiveThrottle/record(_:)`` says. Share one throttle
    /// among the breakers and policies that call one server side by side; do not give
    /// it to two layers nested in one another, which would ask it twice for one request.
    public let throttle: AdaptiveThrottle?

    let clock: ElapsedClock
    /// The generations of the registry that made the breaker, or `nil` for a breaker of its own.
    let generations: CircuitBreakerGenerations?
    @usableFromInline let storage: CircuitBreakerStorage
    /// Whether a closed-state success with no failures pending needs no lock (the consecutive rule).
    let successNeedsNoLock: Bool
    /// Whether a closed-state success with no failures pending needs neither the lock nor the
    /// clock (the consecutive rule with no slow-call rule): the inlined part of ``execute(operation:)``
    /// settles it.
    @usableFromInline let successIsFree: Bool
    /// Whether calls read the clock when they start (a slow-call rule).
    @usableFromInline let readsClockOnAdmission: Bool
    /// Whether a success reads the clock (a slow-call rule or a time window).
    let readsClockOnSuccess: Bool
    /// Whether a closed-state success may be counted in the time window without the lock.
    let countsSuccessesInTimeWindow: Bool
    /// Whether ``observer`` is set: a rejection checks this rather than unwrapping the optional
    /// existential, which copies and destroys it through its value witnesses (about 140
    /// instructions per rejection).
    let hasObserver: Bool
    /// The thread-specific slot of ``CircuitBreakerRejectionCache``, read once here rather than
    /// from its lazily made global at every rejection.
    let rejectionSlot: CircuitBreakerRejectionCache.Slot?

    /// Creates a breaker from a validated configuration; it cannot fail, so it does not throw.
    ///
    /// ```swift
    /// let breaker = CircuitBreaker(name: "inventory", configuration: .default)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name rejections and events carry.
    ///   - configuration: The settings.
    ///   - observer: Receives state changes and rejections, or `nil`.
    ///   - throttle: A client-side adaptive throttle, shareable with the policies and breakers
    ///     that call the same server, or `nil` (the default) for none; see ``throttle``.
    ///   - clock: The clock for open times, leases, windows and slow calls; inject a
    ///     test clock in tests.
    public convenience init(
        name: String,
        configuration: CircuitBreakerConfiguration,
        observer: (any CircuitBreakerObserver)? = nil,
        throttle: AdaptiveThrottle? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        self.init(
            name: name, configuration: configuration, observer: observer, throttle: throttle,
            elapsedClock: ElapsedClock(clock))
    }

    /// Creates a breaker with the package defaults: it opens after five consecutive counted
    /// failures, for a fixed 30 seconds, then lets one probe through; failures are judged by
    /// ``DefaultCircuitBreakerFailureClassifier``, and an HTTP 429's retry-after hint opens it.
    ///
    /// The defaults are valid, so this needs no `try`:
    ///
    /// ```swift
    /// let breaker = CircuitBreaker(name: "inventory")
    /// ```
    ///
    /// It is the same as `CircuitBreaker(name: name, configuration: .default)`.
    ///
    /// - Parameter name: The name rejections and events carry, such as the dependency's host.
    public convenience init(name: String) {
        self.init(name: name, configuration: .default)
    }

    /// Creates a breaker, validating every setting.
    ///
    /// A breaker with the package defaults needs no `try` when made from a configuration:
    /// `CircuitBreaker(name: "inventory", configuration: .default)`.
    ///
    /// - Parameters:
    ///   - name: The name rejections and events carry, such as the dependency's host.
    ///   - tripRule: When the breaker opens; defaults to five consecutive failures.
    ///   - slowCallRule: Counts slow successes as failures; `nil` (the default) for none.
    ///   - openDuration: The open time after each trip; defaults to a fixed 30 seconds.
    ///   - maximumProbes: Probe calls in flight at once while half-open; at least 1. Defaults to 1.
    ///   - successesToClose: Successful probes that close the breaker; at least 1. Defaults to 1.
    ///   - probeLease: How long a probe may run before its slot goes to another caller;
    ///     greater than zero, and at most about 146 years. Defaults to 60 seconds.
    ///   - classifier: Decides what counts as a failure; defaults to
    ///     ``DefaultCircuitBreakerFailureClassifier``.
    ///   - pushback: Whether server retry-after hints open the breaker; defaults to HTTP 429 only.
    ///   - observer: Receives state changes and rejections, or `nil`.
    ///   - throttle: A client-side adaptive throttle, shareable with the policies and breakers
    ///     that call the same server, or `nil` (the default) for none; see ``throttle``.
    ///   - clock: The clock for open times, leases, windows and slow calls.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public convenience init(
        name: String,
        tripRule: CircuitBreakerTripRule = .default,
        slowCallRule: CircuitBreakerSlowCallRule? = nil,
        openDuration: CircuitBreakerOpenDuration = .default,
        maximumProbes: Int = 1,
        successesToClose: Int = 1,
        probeLease: Duration = .seconds(60),
        classifier: any CircuitBreakerFailureClassifier = DefaultCircuitBreakerFailureClassifier(),
        pushback: CircuitBreakerPushback = .default,
        observer: (any CircuitBreakerObserver)? = nil,
        throttle: AdaptiveThrottle? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        let configuration = try CircuitBreakerConfiguration(
            tripRule: tripRule, slowCallRule: slowCallRule, openDuration: openDuration,
            maximumProbes: maximumProbes, successesToClose: successesToClose, probeLease: probeLease,
            classifier: classifier, pushback: pushback)
        self.init(name: name, configuration: configuration, observer: observer, throttle: throttle, clock: clock)
    }

    /// Creates a breaker on an existing elapsed clock, so that a registry's breakers share one
    /// origin, and with its registry's generations, so that theirs keep rising across the keys it forgets.
    package init(
        name: String,
        configuration: CircuitBreakerConfiguration,
        observer: (any CircuitBreakerObserver)?,
        throttle: AdaptiveThrottle? = nil,
        elapsedClock: ElapsedClock,
        generations: CircuitBreakerGenerations? = nil
    ) {
        self.name = name
        self.generations = generations
        self.configuration = configuration
        self.observer = observer
        self.hasObserver = observer != nil
        self.rejectionSlot = CircuitBreakerRejectionCache.slot
        self.throttle = throttle
        self.clock = elapsedClock
        self.storage = CircuitBreakerStorage(
            CircuitBreakerStateMachine(configuration: configuration, generations: generations))
        let hasTimeWindow: Bool
        switch configuration.tripRule.window?.kind {
        case .time: hasTimeWindow = true
        case .count, nil: hasTimeWindow = false
        }
        self.successNeedsNoLock = configuration.tripRule.window == nil
        self.successIsFree = configuration.tripRule.window == nil && configuration.slowCallRule == nil
        self.readsClockOnAdmission = configuration.slowCallRule != nil
        self.readsClockOnSuccess = configuration.slowCallRule != nil || hasTimeWindow
        self.countsSuccessesInTimeWindow = hasTimeWindow
    }

    // MARK: - Observing

    /// The breaker's state and counts now.
    ///
    /// Performs the transitions already due, so an open breaker whose time has
    /// passed reports half-open, and the observer hears of it.
    public func snapshot() -> CircuitBreakerSnapshot {
        let name = self.name
        let step = { (machine: inout CircuitBreakerStateMachine, now: Duration) in
            let transition = machine.advance(to: now)
            return (transition, machine.snapshot(name: name, at: now))
        }
        let first = self.storage.update(at: self.storage.read(self.clock), step)
        var (transition, snapshot) = first.result
        self.report(transition, error: nil)
        if let observed = first.behind {
            // A late reading, or a clock that went back: a second reading tells them apart.
            (transition, snapshot) =
                self.storage.update(at: self.storage.read(self.clock), rebasingFrom: observed, step).result
            self.report(transition, error: nil)
        }
        return snapshot
    }

    /// The state now; see ``snapshot()``.
    ///
    /// Like a snapshot, reading it performs the transitions already due: an open
    /// breaker whose time has passed reports ``CircuitBreakerState/halfOpen``.
    public var state: CircuitBreakerState {
        self.snapshot().state
    }

    // MARK: - Manual controls

    /// Holds the breaker open until ``reset()``: every call is rejected with a
    /// ``CircuitBreakerOpenError`` whose state is ``CircuitBreakerState/isolated``.
    ///
    /// Use it to take a dependency out of service by hand, for maintenance or
    /// from an operator's switch. Calls already running finish, but their
    /// results no longer count. Isolating an isolated breaker does nothing.
    public func isolate() {
        let transition = self.storage.update(at: self.storage.read(self.clock)) { $0.isolate(at: $1) }.result
        self.report(transition, error: nil)
    }

    /// Closes the breaker and forgets its counts, its trips and its probes.
    ///
    /// Calls already running finish, but their results no longer count. A
    /// growing open duration starts again from its initial value.
    public func reset() {
        let transition = self.storage.update(at: self.storage.read(self.clock)) { $0.reset(at: $1) }.result
        self.report(transition, error: nil)
    }

    // MARK: - Internals shared with the registry

    /// Whether the breaker is closed, from the atomic word, without the lock.
    var isClosed: Bool {
        self.storage.isClosed
    }

    /// Tells the observer that the registry forgot this breaker while it was not closed, so that
    /// its key's next breaker is a fresh, closed one: a change to ``CircuitBreakerState/closed``
    /// for ``CircuitBreakerTransitionReason/forgotten``, in a generation of the registry's. Nothing
    /// for a breaker closed, one without an observer, or one not made by a registry with a name.
    ///
    /// Outside the registry's lock: the observer is user code.
    func reportForgotten() {
        guard let observer = self.observer, let generations = self.generations, !self.isClosed else { return }
        // Due transitions first (an open breaker whose time has passed is half-open), reported as usual.
        let snapshot = self.snapshot()
        guard snapshot.state != .closed else { return }
        observer.stateChanged(
            CircuitBreakerStateChangeEvent(
                breakerName: self.name, from: snapshot.state, to: .closed, reason: .forgotten,
                generation: generations.next(), at: snapshot.takenAt))
    }

    func report(_ transition: CircuitBreakerStateMachine.Transition?, error: (any Error)?) {
        guard let transition, let observer = self.observer else { return }
        observer.stateChanged(
            CircuitBreakerStateChangeEvent(
                breakerName: self.name, from: transition.from, to: transition.to, reason: transition.reason,
                generation: transition.generation, at: transition.at, openDuration: transition.openDuration,
                error: error))
    }
}
