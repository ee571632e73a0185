/// Lets at most a fixed number of calls run at once (a bulkhead), with an optional bounded FIFO queue.
///
/// A call that finds a free slot while no one waits runs at once, in the caller's
/// isolation, for two atomic instructions (one to take the slot, one to give it
/// back) and no lock. When every slot is taken, the caller waits in
/// the queue, first come first served, if there is room; a caller that waits
/// longer than ``queueTimeout``, or finds the queue full, is refused with
/// ``LimiterRejectionError``, which says how many were queued. A queued caller
/// whose task is cancelled leaves the queue at once with `CancellationError`; when a
/// library time limit around it (a ``Timeout``, a policy's `attemptTimeout`) cancelled it,
/// with ``LimiterRejectionError/Reason/waitCutShort`` instead, so that no breaker counts the
/// time-out: the call ended in front of the dependency. A queue timeout that comes as such a
/// limit fires stays ``LimiterRejectionError/Reason/queueTimedOut``, a refusal no breaker counts
/// either, kept by the limit or not.
/// Every queued caller is answered: by a slot, its cancellation or its queue timeout.
/// A caller that left the queue is forgotten soon after, even while others still
/// wait behind a slot held for long: the queue's memory follows the callers waiting
/// in it, not those that came and went.
///
/// ```swift
/// let uploads = try ConcurrencyLimiter(name: "uploads", limit: 4, queueLimit: 100, queueTimeout: .seconds(30))
/// try await uploads.execute {
///     try await storage.upload(file)
/// }
/// ```
public final class ConcurrencyLimiter: Sendable {
    /// The name reported in errors and events.
    public let name: String
    /// The most calls that run at once.
    public let limit: Int
    /// The most callers that wait for a slot; zero for no queue.
    public let queueLimit: Int
    /// The longest a caller waits in the queue, or `nil` for as long as it takes.
    public let queueTimeout: Duration?

    @usableFromInline let storage: ConcurrencyLimiterStorage
    let clock: ElapsedClock
    let observer: (any StrategyObserver)?

