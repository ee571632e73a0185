/// Admits calls at a configured rate: a token bucket or a sliding window, waiting or rejecting.
///
/// A call that finds a permit runs at once, in the caller's isolation. One that
/// does not either waits for the next permit, when it would free within
/// ``maximumWait``, or is refused with ``LimiterRejectionError`` carrying the
/// time until a permit frees (``LimiterRejectionError/retryAfter``), which a
/// ``RetryPolicy`` reads like a server's hint. Waiting callers are not served
/// in strict arrival order: each takes the first permit free when it wakes.
///
/// A token bucket is the plain discrete one: `tokensPerPeriod` tokens added at the
/// end of each whole period since the last refill, up to `capacity`, the periods'
/// phase kept across idle time.
///
/// ## Cost
/// After each locked step the limiter lends its free permits to a lock-free path,
/// with the span in which taking one is exactly what the locked step would do: for a
/// token bucket, from the period's start until the refill that would fill it past its
/// capacity (a deferred refill adds exactly what the refills skipped would have
/// added, as long as none of them would have lost tokens to the capacity); for a
/// sliding window, the current segment. A call takes a lent permit with one
/// compare-and-exchange and no lock when a cheap reading of the clock meant never to
/// be early falls within that span: with the system's `ContinuousClock` on Linux, the
/// later of the coarse monotonic clock and the coarse wall clock, each plus a margin
/// measured against the precise clock with three ticks to spare (no precise clock read);
/// with any other clock, its own precise reading, so a test clock gets exactly the
/// locked step's answers. Near a span's end (up to its last three ticks, 12 ms with a
/// 250 Hz kernel's tick) calls take the lock.
///
/// The coarse reading is never early, so a permit is never taken after its span ends
/// and the limiter never admits more than its algorithm allows, on two assumptions:
/// the coarse clocks trail the precise one by at most two ticks and a half (between one
/// and two, and a little over two under load, were measured), and the system was not
/// both suspended and its wall clock
/// set back since the margins were measured (they are measured again as soon as the
/// two coarse readings disagree; either event alone leaves the later of them a bound).
/// A loan settled past its span therefore first checks that no bound read during it
/// can have been early: that the margins were not measured again meanwhile and that
/// the monotonic margin still covers the time the system has spent suspended. If it
/// cannot tell, the loan's permits count as taken at the settling time or the span's
/// end, whichever is later, which refuses more, never admits more. Calls take the lock
/// when no permit is lent, outside the span, and for refusals.
///
/// ## A clock that goes back
/// A jump back of the injected clock counts as no time elapsed: a caller whose reading
/// is behind the latest one counted, and would be refused, reads the clock again; a
/// second reading still behind it proves the jump, and the limiter moves its period's
/// (or segment's) start back by it, keeping its tokens and counts. A refusal then names
/// at most a period (a window), the jump frees no permit, and a reading taken before
/// the limiter moved its marks counts as no time elapsed. ``maximumWait`` is spent only
/// by time the clock moved forwards; a sleep already under way ends when the clock's
/// own sleep does.
///
/// ```swift
/// let limiter = try RateLimiter(.tokenBucket(capacity: 20, tokensPerPeriod: 10, period: .seconds(1)))
/// let page = try await limiter.execute { try await api.page(2) }
/// ```
public final class RateLimiter: Sendable {
    /// The name reported in errors and events.
    public let name: String
    /// How permits are counted.
    public let algorithm: RateLimiterAlgorithm
    /// The longest a caller waits for a permit; zero to refuse at once.
    public let maximumWait: Duration

    let storage: RateLimiterStorage
    let clock: ElapsedClock
    let observer: (any StrategyObserver)?

