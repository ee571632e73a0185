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
    let watcher: DeadlineWatcher
    /// The calls in flight, by number: what each has to hear about, and where it waits.
    let calls = Lock(HedgedCalls())
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
        self.watcher = DeadlineWatcher(clock: ElapsedClock(clock))
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
        let id = self.calls.withLock { $0.open() }
        // One value holds the call's state, handed to the helpers `inout`: local functions
        // capturing the call's variables made each captured variable a heap box.
        var call = HedgedCall<Value>(hedgesLeft: self.maximumHedges)
        await self.startNext(&call, scope: scope, id: id, operation: operation)
        call.timer = self.armTimer(after: delay, for: id)
        let outcome: Result<Value, any Error> = await withTaskCancellationHandler {
            await self.run(&call, scope: scope, id: id, declared: declared, delay: delay, operation: operation)
        } onCancel: {
            self.post(.callerCancelled, to: id)
        }
        if let timer = call.timer { self.watcher.withdraw(timer) }
        if let winner = call.winner, !call.hedges.isEmpty {
            // The losers were superseded: each records it before its cancellation, so a
            // breaker inside counts it as nothing; the call waits for them, as a task group would.
            let attempts = (call.first.map { [$0] } ?? []) + call.hedges
            for (index, loser) in attempts.enumerated() where index != winner { loser.signal.fire() }
            for (index, loser) in attempts.enumerated() where index != winner { loser.task.cancel() }
            for (index, loser) in attempts.enumerated() where index != winner { _ = await loser.task.result }
        }
        self.calls.withLock { $0.close(id) }
        return try outcome.get()
    }

    /// Takes the events of the call `id` until one decides it: a success, or a failure
    /// with nothing left to start.
    private nonisolated(nonsending) func run<Value: Sendable>(
        _ call: inout HedgedCall<Value>,
        scope: CallScope,
        id: UInt64,
        declared: Idempotency,
        delay: Duration,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async -> Result<Value, any Error> {
        while true {
            switch await self.nextEvent(of: id) {
            case .finished(let index):
                call.taken |= 1 << UInt16(index)
                switch await call.attempt(index).task.result {
                case .success(let timed):
                    call.winner = index
                    self.state.withLock { $0.record(timed.latency) }
                    return .success(timed.value)
                case .failure(let error):
                    call.running -= 1
                    let analysis = FailureAnalysis(error)
                    if Rulebook.stopReason(for: analysis, idempotency: declared) != nil { call.mayHedge = false }
                    if call.running == 0 {
                        guard call.mayHedge, !call.callerCancelled, call.hedgesLeft > 0, self.spendHedge() else {
                            return .failure(error)
                        }
                        call.hedgesLeft -= 1
                        await self.startNext(&call, scope: scope, id: id, operation: operation)
                    }
                }
                // A hedge delay taken while this attempt's end was on its way is handled now,
                // after the end, as if the two events had come in that order.
                if call.isHedgeDeferred, !call.anAttemptEndedUntaken {
                    call.isHedgeDeferred = false
                    await self.hedgeIsDue(&call, scope: scope, id: id, delay: delay, operation: operation)
                }
            case .hedgeDue:
                call.timer = nil
                // An attempt that returned before the delay passed is on its way as `.finished`:
                // its outcome decides first, then the delay is handled.
                guard !call.anAttemptEndedUntaken else {
                    call.isHedgeDeferred = true
                    continue
                }
                await self.hedgeIsDue(&call, scope: scope, id: id, delay: delay, operation: operation)
            case .callerCancelled:
                // The caller gave up: no more hedges, and the running attempts are cancelled
                // without a signal, so a breaker inside counts nothing.
                call.callerCancelled = true
                call.first?.task.cancel()
                for hedge in call.hedges { hedge.task.cancel() }
            }
        }
    }

    /// Starts a hedge, if the rules, the budget and the caller allow one, and arms the next.
    private nonisolated(nonsending) func hedgeIsDue<Value: Sendable>(
        _ call: inout HedgedCall<Value>,
        scope: CallScope,
        id: UInt64,
        delay: Duration,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async {
        guard call.mayHedge, !call.callerCancelled, call.hedgesLeft > 0, !Task.isCancelled, self.spendHedge() else {
            return
        }
        call.hedgesLeft -= 1
        self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .hedged))
        await self.startNext(&call, scope: scope, id: id, operation: operation)
        if call.hedgesLeft > 0 { call.timer = self.armTimer(after: delay, for: id) }
    }

    /// Starts the call's next attempt under a supersession signal of its own.
    private nonisolated(nonsending) func startNext<Value: Sendable>(
        _ call: inout HedgedCall<Value>,
        scope: CallScope,
        id: UInt64,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async {
        let index = call.count
        let signal = TimeLimitSignal(enclosing: scope.supersessions)
        var attemptScope = scope
        attemptScope.supersessions = signal
        let task = await self.startAttempt(
            on: operation.isolation, scope: attemptScope, index: index, of: id, signal: signal, operation: operation)
        call.add(HedgedAttempt(task: task, signal: signal))
    }

    /// Registers the next hedge of the call `id` with the shared watcher: no timer task per call.
    private func armTimer(after delay: Duration, for id: UInt64) -> UInt64 {
        self.watcher.register(self.watcher.now() + delay, HedgeDue(hedging: self, call: id))
    }

    /// Starts attempt `index` of the call `id` as a task on the operation's own actor,
    /// so that a main-actor operation starts on the main actor without a hop; the
    /// task tells the call when it ends.
    private func startAttempt<Value: Sendable>(
        on isolation: isolated (any Actor)?,
        scope: CallScope,
        index: Int,
        of id: UInt64,
        signal: TimeLimitSignal,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) -> Task<Timed<Value>, any Error> {
        // Bound around the creation, so the attempt inherits it with the caller's other
        // task-local values; bound here, synchronously, because an `async` binding's
        // closure would leave the caller's actor and come back.
        CallScope.$current.withValue(scope) {
            self.attemptTask(on: isolation, index: index, of: id, signal: signal, operation: operation)
        }
    }

    /// The task of attempt `index`, isolated to `isolation`.
    private func attemptTask<Value: Sendable>(
        on isolation: isolated (any Actor)?,
        index: Int,
        of id: UInt64,
        signal: TimeLimitSignal,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) -> Task<Timed<Value>, any Error> {
        Task { [self] () async throws -> Timed<Value> in
            _ = isolation  // captured, so the task starts on the operation's actor
            defer { self.post(.finished(index), to: id) }  // the caller then awaits the task's result
            let started = self.watcher.now()
            let value: Value
            do {
                value = try await operation()
            } catch {
                signal.complete()  // the attempt's own end, marked before a hedge timer can be taken
                throw error
            }
            signal.complete()
            return Timed(value: value, latency: self.watcher.now() - started)
        }
    }

    /// Tells the call `id` about `event`, waking it if it waits.
    fileprivate func post(_ event: HedgedCallEvent, to id: UInt64) {
        let wake = self.calls.withLock { $0.post(event, to: id) }
        if let (parked, event) = wake { parked.resume(returning: event) }
    }

    /// Waits for the next event of the call `id`.
    private nonisolated(nonsending) func nextEvent(of id: UInt64) async -> HedgedCallEvent {
        await withUnsafeContinuation { (parked: UnsafeContinuation<HedgedCallEvent, Never>) in
            let ready = self.calls.withLock { $0.next(of: id, parking: parked) }
            if let ready { parked.resume(returning: ready) }
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

/// The state of one hedged call while it waits for its attempts.
///
/// The first attempt is kept apart from the hedges, so that a call that starts no hedge
/// allocates no array.
private struct HedgedCall<Value: Sendable> {
    var first: HedgedAttempt<Value>?
    var hedges: [HedgedAttempt<Value>] = []
    var running = 0
    var hedgesLeft: Int
    var mayHedge = true
    var callerCancelled = false
    /// The registration of the next hedge with the watcher, while it is pending.
    var timer: UInt64?
    var winner: Int?
    /// The attempts whose end the call has taken, one bit each.
    var taken: UInt16 = 0
    /// Whether the hedge delay passed while an attempt's end was on its way.
    var isHedgeDeferred = false

    init(hedgesLeft: Int) {
        self.hedgesLeft = hedgesLeft
    }

    /// The number of attempts started.
    var count: Int { self.hedges.count + (self.first == nil ? 0 : 1) }

    func attempt(_ index: Int) -> HedgedAttempt<Value> {
        index == 0 ? self.first! : self.hedges[index - 1]
    }

    mutating func add(_ attempt: HedgedAttempt<Value>) {
        if self.first == nil { self.first = attempt } else { self.hedges.append(attempt) }
        self.running += 1
    }

    /// Whether an attempt's own task marked its end and the call has not taken that end yet.
    var anAttemptEndedUntaken: Bool {
        for index in 0..<self.count where self.taken & (1 << UInt16(index)) == 0 {
            if self.attempt(index).signal.isCompleted { return true }
        }
        return false
    }
}

/// One attempt of a hedged call: its task and the signal it is superseded by.
private struct HedgedAttempt<Value: Sendable> {
    var task: Task<Timed<Value>, any Error>
    var signal: TimeLimitSignal
}

/// An attempt's value and how long it took.
private struct Timed<Value: Sendable>: Sendable {
    var value: Value
    var latency: Duration
}

/// What the watcher does when a hedged call's delay passes: tell the call.
private struct HedgeDue: DeadlineExpiry {
    let hedging: Hedging
    let call: UInt64

    func deadlineReached() {
        self.hedging.post(.hedgeDue, to: self.call)
    }
}