    /// Creates a limiter.
    ///
    /// - Parameters:
    ///   - name: The name reported in errors and events.
    ///   - limit: The most calls that run at once; in 1...1,000,000.
    ///   - queueLimit: The most callers that wait for a slot; in 0...1,000,000. Defaults to 0, no queue.
    ///   - queueTimeout: The longest a caller waits in the queue; greater than zero, or `nil` for no limit.
    ///   - observer: Receives a ``StrategyEvent/Kind/queued`` event for each caller that waits in the
    ///     queue, and a ``StrategyEvent/Kind/rejected`` event for each refusal: a full queue, a queue
    ///     timeout, and a wait an enclosing library time limit cut short.
    ///   - clock: The clock the queue timeout is measured on.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public init(
        name: String = "concurrency-limiter",
        limit: Int,
        queueLimit: Int = 0,
        queueTimeout: Duration? = nil,
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.require((1...1_000_000).contains(limit), "limit", limit, "in 1...1000000")
        try ConfigurationError.require(
            (0...1_000_000).contains(queueLimit), "queueLimit", queueLimit, "in 0...1000000")
        if let queueTimeout {
            try ConfigurationError.requirePositive(queueTimeout, "queueTimeout")
            try ConfigurationError.requireAtMostResilienceMaximum(queueTimeout, "queueTimeout")
        }
        self.name = name
        self.limit = limit
        self.queueLimit = queueLimit
        self.queueTimeout = queueTimeout
        self.observer = observer
        self.clock = ElapsedClock(clock)
        self.storage = ConcurrencyLimiterStorage(limit: limit, queueLimit: queueLimit)
    }

    /// The calls running now.
    public var inFlight: Int { self.storage.counts.inFlight }
    /// The callers waiting in the queue now.
    public var queued: Int { self.storage.counts.queued }

    /// Runs `operation` when a slot is free.
    ///
    /// - Parameter operation: The call to limit. It runs in the caller's isolation.
    /// - Returns: The operation's value.
    /// - Throws: ``LimiterRejectionError`` without running the operation when the
    ///   queue is full or the wait outlasted ``queueTimeout``, or, for
    ///   ``LimiterRejectionError/Reason/waitCutShort``, when a library time limit enclosing
    ///   the call ended it while queued; `CancellationError` when the caller's task is
    ///   cancelled while queued, or as a slot is handed to it (its task not yet run on): the
    ///   operation never runs and the slot passes to the next caller; otherwise the
    ///   operation's own error, unchanged.
    @inlinable
    public nonisolated(nonsending) func execute<Value>(operation: () async throws -> Value) async throws -> Value {
        if !self.tryAcquire() {
            try await self.acquireSlowly()
        }
        defer { self.release() }
        return try await operation()
    }

    /// Takes a free slot while no one waits, lock-free; inlined into the caller.
    @inlinable @inline(__always)
    func tryAcquire() -> Bool {
        self.storage.tryAdmit()
    }

    /// Gives the slot back; the lock only when callers wait.
    @inlinable @inline(__always)
    func release() {
        self.storage.release()
    }

    /// Queues the caller, or refuses it.
    @usableFromInline
    nonisolated(nonsending) func acquireSlowly() async throws {
        let caller = QueuedCaller()
        let ticket: UInt64
        switch self.storage.admit(registering: caller) {
        case .admitted:
            return
        case .rejected(let queued):
            let rejection = LimiterRejectionError(limiterName: self.name, reason: .queueFull, queued: queued)
            self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .rejected, error: rejection))
            throw rejection
        case .queued(let queuedTicket):
            ticket = queuedTicket
        }
        self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .queued))
        let deadline = self.queueTimeout.map { self.clock.now() + $0 }
        let timer = deadline.map { deadline in
            Task.detached { [clock, storage, name] in
                try await clock.sleepUntil(deadline)
                guard let timedOut = storage.remove(ticket) else { return }
                let queued = storage.counts.queued
                timedOut.resolve(
                    .failure(
                        LimiterRejectionError(
                            limiterName: name, reason: .queueTimedOut, queued: queued,
                            limitEnd: TimeLimitEnd(clock: clock, deadline: deadline))))
            }
        }
        defer { timer?.cancel() }
        do {
            try await withTaskCancellationHandler {
                try await caller.park()
            } onCancel: { [clock, storage, name] in
                // A queue timeout that had passed before the caller cancelled stays a time-out,
                // whether or not the timer has woken yet: the clock is read at the cancellation.
                guard let caller = storage.remove(ticket) else { return }
                if let deadline, clock.now() >= deadline {
                    caller.resolve(
                        .failure(
                            LimiterRejectionError(
                                limiterName: name, reason: .queueTimedOut, queued: storage.counts.queued,
                                limitEnd: TimeLimitEnd(clock: clock, deadline: deadline))))
                } else {
                    caller.resolve(.failure(CancellationError()))
                }
            }
            // A slot handed over just as the caller was cancelled (granted first, the caller's task
            // not yet run on): the operation has not started, so it never does, and the slot
            // passes to the next caller.
            if Task.isCancelled {
                self.release()
                throw CancellationError()
            }
        } catch let rejection as LimiterRejectionError {
            // A queue timeout that an enclosing library time limit's earlier deadline came before
            // (a clock that passed both in one move woke the queue's timer first, or the limit's
            // cancellation read the clock past both): that limit ends the call, as it would have
            // cut the wait short had the clock stepped, and the refusal says so, in the caller's task.
            if rejection.reason == .queueTimedOut, let deadline,
                CallScope.current.enclosingLimitCameBefore(deadline, on: self.clock)
            {
                let cutShort = LimiterRejectionError(
                    limiterName: self.name, reason: .waitCutShort, queued: self.storage.counts.queued)
                self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .rejected, error: cutShort))
                throw cutShort
            }
            self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .rejected, error: rejection))
            throw rejection
        } catch is CancellationError where LateOperationError.enclosingLimitFired() {
            // A library time limit, not the caller, ended the wait: say that the operation never
            // ran; the limit keeps this as its late error, so no breaker counts the time-out.
            // A refusal like any other: observed.
            let rejection = LimiterRejectionError(
                limiterName: self.name, reason: .waitCutShort, queued: self.storage.counts.queued)
            self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .rejected, error: rejection))
            throw rejection
        }
    }
}