    /// Creates a rate limiter.
    ///
    /// - Parameters:
    ///   - algorithm: How permits are counted.
    ///   - name: The name reported in errors and events.
    ///   - maximumWait: The longest a caller waits for a permit; zero (the default) refuses at once.
    ///   - observer: Receives a ``StrategyEvent/Kind/rejected`` event for each refusal, with its
    ///     retry hint: no permit within `maximumWait`, and a wait an enclosing library time limit
    ///     cut short.
    ///   - clock: The clock permits are counted on.
    /// - Throws: ``ConfigurationError`` naming `maximumWait` when negative or huge.
    public convenience init(
        _ algorithm: RateLimiterAlgorithm,
        name: String = "rate-limiter",
        maximumWait: Duration = .zero,
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.requireNonNegative(maximumWait, "maximumWait")
        try ConfigurationError.requireAtMostResilienceMaximum(maximumWait, "maximumWait")
        self.init(
            unchecked: algorithm, name: name, maximumWait: maximumWait, observer: observer,
            elapsedClock: ElapsedClock(clock))
    }

    init(
        unchecked algorithm: RateLimiterAlgorithm,
        name: String,
        maximumWait: Duration,
        observer: (any StrategyObserver)?,
        elapsedClock: ElapsedClock
    ) {
        self.algorithm = algorithm
        self.name = name
        self.maximumWait = maximumWait
        self.observer = observer
        self.clock = elapsedClock
        self.storage = RateLimiterStorage(
            RateLimiterStateMachine(algorithm, at: elapsedClock.now()), clock: elapsedClock)
    }

    /// The permits free now.
    ///
    /// A clock that went back counts as having stood still (see ``RateLimiter``).
    public var availablePermits: Int {
        self.stepRebasing({ $0.available(at: $1) }, isSettled: { _ in false })
    }

    /// Runs `operation` once a permit is taken.
    ///
    /// - Parameter operation: The call to limit. It runs in the caller's isolation.
    /// - Returns: The operation's value.
    /// - Throws: ``LimiterRejectionError`` without running the operation when no
    ///   permit frees within ``maximumWait``, or, for ``LimiterRejectionError/Reason/waitCutShort``,
    ///   when a library time limit enclosing the call ended it while it waited;
    ///   `CancellationError` when the caller's task is cancelled while waiting, or as its wait
    ///   ends (the permit free, the task not yet run on): the caller takes no permit and the
    ///   operation never runs; otherwise the operation's own error, unchanged.
    @inlinable
    public nonisolated(nonsending) func execute<Value>(operation: () async throws -> Value) async throws -> Value {
        if let retryAfter = self.tryAcquire() {
            try await self.acquireSlowly(retryAfter: retryAfter)
        }
        return try await operation()
    }

    /// Takes a permit now; `nil` when taken, or the time until one frees.
    @usableFromInline
    func tryAcquire() -> Duration? {
        if self.storage.tryTakeLentPermit() { return nil }
        return self.acquireUnderLock()
    }

    /// Takes a permit through the state machine, under the lock; out of line, so that the
    /// lock-free path above saves no registers for it.
    ///
    /// The clock is read before the lock (it may be user code); a caller that waits for the
    /// lock brings an older reading than one already applied, which the machine takes as
    /// its latest time (``RateLimiterStateMachine``).
    @inline(never)
    func acquireUnderLock() -> Duration? {
        let decision = self.stepRebasing({ $0.acquire(at: $1) }, isSettled: { $0 == .granted })
        switch decision {
        case .granted: return nil
        case .denied(let retryAfter): return retryAfter
        }
    }

    /// Runs `body` under the lock at a fresh reading; when the reading was behind the
    /// machine's latest time and `isSettled` does not accept the result, reads the clock
    /// again and runs it once more, re-basing if the clock went back.
    ///
    /// A stale reading (one taken before a later one was applied) reads fresher the second
    /// time; a clock that went back reads behind the latest time again, which, read after
    /// that time was seen under the lock, proves the jump (``RateLimiterStorage``). Two
    /// steps at most: the second needs no third, since its reading is either current
    /// after the re-base or stale against readings applied after the first step's (which
    /// came after the jump, so only ever behind by the time since).
    private func stepRebasing<Result>(
        _ body: (inout RateLimiterStateMachine, Duration) -> Result,
        isSettled: (Result) -> Bool
    ) -> Result {
        let first = self.storage.step(at: self.storage.read(), body)
        guard let observed = first.behind, !isSettled(first.result) else { return first.result }
        return self.storage.step(at: self.storage.read(), rebasingFrom: observed, body).result
    }

