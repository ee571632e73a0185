/// Starts another attempt of a slow call, and takes the first success.
///
/// After ``HedgingDelay`` without an answer, it starts one more attempt, up to
/// ``maximumHedges``; the first attempt that succeeds wins, and the others are
/// cancelled. A cancelled loser runs under a signal it fires first, so a
/// ``CircuitBreaker`` inside counts it as neither a success nor a failure
/// (``Interruption/superseded``). A failed attempt does not end the call while
/// another is running; when none is, and hedges remain, the next starts at once.
///
/// Hedging repeats the call, so it runs only for calls the ``Rulebook`` says may
/// run twice: a call declared ``Idempotency/notIdempotent`` (here or by an
/// enclosing call) runs once, unhedged. A failure the rules end (HTTP 429)
/// starts no more hedges. With a ``RetryBudget``, each hedge spends from it
/// like a retry, and no hedge starts while the budget is spent.
///
/// Attempts run concurrently, so the operation is `@Sendable`; written as
/// `{ @MainActor in ... }`, each attempt runs on the main actor.
///
/// ```swift
/// let hedging = try Hedging(delay: .percentile(95, initial: .milliseconds(50)), maximumHedges: 1)
/// let quote = try await hedging.execute { try await pricing.quote(sku) }
/// ```
public final class Hedging: Sendable {
    /// The name reported in events.
    public let name: String
    /// The most extra attempts a call starts.
    public let maximumHedges: Int
    /// The budget hedges spend from, if any.
    public let budget: RetryBudget?

    let state: Lock<HedgingStateMachine>
    let clock: ElapsedClock
    let observer: (any StrategyObserver)?

    /// Creates a hedging strategy.
    ///
    /// - Parameters:
    ///   - delay: When to start another attempt.
    ///   - maximumHedges: The most extra attempts per call; in 1...10.
    ///   - budget: A budget each hedge spends from, shared with retry policies if you like.
    ///   - name: The name reported in events.
    ///   - observer: Receives a ``StrategyEvent/Kind/hedged`` event for each hedge started.
    ///   - clock: The clock delays and latencies are measured on.
    /// - Throws: ``ConfigurationError`` naming `maximumHedges` when out of range.
    public init(
        delay: HedgingDelay,
        maximumHedges: Int = 1,
        budget: RetryBudget? = nil,
        name: String = "hedging",
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.require((1...10).contains(maximumHedges), "maximumHedges", maximumHedges, "in 1...10")
        self.name = name
        self.maximumHedges = maximumHedges
        self.budget = budget
        self.observer = observer
        self.clock = ElapsedClock(clock)
        self.state = Lock(HedgingStateMachine(delay))
    }

    /// The delay after which the next call would start a hedge.
    public var currentDelay: Duration { self.state.withLock { $0.currentDelay } }

    /// Runs `operation`, hedging it when it is slow and may run twice.
    ///
    /// - Parameters:
    ///   - idempotency: Whether the call may run twice; defaults to what an
    ///     enclosing call declared, else idempotent.
    ///   - operation: One attempt of the call.
    /// - Returns: The value of the first attempt that succeeds.
    /// - Throws: The last failure when every attempt failed.
    public nonisolated(nonsending) func execute<Value: Sendable>(
        idempotency: Idempotency? = nil,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        let declared = idempotency ?? CallScope.current.idempotency ?? .idempotent
        guard declared.isIdempotent else {
            return try await operation()  // the rules forbid a second copy
        }
        let delay = self.state.withLock { $0.currentDelay }
        var scope = CallScope.current
        scope.idempotency = declared
        return try await withThrowingTaskGroup(of: HedgingEvent<Value>.self) { group in
            var signals: [TimeLimitSignal] = []
            var running = 0
            var hedgesLeft = self.maximumHedges
            var lastFailure: (any Error)?
            var mayHedge = true

            func start() {
                let signal = TimeLimitSignal()
                signals.append(signal)
                running += 1
                let attempt = signals.count - 1
                var attemptScope = scope
                attemptScope.supersessions.insert(signal, at: 0)
                group.addTask { [clock, attemptScope] in
                    let started = clock.now()
                    let result: Result<Value, any Error>
                    do {
                        result = .success(
                            try await CallScope.$current.withValue(attemptScope) { try await operation() })
                    } catch {
                        result = .failure(error)
                    }
                    return .finished(attempt: attempt, result, latency: clock.now() - started)
                }
            }
            func armTimer() {
                group.addTask { [clock] in
                    do {
                        try await clock.sleepUntil(clock.now() + delay)
                        return .hedgeDue
                    } catch {
                        return .timerStopped
                    }
                }
            }

            start()
            armTimer()
            while let event = try await group.next() {
                switch event {
                case .finished(let attempt, .success(let value), let latency):
                    for (index, signal) in signals.enumerated() where index != attempt { signal.fire() }
                    group.cancelAll()
                    self.state.withLock { $0.record(latency) }
                    return value
                case .finished(_, .failure(let error), _):
                    running -= 1
                    lastFailure = error
                    let analysis = FailureAnalysis(error)
                    if Rulebook.stopReason(for: analysis, idempotency: declared) != nil { mayHedge = false }
                    if running == 0 {
                        guard mayHedge, hedgesLeft > 0, self.spendHedge() else {
                            group.cancelAll()
                            throw error
                        }
                        hedgesLeft -= 1
                        start()
                    }
                case .hedgeDue:
                    guard mayHedge, hedgesLeft > 0, !Task.isCancelled, self.spendHedge() else { continue }
                    hedgesLeft -= 1
                    self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .hedged))
                    start()
                    if hedgesLeft > 0 { armTimer() }
                case .timerStopped:
                    continue
                }
            }
            throw lastFailure ?? CancellationError()
        }
    }

    /// Takes a hedge from the budget; `false` when the budget is spent.
    private func spendHedge() -> Bool {
        guard let budget = self.budget else { return true }
        guard budget.allowsRetry else { return false }
        budget.recordFailure()
        return true
    }
}

/// What a hedged call's child tasks report.
private enum HedgingEvent<Value: Sendable>: Sendable {
    case finished(attempt: Int, Result<Value, any Error>, latency: Duration)
    case hedgeDue
    case timerStopped
}
