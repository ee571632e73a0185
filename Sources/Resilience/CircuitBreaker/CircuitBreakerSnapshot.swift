/// What a ``CircuitBreaker`` knows at one moment: its state, its counts and
/// when it opened.
///
/// Taking a snapshot performs the transitions already due (an open breaker
/// whose time has passed reports ``CircuitBreakerState/halfOpen``), so it shows
/// what the next caller would meet. Times are durations on the breaker's clock
/// since the breaker (or its registry) was created; compare ``openedAt`` with
/// ``takenAt`` for the time since it opened. After the clock went back, they are on
/// the breaker's own time line, which counts the jump as no time elapsed (see
/// ``CircuitBreaker``).
///
/// ```swift
/// let snapshot = breaker.snapshot()
/// if snapshot.state == .open, let wait = snapshot.remainingOpenTime {
///     print("\(snapshot.name) open for another \(wait)")
/// }
/// ```
public struct CircuitBreakerSnapshot: Sendable, Hashable {
    /// The breaker's name.
    public var name: String
    /// The state now.
    public var state: CircuitBreakerState
    /// The generation: it goes up at every transition and every reset, by one for a breaker of
    /// its own; a ``CircuitBreakerRegistry``'s breakers draw theirs from one counter of the
    /// registry's, so each starts at the registry's latest and may skip numbers.
    public var generation: UInt64
    /// Counted failures in a row while closed; 0 in the other states.
    public var consecutiveFailures: Int
    /// Calls in the failure-rate rule's window while closed; 0 under the consecutive rule, which keeps no window.
    public var recentCalls: Int
    /// Counted failures among ``recentCalls``.
    public var recentFailures: Int
    /// ``recentFailures`` divided by ``recentCalls``, or `nil` when the window is empty or there is none.
    public var failureRate: Double?
    /// Half-open probe slots taken now.
    public var probesInFlight: Int
    /// Successful probes in the current half-open state.
    public var successfulProbes: Int
    /// Trips since the breaker last closed; the open duration grows with it.
    public var consecutiveTrips: Int
    /// When the breaker last opened or was isolated; `nil` while closed.
    public var openedAt: Duration?
    /// The open time left, when open; `nil` in the other states.
    public var remainingOpenTime: Duration?
    /// When the snapshot was taken.
    public var takenAt: Duration

    /// Creates a snapshot, as a breaker does; tests of code that reads snapshots make their own.
    ///
    /// Every count defaults to zero and every optional to `nil`, so a test names only what it checks.
    public init(
        name: String,
        state: CircuitBreakerState,
        generation: UInt64 = 0,
        consecutiveFailures: Int = 0,
        recentCalls: Int = 0,
        recentFailures: Int = 0,
        failureRate: Double? = nil,
        probesInFlight: Int = 0,
        successfulProbes: Int = 0,
        consecutiveTrips: Int = 0,
        openedAt: Duration? = nil,
        remainingOpenTime: Duration? = nil,
        takenAt: Duration
    ) {
        self.name = name
        self.state = state
        self.generation = generation
        self.consecutiveFailures = consecutiveFailures
        self.recentCalls = recentCalls
        self.recentFailures = recentFailures
        self.failureRate = failureRate
        self.probesInFlight = probesInFlight
        self.successfulProbes = successfulProbes
        self.consecutiveTrips = consecutiveTrips
        self.openedAt = openedAt
        self.remainingOpenTime = remainingOpenTime
        self.takenAt = takenAt
    }
}