    /// Waits for a permit while the wait fits in ``maximumWait``, or refuses.
    ///
    /// A caller that may wait is counted as waiting (``RateLimiterStorage/waiters``) from
    /// before the attempt that decides it waits until after its last attempt, however it
    /// ends (a permit, a refusal, a cancellation), so that a ``RateLimiterRegistry`` never
    /// forgets the limiter while it waits: at the refill the bucket is full until the
    /// woken caller takes its token, and a fresh limiter for the key would then admit
    /// another caller in the same period. The count is read with the limiter's lock held,
    /// and the counted attempt reads the clock after the count is raised, so a registry
    /// that misses the count judged the limiter at a time no later than the attempt's:
    /// if it was full then, the attempt finds a permit and does not wait.
    @usableFromInline
    nonisolated(nonsending) func acquireSlowly(retryAfter firstRetryAfter: Duration) async throws {
        // A refusal that no wait can cure is thrown at once, uncounted (always, with no wait allowed).
        if firstRetryAfter > self.maximumWait { throw self.rejection(.noPermit, retryAfter: firstRetryAfter) }
        self.storage.beginWaiting()
        defer { self.storage.endWaiting() }
        // The attempt that decides to wait, counted: the uncounted refusal before it decides nothing.
        guard var retryAfter = self.tryAcquire() else { return }
        // The time waited is summed over the sleeps, each counted from the clock's reading
        // before it to the one after, and none less than zero: a clock that goes back during
        // a wait spends none of ``maximumWait``, and never lends it more.
        var waited = Duration.zero
        var now = self.clock.now()
        while true {
            if retryAfter > self.maximumWait - waited { throw self.rejection(.noPermit, retryAfter: retryAfter) }
            do {
                try await self.clock.sleepUntil(now + retryAfter)
                // A cancellation that came as the wait ended (the sleep returned, the task had not yet
                // run on) still ends the wait: the caller takes no permit and the operation never runs.
                try Task.checkCancellation()
            } catch is CancellationError where LateOperationError.enclosingLimitFired() {
                // A library time limit, not the caller, ended the wait: the operation never ran, and
                // the limit keeps this as its late error, so no breaker counts the time-out. The
                // permit it waited for frees when the wait would have ended: the caller, and a policy
                // around the limit, learn how long that is from now. A refusal like any other: observed.
                let left = Swift.max(.zero, now + retryAfter - self.clock.now())
                throw self.rejection(.waitCutShort, retryAfter: left)
            }
            // A wait that an enclosing library time limit's earlier deadline passed during, its
            // timer not yet woken (a clock that passed both in one move woke this sleep first):
            // that limit ends the call, as it would have cut the wait short had the clock stepped.
            // The caller takes no permit, and the operation never runs.
            if CallScope.current.enclosingLimitCameBefore(now + retryAfter, on: self.clock) {
                throw self.rejection(.waitCutShort, retryAfter: Swift.max(.zero, now + retryAfter - self.clock.now()))
            }
            guard let next = self.tryAcquire() else { return }
            retryAfter = next
            let later = self.clock.now()
            waited += Swift.max(.zero, later - now)
            now = later
        }
    }

    /// A refusal, observed: of a caller that finds no permit within ``maximumWait``
    /// (``LimiterRejectionError/Reason/noPermit``), or whose wait an enclosing library time
    /// limit ended (``LimiterRejectionError/Reason/waitCutShort``).
    private func rejection(_ reason: LimiterRejectionError.Reason, retryAfter: Duration) -> LimiterRejectionError {
        let rejection = LimiterRejectionError(limiterName: self.name, reason: reason, retryAfter: retryAfter)
        self.observer?.observe(
            StrategyEvent(strategyName: self.name, kind: .rejected, error: rejection, retryAfter: retryAfter))
        return rejection
    }
}
