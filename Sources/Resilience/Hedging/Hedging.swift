import Synchronization

/// Starts another attempt of a slow call, and takes the first success.
///
/// After ``HedgingDelay`` without an answer, it starts one more attempt, up to
/// ``maximumHedges``; the first attempt that succeeds wins, and the others are
/// cancelled. A cancelled loser runs under a signal it fires first, so a
/// ``CircuitBreaker`` inside counts it as neither a success nor a failure
/// (``Interruption/superseded``). A failed attempt does not end the call while
/// another is running, unless the rules end the call on its failure (below); when
/// none is, and hedges remain, the next starts at once, unless the server asked for quiet.
///
/// Hedging repeats the call, so it runs only for calls the ``Rulebook`` says may
/// run twice: a call declared ``Idempotency/notIdempotent`` (here or by an
/// enclosing call) runs once, unhedged. A failure the rules end the call on (HTTP
/// 429, a request that reports it may not be sent again, a cancellation) ends it at
/// once, with that failure: no more hedges start, and the attempts still running are
/// superseded as losers are, so a ``RetryPolicy`` inside one sends nothing more and a
/// ``CircuitBreaker`` inside counts it as nothing. An attempt whose operation had
/// already returned when the call took that failure is left alone, and if it
/// succeeded, it wins, as it would had the call taken it first.
///
/// A failure the rules leave open goes to the ``classifier``, as it would in a ``RetryPolicy``,
/// before a replacement or a further hedge starts: given none, a pipeline's hedging stage asks
/// the classifier of the nearest ``RetryPolicy`` stage inside it, else that of the nearest one
/// around it (settled when the pipeline is built), and otherwise ``DefaultRetryClassifier``
/// decides, as for a policy made with the defaults. So a failure the classifier does not retry
/// (an HTTP 400 or 404, a `DecodingError`) starts no other attempt: the doomed request is not
/// sent again and no budget token is spent. The attempts already running
/// go on, the first that succeeds still wins, and when none does the call ends with the failure
/// that matters (below). A failure the classifier will not retry because its request may have been
/// applied (``RetryStopReason/notIdempotent``: a CloudKit lost response in a call that declares
/// nothing) ends the call at once, as the rules' own "not idempotent" does, and tells the policies
/// around it so. The rules stay on top: a 429 starts nothing, whatever the classifier says, and a
/// cancellation ends the call. The classifier is asked only when an attempt fails.
///
/// With a ``RetryBudget``, each hedge spends a token from it like a retry, no hedge
/// starts while the budget is spent, and each call that succeeds gives back the
/// budget's ``RetryBudget/tokenRatio``, once, as a ``RetryPolicy``'s success does; a call that
/// ends on a 429 takes a token, as a policy that stops on one does, unless its caller gave up. An
/// attempt that replaces one the library's own gates refused before it ran (a full
/// ``ConcurrencyLimiter``, a ``RateLimiter`` out of permits, an ``AdaptiveThrottle``,
/// an open ``CircuitBreaker``) or a request that never left an offline device costs
/// no token, as retrying it would not: nothing reached the dependency. The budget must
/// still allow a retry, as a policy's must, and the replacement still counts against
/// ``maximumHedges``, which bounds a call whose limiter keeps refusing. It starts at
/// once, as any replacement does, unless the refusal carries a retry-after hint (a rate
/// limiter's says when its next permit comes), which holds it back as below: a
/// replacement that waited out the hedge delay instead would turn hedging into a queue
/// in front of a bulkhead that chose to refuse.
///
/// A percentile delay (``HedgingDelay/percentile(_:ofLast:initial:)``) learns from
/// each successful call the time from its start to its first success. For a call no
/// hedge overtook, that is its first attempt's latency. For a call a hedge won, it is
/// the delay plus the hedge's own time: less than the first attempt would have taken,
/// and more than the delay, so a call's recorded time exceeds the delay exactly when
/// its first attempt did, and the percentile still estimates how long one attempt
/// takes. Recording the winning hedge's own, shorter time instead would pull the delay
/// down with each hedged call, and hedge more calls: at the 95th percentile, with
/// attempts drawn alike and a late attempt far later than a hedge, the delay would
/// settle near the 78th percentile and hedge about one call in five. A reading across
/// which the clock went back is left out.
///
/// A failed attempt's retry-after hint (a `Retry-After` header, say) holds the
/// call's next attempt back until the hint has passed on the strategy's clock,
/// whether that attempt would have started at once or at its hedge delay. A hint
/// longer than the hedge delay starts no more hedges: waiting it out is a retry's
/// work, left to whoever is around the call (a ``RetryPolicy`` honours the hint
/// within its ``RetryPolicy/maximumRetryAfter`` and deadline). The hint also reaches the
/// attempts still running, whose requests are already out: a ``RetryPolicy`` nested in one
/// does not send again before the hint has passed, and stops instead when it will not wait
/// that long (the call then ends with the hint's failure, as below). A hint from one of the
/// library's own gates (a rate limiter's) holds back only the call's next attempt: a policy
/// nested in a running attempt meets that gate itself when it asks it. A server's hint heard
/// deeper down, by a hedged call or a ``RetryPolicy`` nested in one attempt, reaches the call as
/// soon as it is heard, not when the nested call ends: the call's other attempts, and the
/// policies in them, hold back as above, and its next attempt does not start before the hint
/// has passed.
///
/// When no attempt succeeds, the call ends with the failure that matters to the
/// rules, as the operation threw it: the first one the rules ended the call on
/// (a 429, a request that is not idempotent or that the classifier says may have
/// been applied, a cancellation); else the one with
/// the longest retry-after hint; else the last. So a 429 one attempt got while
/// another was still running reaches a ``RetryPolicy`` (which does not retry it)
/// and a ``CircuitBreaker`` (which opens for its hint) around the call when it
/// comes, not when the other attempt ends. The other attempts' hints are not
/// merged into it.
///
/// Attempts run concurrently, so the operation is `@Sendable`. It keeps the
/// caller's isolation, as a `Task`'s closure does: written on the main actor, it is
/// isolated to the main actor and each attempt runs there. The call's own work between its
/// attempts runs in the caller's isolation too: it starts hedges and replacements, asks the
/// ``classifier`` and reports to the observer there.
///
/// A caller that cancels ends the call with `CancellationError`. Its cancellation reaches every
/// running attempt at once, each hedge and replacement in its own task included, as the
/// caller's and not as a supersession: what is nested in an attempt reads a failure that came
/// after it as the caller giving up (a policy does not retry it, a breaker does not count it).
/// When an enclosing library time limit (a ``Timeout``, a policy's attempt timeout) fired
/// and an attempt then failed, the call ends with that failure as above instead, and the limit keeps
/// it (``TimeoutError/operationError``), so what it says about the request still counts.
/// Such a limit whose deadline has passed ends the call before its first attempt, or its next
/// hedge or replacement, starts, also while the limit's timer still sleeps (a clock that jumped
/// past the hedge delay and the deadline in one move may wake the hedge first): the call starts
/// nothing, its running attempts are cancelled as the caller's, and the limit reports its
/// time-out, as when its timer woke first. A deadline an enclosing ``RetryPolicy`` hands down
/// that has passed starts no other attempt either.
///
/// The first attempt starts at once, on the caller's thread when the caller already
/// runs where the attempt must (the same actor, or no actor); one that returns before it
/// first suspends hands its outcome straight back, and nothing is watched for the call.
/// What the first attempt does before its first `await` delays the hedges, since the call
/// that starts them waits meanwhile; the hedge delay counts from the call's start, so a
/// hedge whose delay passed by then starts as soon as the attempt suspends. Put long
/// synchronous work behind an `await` (such as `await Task.yield()`) when a hedge must be
/// able to overtake it. The caller's cancellation, and with it the limit of an enclosing
/// ``Timeout``, reaches the first attempt from its start on, also while it still runs
/// synchronously: `Task.isCancelled` turns true inside it.
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
    /// Decides which failed attempts are worth another, as a ``RetryPolicy``'s classifier
    /// decides which failures are worth a retry; `nil` when none was given.
    ///
    /// Asked only when an attempt fails, after the ``Rulebook``'s rules, before a replacement
    /// or a further hedge starts (see ``Hedging``). Without one, a ``Hedging`` stage of a
    /// ``ResiliencePipeline`` asks the classifier of the nearest ``RetryPolicy`` stage inside
    /// it, else that of the nearest one around it in the pipeline, and otherwise
    /// ``DefaultRetryClassifier`` decides, as it does for a policy made with the defaults. A
    /// `nil` answer falls back to ``DefaultRetryClassifier`` too.
    public let classifier: (any RetryClassifier)?

    let state: Lock<HedgingStateMachine>
    /// The delay, when it is fixed: then there are no latencies to learn from, and neither a
    /// call's start nor its success takes the state's lock.
    let fixedDelay: Duration?
    let watcher: DeadlineWatcher
    /// The calls in flight, by number: what each has to hear about, and where it waits.
    let calls: Lock<HedgedCalls>
    /// The number of the last call begun (the original's, for a pipeline's copy: see ``original``).
    let callNumbers = Atomic<UInt64>(0)
    /// The failed attempts this strategy's calls have taken and carried on after, for tests
    /// that wait until a call has heard of a failure (the original's, for a pipeline's copy).
    let failuresTaken = Atomic<Int>(0)
    /// The strategy this one is a pipeline's copy of, whose state it shares (its delay, its
    /// calls in flight and their numbers, its watcher); `nil` for a strategy made by its caller.
    let original: Hedging?
    /// The classifier of the nearest ``RetryPolicy`` stage around this strategy in a pipeline,
    /// settled when the pipeline was built (`HedgingStagesResolving`): asked when the strategy
    /// has no ``classifier`` of its own and the stages inside it hold no retry stage. Set on a
    /// pipeline's copy only, so a direct call never asks it.
    let retryClassifierAround: (any RetryClassifier)?
    let observer: (any StrategyObserver)?
    /// The idempotency ``classifier`` was made for (``RetryClassifier/declaredIdempotency``),
    /// read once: a classifier's declaration is part of its configuration.
    let classifierDeclaration: Idempotency?
    /// The most extra attempts a call starts, for the inlined call path.
    @usableFromInline var hedgeLimit: Int { self.maximumHedges }

    /// Creates a hedging strategy.
    ///
    /// - Parameters:
    ///   - delay: When to start another attempt.
    ///   - maximumHedges: The most extra attempts per call; in 1...10.
    ///   - classifier: Decides which failed attempts are worth another; `nil` answers fall back
    ///     to ``DefaultRetryClassifier``. Without one, a pipeline's hedging stage asks the
    ///     classifier of the nearest ``RetryPolicy`` stage inside it, else that of the nearest
    ///     one around it, else the default rules decide. Its
    ///     ``RetryClassifier/declaredIdempotency`` counts as a policy's does: a classifier made
    ///     for a `POST` runs calls that declare nothing once, unhedged.
    ///   - budget: A budget each hedge spends from, and each successful call gives back to,
    ///     shared with retry policies if you like.
    ///   - name: The name reported in events.
    ///   - observer: Receives a ``StrategyEvent/Kind/hedged`` event for each attempt started
    ///     while another of the call still runs, in the caller's isolation. An attempt that
    ///     replaces one that failed, with none running, counts against `maximumHedges` and
    ///     spends from `budget` as a retry of that failure would, but is not reported as a hedge. An attempt that fails as the
    ///     hedge delay passes is a tie, taken in the order the two reach the call: the delay first,
    ///     the attempt it starts is reported as a hedge.
    ///   - clock: The clock delays and latencies are measured on.
    /// - Throws: ``ConfigurationError`` naming `maximumHedges` when out of range.
    public init(
        delay: HedgingDelay,
        maximumHedges: Int = 1,
        classifier: (any RetryClassifier)? = nil,
        budget: RetryBudget? = nil,
        name: String = "hedging",
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.require((1...10).contains(maximumHedges), "maximumHedges", maximumHedges, "in 1...10")
        self.name = name
        self.maximumHedges = maximumHedges
        self.budget = budget
        self.classifier = classifier
        self.classifierDeclaration = classifier?.declaredIdempotency
        self.observer = observer
        self.watcher = DeadlineWatcher(clock: ElapsedClock(clock))
        self.state = Lock(HedgingStateMachine(delay))
        self.calls = Lock(HedgedCalls())
        self.original = nil
        self.retryClassifierAround = nil
        switch delay.kind {
        case .fixed(let fixed): self.fixedDelay = fixed
        case .percentile: self.fixedDelay = nil
        }
    }

    /// A pipeline's copy of `strategy`, for a place where `classifier` is that of the nearest
    /// ``RetryPolicy`` stage around it: the same configuration, sharing the state of the strategy
    /// it copies (its delay and the latencies it learns from, its calls in flight and their
    /// numbers, its watcher), so the two are one strategy, judged by the classifier around it.
    init(copying strategy: Hedging, retryClassifierAround classifier: any RetryClassifier) {
        self.name = strategy.name
        self.maximumHedges = strategy.maximumHedges
        self.budget = strategy.budget
        self.classifier = strategy.classifier
        self.classifierDeclaration = strategy.classifierDeclaration
        self.observer = strategy.observer
        self.watcher = strategy.watcher
        self.state = strategy.state
        self.fixedDelay = strategy.fixedDelay
        self.calls = strategy.calls
        self.original = strategy.original ?? strategy
        self.retryClassifierAround = classifier
    }

    /// The delay after which the next call would start a hedge.
    public var currentDelay: Duration { self.state.withLock { $0.currentDelay } }

    /// Runs `operation`, hedging it when it is slow and may run twice.
    ///
    /// A call that may not run twice runs once, unhedged. Declared so here, it hands the
    /// declaration down to the policies nested inside, as a policy's call does, and when
    /// it fails in a way that does not prove its request never left, it tells the
    /// policies around it, which then stop with ``RetryStopReason/notIdempotent``
    /// instead of sending it again.
    ///
    /// - Parameters:
    ///   - idempotency: Whether the call may run twice, handed down to the calls nested
    ///     inside; defaults to what an enclosing call declared, else idempotent.
    ///   - operation: One attempt of the call. It runs in the caller's isolation: a closure
    ///     written on the main actor is isolated to it (the way `Task.init`'s is), and every
    ///     copy of it runs there.
    /// - Returns: The value of the first attempt that succeeds.
    /// - Throws: The first failure the rules end the call on (a 429, say), as soon as it
    ///   comes, unless an attempt had already succeeded; otherwise, when every attempt
    ///   failed, the one with the longest retry-after hint, else the last, as the
    ///   operation threw it. `CancellationError` when the caller's task is cancelled (see
    ///   above for an enclosing time limit): no hedge or replacement starts after that, also
    ///   when its delay ended just as the caller was cancelled (the caller's task not yet run on).
    @inlinable
    public nonisolated(nonsending) func execute<Value: Sendable>(
        idempotency: Idempotency? = nil,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.hedge(idempotency: idempotency, inside: (), operation: operation)
    }

    /// The body of ``execute(idempotency:operation:)``, for a call whose operation runs `stages`:
    /// the rest of a pipeline, for a ``Hedging`` stage, else nothing (`()`).
    ///
    /// `stages` is read only when an attempt fails and the strategy has no ``classifier`` of its
    /// own: the nearest ``RetryPolicy`` stage in it then lends its classifier
    /// (``retryStageClassifier(in:)``), else ``retryClassifierAround`` does. Always inlined into
    /// its two callers, so a direct call pays nothing for it.
    @inlinable @inline(__always)
    nonisolated(nonsending) func hedge<Value: Sendable, Stages>(
        idempotency: Idempotency?,
        inside stages: Stages,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        // Inlined into the caller, so the call's generic values are specialized for its
        // value type; everything that does not depend on it stays out of line.
        guard let start = self.begin(idempotency) else {
            // The rules forbid a second copy: one run, with the declaration handed down.
            return try await self.runOnce(declaring: idempotency, operation: operation)
        }
        // A time limit around the call whose deadline has passed, its timer perhaps still asleep,
        // ends the call before its first attempt, as it would before a hedge: nothing is sent,
        // and the limit, which the call claimed for it, reports its time-out.
        if start.isEndedByALimit { throw CancellationError() }
        // One value holds the call's state, handed to the helpers `inout`: local functions
        // capturing the call's variables made each captured variable a heap box.
        var call = HedgedCall<Value>(hedgesLeft: self.hedgeLimit)
        // The hedge is due a delay after the first attempt starts, however long that attempt
        // then runs on the caller's thread before it first suspends.
        let started = self.now()
        let early = await self.startFirst(&call, start, at: started, operation: operation)
        switch early {
        case .success(let timed)?:
            // The first attempt returned before it first suspended: it won alone, with
            // nothing to watch, no hedge to arm, no loser to cancel and no entry in the table.
            self.recordSuccess(timed.latency)
            return timed.value
        case .failure?:
            self.open(start.id)  // failed at once: the call goes on, and hears of its hedges there
        case nil:
            break  // suspended: the call entered the table before the attempt could end
        }
        call.timer = self.armTimer(at: started + start.delay, for: start.id)
        call.timerDue = started + start.delay
        call.started = started
        let outcome = await self.watch(
            &call, start, handedOver: early, inside: stages, isolation: #isolation, operation: operation)
        if let timer = call.timer { self.disarmTimer(timer) }
        if call.winner != nil || call.isEndedByRule, !call.hedges.isEmpty {
            // The losers were superseded, by the winner or by a failure the rules end the call on:
            // each records it before its cancellation, so a breaker inside counts it as nothing;
            // the call waits for them, as a task group would.
            let winner = call.winner ?? -1
            let attempts = (call.first.map { [$0] } ?? []) + call.hedges
            for (index, loser) in attempts.enumerated() where index != winner { loser.signal.fire() }
            for (index, loser) in attempts.enumerated() where index != winner { loser.task.cancel() }
            for (index, loser) in attempts.enumerated() where index != winner { _ = await loser.task.result }
        }
        self.close(start.id)
        if case .failure(let error) = outcome {
            // An attempt in which a call that may not run twice succeeded tells the policies around.
            call.first?.signal.recordFailure(error)
            for hedge in call.hedges { hedge.signal.recordFailure(error) }
            // So does a call that ends with a failure its classifier said must not be sent again.
            if call.failures.endingIsNotIdempotentVerdict, !call.callerCancelled {
                self.recordNotIdempotentVerdict(on: error)
            }
        }
        return try outcome.get()
    }

    /// Runs the call's loop (``run(_:_:handedOver:inside:operation:)``) in `isolation`, the
    /// caller's, under the caller's cancellation handler.
    ///
    /// The loop starts the hedges and replacements, asks the classifier, arms the timers and
    /// reports each hedge to the observer, so it runs where the caller runs: the observer hears
    /// the call's events in the caller's isolation, as ``StrategyObserver`` promises, and a call
    /// whose first attempt suspended and then won takes its outcome without leaving the caller's
    /// actor. Hence this function, isolated to `isolation`, whose handler's operation captures it:
    /// a closure written in a `nonisolated(nonsending)` function is isolated to no actor, so one
    /// written in ``hedge(idempotency:inside:operation:)`` would run the loop on the global
    /// executor.
    @inlinable
    func watch<Value: Sendable, Stages>(
        _ call: inout HedgedCall<Value>,
        _ start: HedgedCallStart,
        handedOver: Result<Timed<Value>, any Error>?,
        inside stages: Stages,
        isolation: isolated (any Actor)?,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async -> Result<Value, any Error> {
        let first = call.attempt(0).signal
        return await withTaskCancellationHandler {
            _ = isolation  // captured, so the loop runs in the caller's isolation
            return await self.run(&call, start, handedOver: handedOver, inside: stages, operation: operation)
        } onCancel: {
            self.callerCancelled(start.id, first: first)
        }
    }

    /// Takes the wakes of the call until one decides it: a success, or a failure
    /// with nothing left to start.
    ///
    /// `handedOver` is the failure of a first attempt that failed before it first
    /// suspended: the call takes it first, as if it had been handed over. `stages` is what
    /// the operation runs, read on a failure only (see ``hedge(idempotency:inside:operation:)``).
    @inlinable
    nonisolated(nonsending) func run<Value: Sendable, Stages>(
        _ call: inout HedgedCall<Value>,
        _ start: HedgedCallStart,
        handedOver: Result<Timed<Value>, any Error>?,
        inside stages: Stages,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async -> Result<Value, any Error> {
        var early = handedOver
        while true {
            // The attempt that ended and its outcome; every other wake is handled and loops.
            let index: Int
            let result: Result<Timed<Value>, any Error>
            if let outcome = early {
                early = nil
                (index, result) = (0, outcome)
            } else {
                switch await self.nextWake(of: start.id, as: Value.self) {
                case .ended(let ended, let outcome):
                    (index, result) = (ended, outcome)  // handed over by the attempt: no second wait
                case .event(.finished(let ended)):
                    (index, result) = (ended, await call.attempt(ended).task.result)
                case .event(.hedgeDue):
                    call.timer = nil
                    // An attempt that returned before the delay passed is on its way (handed over,
                    // or as `.finished`): its outcome decides first, then the delay is handled.
                    guard !call.anAttemptEndedUntaken else {
                        call.isHedgeDeferred = true
                        continue
                    }
                    await self.hedgeIsDue(&call, start, operation: operation)
                    if call.running == 0, call.timer == nil { return .failure(call.ending) }
                    continue
                case .event(.callerCancelled):
                    // The caller gave up: no more hedges. The handler that posted this has already
                    // cancelled the running attempts (``callerCancelled(_:first:)``).
                    call.callerCancelled = true
                    // A call waiting out a retry-after hint, with no attempt running, ends now.
                    if call.running == 0 { return .failure(call.ending) }
                    continue
                }
            }
            call.taken |= 1 << UInt16(index)
            // The loop runs in the caller's task: once that is cancelled, the caller gave up,
            // even before the call takes the event its cancellation handler posts. An attempt's
            // end taken first (a failure that came just before the cancellation, or while the
            // caller's task waited to run again) must not start a replacement, and a call that
            // ends on it ends as the caller's cancellation.
            if Task.isCancelled { call.callerCancelled = true }
            if call.isEndedByRule {
                // A failure the rules end the call on was taken: only the attempts that had already
                // ended by then are still heard, and the first of them that succeeded wins.
                let bit: UInt16 = 1 << UInt16(index)
                guard call.settling & bit != 0 else {
                    call.running -= 1  // a superseded attempt, whatever it ended with
                    continue
                }
                call.settling &= ~bit
                if case .success(let timed) = result {
                    call.winner = index
                    self.recordSuccess(timed.latency)
                    return .success(timed.value)
                }
                call.running -= 1
                if call.settling == 0 { return .failure(call.ending) }
                continue
            }
            switch result {
            case .success(let timed):
                call.winner = index
                self.recordSuccess(timed.latency)
                return .success(timed.value)
            case .failure(let error):
                call.running -= 1
                // The call keeps the failure it ends with if no attempt succeeds: the first one
                // the rules ended hedging on, else the one with the longest retry-after hint.
                // The rules first, then the classifier: a failure it will not retry starts no other
                // attempt, and one it says may have been applied and must not be sent again ends
                // the call as the rules' own "not idempotent" does.
                let judged = self.note(
                    error, of: start, attempts: call.count, inside: stages, into: &call.failures)
                if !judged { call.mayHedge = false }
                // A failure the rules end the call on (a 429, a request that may not be sent again,
                // a cancellation) ends it now: the attempts still running are superseded, so a
                // policy inside one sends nothing more, and the call waits for none of their answers.
                // Not once the caller gave up: its handler already cancelled them, as the caller's.
                if call.failures.lastEndsCall, !call.callerCancelled, !Task.isCancelled {
                    // Server pushback costs a budget token, as it does a policy that stops on it.
                    if call.failures.lastIsTooManyRequests { self.spendOnPushback() }
                    call.mayHedge = false
                    call.isEndedByRule = true
                    call.settling = call.supersedeRunning()
                    if call.settling == 0 { return .failure(call.ending) }
                    continue
                }
                // The server's retry-after hint reaches the attempts still running: a policy nested
                // in one waits at least until it has passed before it sends again.
                if let end = call.failures.lastQuietEnd { call.holdQuiet(until: end) }
                self.tookFailure()
                // The attempt held a call that may not run twice: no other copy may send it again.
                if call.holdsNotIdempotentCall { call.mayHedge = false }
                // A server's retry-after hint that has not passed yet holds the next attempt back.
                let quiet = call.quietUntil.flatMap { $0 > self.now() ? $0 : nil }
                if call.running == 0 {
                    guard call.mayHedge, !call.callerCancelled, call.hedgesLeft > 0 else {
                        return .failure(call.ending)
                    }
                    if let quiet {
                        self.moveTimer(&call, to: quiet, for: start.id)  // not at once: when the hint has passed
                    } else {
                        // A time limit around the call whose deadline has passed ends it here, as
                        // its cancellation would have a moment earlier, and a deadline handed down
                        // that has passed stops it: no replacement is sent after either.
                        if let end = self.enclosingLimitStops(start) {
                            if end == .endedByALimit { call.callerCancelled = true }
                            return .failure(call.ending)
                        }
                        // Replacing a failed attempt costs a token as retrying it would.
                        guard self.spendHedge(charging: call.failures.lastCostsToken) else {
                            return .failure(call.ending)
                        }
                        call.hedgesLeft -= 1
                        await self.startNext(&call, start, operation: operation)
                    }
                } else if let quiet, call.mayHedge, call.timer != nil, let due = call.timerDue, due < quiet {
                    self.moveTimer(&call, to: quiet, for: start.id)  // the next hedge waits for the hint
                }
            }
            // A hedge delay taken while this attempt's end was on its way is handled now,
            // after the end, as if the two events had come in that order; unless a timer was
            // armed since, for a retry-after hint, which then decides when the hedge starts.
            if call.isHedgeDeferred, !call.anAttemptEndedUntaken {
                call.isHedgeDeferred = false
                if call.timer == nil {
                    await self.hedgeIsDue(&call, start, operation: operation)
                    if call.running == 0, call.timer == nil { return .failure(call.ending) }
                }
            }
        }
    }

    /// Starts a hedge, if the rules, the budget and the caller allow one, and arms the next.
    ///
    /// The call's timer has been taken: none is armed. Before a retry-after hint of a failed
    /// attempt has passed, it arms the timer for the hint's end instead. With no attempt
    /// running, the attempt it starts replaces a failed one, which is not reported as a hedge
    /// (as when it starts at once).
    @inlinable
    nonisolated(nonsending) func hedgeIsDue<Value: Sendable>(
        _ call: inout HedgedCall<Value>,
        _ start: HedgedCallStart,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async {
        guard call.mayHedge, !call.callerCancelled, call.hedgesLeft > 0, !Task.isCancelled else { return }
        // A call inside an attempt declared itself not idempotent: another copy would send it again.
        if call.holdsNotIdempotentCall {
            call.mayHedge = false
            return
        }
        if let quiet = call.quietUntil, self.now() < quiet {
            self.moveTimer(&call, to: quiet, for: start.id)
            return
        }
        // A time limit around the call whose deadline has passed, its timer perhaps still asleep,
        // ends the call as its cancellation would: the attempts running are cancelled as the
        // caller's, and the limit reports its time-out. A deadline handed down that has passed
        // ends hedging: the attempts running go on, and no other starts.
        if let end = self.enclosingLimitStops(start) {
            call.mayHedge = false
            if end == .endedByALimit {
                call.callerCancelled = true
                self.callerCancelled(start.id, first: call.attempt(0).signal)
            }
            return
        }
        // A hedge beside a running attempt costs a token; a replacement costs what retrying
        // the failure it replaces would.
        guard self.spendHedge(charging: call.running > 0 || call.failures.lastCostsToken) else { return }
        call.hedgesLeft -= 1
        if call.running > 0 { self.reportHedge() }
        await self.startNext(&call, start, operation: operation)
        if call.hedgesLeft > 0 { self.moveTimer(&call, to: self.now() + start.delay, for: start.id) }
    }

    /// Arms the call's timer for `deadline`, withdrawing the one armed before.
    ///
    /// A timer the watcher already took as due cannot be withdrawn: its event is on its way,
    /// and the call arms the next timer when it takes that event (``hedgeIsDue(_:_:operation:)``),
    /// so that at most one timer of the call is ever armed or on its way.
    @inlinable
    func moveTimer<Value: Sendable>(_ call: inout HedgedCall<Value>, to deadline: Duration, for id: UInt64) {
        if let timer = call.timer, !self.withdrawTimer(timer) { return }
        call.timer = self.armTimer(at: deadline, for: id)
        call.timerDue = deadline
    }

    /// Starts the call's first attempt at once and returns its outcome if it ended before
    /// it first suspended.
    @inlinable
    nonisolated(nonsending) func startFirst<Value: Sendable>(
        _ call: inout HedgedCall<Value>,
        _ start: HedgedCallStart,
        at started: Duration,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async -> Result<Timed<Value>, any Error>? {
        let (scope, signal) = self.attemptScope(start.scope)
        let (task, early) = await self.startFirstAttempt(
            on: operation.isolation, scope: scope, of: start.id, at: started, signal: signal, operation: operation)
        call.add(HedgedAttempt(task: task, signal: signal))
        return early
    }

    /// Starts the call's next attempt under a supersession signal of its own.
    @inlinable
    nonisolated(nonsending) func startNext<Value: Sendable>(
        _ call: inout HedgedCall<Value>,
        _ start: HedgedCallStart,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async {
        let index = call.count
        let (scope, signal) = self.attemptScope(start.scope, after: call.first?.signal)
        // Registered before its task exists, so the caller's cancellation handler reaches the
        // attempt from its first instruction on, or has it start cancelled.
        self.register(signal, of: start.id)
        let task = await self.startAttempt(
            on: operation.isolation, scope: scope, index: index, of: start.id, at: call.started, signal: signal,
            operation: operation)
        call.add(HedgedAttempt(task: task, signal: signal))
    }

    /// Starts attempt `index` of the call `id` as a task on the operation's own actor,
    /// so that a main-actor operation starts on the main actor without a hop; the
    /// task hands its outcome to the call when it ends, with its latency counted from
    /// `started`, the call's start.
    @inlinable
    func startAttempt<Value: Sendable>(
        on isolation: isolated (any Actor)?,
        scope: CallScope,
        index: Int,
        of id: UInt64,
        at started: Duration,
        signal: HedgedAttemptSignal,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) -> Task<Timed<Value>, any Error> {
        // Bound around the creation, so the attempt inherits it with the caller's other
        // task-local values; bound here, synchronously, because an `async` binding's
        // closure would leave the caller's actor and come back.
        CallScope.handedDown.withValue(scope) {
            self.attemptTask(on: isolation, index: index, of: id, at: started, signal: signal, operation: operation)
        }
    }

    /// The task of hedge `index`, isolated to `isolation`.
    @inlinable
    func attemptTask<Value: Sendable>(
        on isolation: isolated (any Actor)?,
        index: Int,
        of id: UInt64,
        at started: Duration,
        signal: HedgedAttemptSignal,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) -> Task<Timed<Value>, any Error> {
        Task { [self] () async throws -> Timed<Value> in
            _ = isolation  // captured, so the task starts on the operation's actor
            return try await self.attempt(
                index, of: id, at: started, signal: signal, handOver: nil, operation: operation)
        }
    }

    /// Starts the task of the call's first attempt on `isolation` (the main actor for a
    /// main-actor operation), and runs it there at once, up to its first suspension;
    /// returns the task, and the attempt's outcome if it ended before it first suspended.
    /// The call is in the table (``open(_:)``) exactly when no outcome is returned.
    ///
    /// `Task.immediate` runs the task on the caller's thread when the caller already runs
    /// on `isolation` (a main-actor operation from the main actor, a nonisolated one from
    /// a nonisolated caller); otherwise the call hops here first, as it hopped to start a
    /// plain task. No enqueue and no worker thread woken for the start. Where
    /// `Task.immediate` is missing (Apple systems before their 2026 releases) the task is
    /// a plain `Task`, and the call goes on as for an attempt that suspended.
    ///
    /// An attempt that ends before it first suspends hands its outcome over through the
    /// continuation this function waits on, resumed before it is awaited: no suspension,
    /// and no wait for the task's result. Otherwise this function resumes it with no
    /// outcome once the task has suspended; the signal decides which of the two does,
    /// once.
    ///
    /// The caller's cancellation handler is installed here, after the hop to `isolation` and
    /// before the task starts, and stays until the start is settled; the call installs its
    /// own afterwards. It cancels the attempt through the task the attempt publishes as it
    /// starts (``TimeLimitSignal/attemptStarted(_:guardedBy:)``), so a caller cancelled while
    /// the attempt still runs synchronously on its thread (an enclosing ``Timeout`` whose
    /// limit passed, say) reaches it. A caller cancelled before this point finds the handler
    /// run at once, and the attempt starts cancelled.
    @inlinable
    func startFirstAttempt<Value: Sendable>(
        on isolation: isolated (any Actor)?,
        scope: CallScope,
        of id: UInt64,
        at started: Duration,
        signal: HedgedAttemptSignal,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async -> (Task<Timed<Value>, any Error>, Result<Timed<Value>, any Error>?) {
        var task: Task<Timed<Value>, any Error>?
        let early = await withTaskCancellationHandler {
            await withUnsafeContinuation(isolation: isolation) {
                (handOver: UnsafeContinuation<Result<Timed<Value>, any Error>?, Never>) in
                // Bound around the creation, synchronously, as for a hedge (`startAttempt`).
                task = CallScope.handedDown.withValue(scope) {
                    if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                        Task.immediate { [self] () async throws -> Timed<Value> in
                            _ = isolation  // captured, so the task starts on the operation's actor
                            return try await self.attempt(
                                0, of: id, at: started, signal: signal, handOver: handOver, operation: operation)
                        }
                    } else {
                        Task { [self] () async throws -> Timed<Value> in
                            _ = isolation
                            return try await self.attempt(
                                0, of: id, at: started, signal: signal, handOver: handOver, operation: operation)
                        }
                    }
                }
                // An attempt whose operation returned hands its outcome over, now or in a moment:
                // the call needs no entry in the table. Otherwise the call enters the table before
                // it closes the start, so an attempt that ends after that finds it there.
                if !signal.isCompleted {
                    self.open(id)
                    if signal.closeStart() {
                        handOver.resume(returning: nil)
                    } else {
                        self.close(id)  // the attempt ended in between and handed its outcome over
                    }
                }
            }
        } onCancel: {
            self.cancelAttempt(of: signal)
        }
        return (task!, early)
    }

    /// Publishes an attempt's task on `signal`, under this strategy's lock (see
    /// ``TimeLimitSignal/attemptStarted(_:guardedBy:)``).
    @usableFromInline
    func attemptStarted(_ task: UnsafeCurrentTask?, of signal: HedgedAttemptSignal) {
        signal.signal.attemptStarted(task, guardedBy: self.state)
    }

    /// Withdraws an attempt's task from `signal`, under this strategy's lock.
    @usableFromInline
    func attemptEnded(of signal: HedgedAttemptSignal) {
        signal.signal.attemptEnded(guardedBy: self.state)
    }

    /// Cancels the attempt published on `signal`, or has it start cancelled, under this
    /// strategy's lock.
    @usableFromInline
    func cancelAttempt(of signal: HedgedAttemptSignal) {
        signal.signal.cancelRunningAttempt(guardedBy: self.state)
    }

    /// Registers `signal`, the signal of an attempt of the call `id` about to start after the
    /// first, for the caller's cancellation handler; when the caller already cancelled, has
    /// the attempt start cancelled instead.
    @usableFromInline
    func register(_ signal: HedgedAttemptSignal, of id: UInt64) {
        let callerCancelled = self.calls.withLock { $0.register(signal.signal, of: id) }
        if callerCancelled { self.cancelAttempt(of: signal) }
    }

    /// The cancellation handler of the caller of the call `id`, whose first attempt runs under
    /// `first`: cancels every attempt of the call that runs its operation, at once, and tells
    /// the call.
    ///
    /// Each attempt runs in a task of its own, which the caller's cancellation does not reach.
    /// Cancelled here, before the call's loop takes the event, an attempt that fails after the
    /// caller gave up sees `Task.isCancelled` with no supersession fired, as the first attempt
    /// always did: a policy inside does not retry it, a breaker inside does not count it, a
    /// hedging call inside starts no replacement. An attempt registered after this starts
    /// cancelled (``register(_:of:)``). The attempts are cancelled after the table's lock is
    /// released, each under this strategy's lock only while its task is taken: cancelling runs
    /// the attempt's own cancellation handlers.
    @usableFromInline
    func callerCancelled(_ id: UInt64, first: HedgedAttemptSignal) {
        let (wake, others) = self.calls.withLock { $0.cancelCaller(id) }
        self.cancelAttempt(of: first)
        for signal in others { signal.cancelRunningAttempt(guardedBy: self.state) }
        if let (parked, event) = wake { parked.resume(with: event) }
    }

    /// The body of attempt `index`'s task: runs the operation, marks the attempt's end, and
    /// hands the outcome to the call.
    ///
    /// `handOver` is the first attempt's start: while the call still waits there, the
    /// outcome goes back through it. Otherwise a waiting call takes the outcome from here,
    /// woken once, and one that is not waiting takes `.finished` later and reads the task's result.
    @inlinable
    nonisolated(nonsending) func attempt<Value: Sendable>(
        _ index: Int,
        of id: UInt64,
        at started: Duration,
        signal: HedgedAttemptSignal,
        handOver: UnsafeContinuation<Result<Timed<Value>, any Error>?, Never>?,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Timed<Value> {
        // The attempt publishes its task for the caller's cancellation handler, so that
        // cancellation reaches it from its first instruction on (the first attempt's while it
        // may still run synchronously on the caller's thread, a hedge's while the call's loop
        // has not yet taken the cancellation), and withdraws it as soon as the operation returns.
        withUnsafeCurrentTask { self.attemptStarted($0, of: signal) }
        let result: Result<Timed<Value>, any Error>
        do {
            let value = try await operation()
            signal.complete()  // the attempt's own end, marked before a hedge timer can be taken
            result = .success(Timed(value: value, latency: self.now() - started))
        } catch {
            signal.complete()
            result = .failure(error)
        }
        self.attemptEnded(of: signal)
        if let handOver, signal.handOverAtStart() {
            handOver.resume(returning: result)
        } else if let waiter = self.end(index, of: id) as? HedgedWaiter<Value> {
            waiter.continuation.resume(returning: .ended(index, result))
        }
        return try result.get()
    }

    /// Waits for the next event of the call `id`, or for an attempt's outcome handed over directly.
    @inlinable
    nonisolated(nonsending) func nextWake<Value: Sendable>(
        of id: UInt64, as _: Value.Type
    ) async -> HedgedWake<Value> {
        await withUnsafeContinuation { (parked: UnsafeContinuation<HedgedWake<Value>, Never>) in
            if let ready = self.next(of: id, parking: HedgedWaiter(continuation: parked)) {
                parked.resume(returning: .event(ready))
            }
        }
    }

    // MARK: - Out of line: what does not depend on the value type

    /// Settles a hedged call's number, scope and delay, and whether a time limit around it has
    /// already passed its deadline, or returns `nil` when the call may not run twice (it then
    /// runs once, through ``runOnce(declaring:operation:)``, as a policy's first attempt does).
    ///
    /// The number is taken without a lock; the call enters the table of calls in flight
    /// (``open(_:)``) only if its first attempt does not end at once.
    @usableFromInline
    func begin(_ idempotency: Idempotency?) -> HedgedCallStart? {
        var scope = CallScope.current
        // As a policy reads it: the call's declaration, an enclosing call's, the classifier's
        // (over an enclosing classifier's word), else idempotent.
        let declared = idempotency ?? scope.handedDownIdempotency(over: self.classifierDeclaration) ?? .idempotent
        guard declared.isIdempotent else { return nil }
        let delay = self.fixedDelay ?? self.state.withLock { $0.currentDelay }
        // Only a declaration is handed down, never the default: a policy inside that knows
        // its request is a `POST` must still judge it so.
        if let idempotency { scope.declare(idempotency) }
        let id = (self.original ?? self).callNumbers.wrappingAdd(1, ordering: .relaxed).newValue
        // Without a library time limit around the call, one test of an absent reference.
        let isEndedByALimit = scope.enclosingLimitEnds()
        return HedgedCallStart(id: id, scope: scope, declared: declared, delay: delay, isEndedByALimit: isEndedByALimit)
    }

    /// Runs a call that may not run twice: once, unhedged, as a policy's call declared so runs.
    ///
    /// A call this one declares not idempotent hands the declaration down, so a policy
    /// inside does not send its request again, and tells the time limits and hedged attempts
    /// around it (`CallScope.declare(_:byClassifier:)`); when it fails, it leaves word for
    /// the policies around it, as a policy that stops on such a request does
    /// (`NestedRetryLedger.recordFailure(_:ofCallDeclaring:)`), and so does it when it fails after
    /// a call inside it that may not run twice succeeded, whatever its failure says (see
    /// `CallScope.hearSucceededCalls()`). A call not idempotent by an
    /// enclosing declaration runs as it is: that declaration is already handed down, and
    /// the call that made it reports it.
    ///
    /// A call that declares nothing, run once because the ``classifier`` was made for requests
    /// that may not run twice (`HTTPRetryClassifier(method: "POST")`), hands that word down as a
    /// policy with that classifier does: as the classifier's, which a nested policy's own
    /// classifier may overrule, and tells the policies around it as a declaration would.
    ///
    /// Out of line and unspecialized: the path is rare, and a call that hedges, the success
    /// path included, binds no task-local for it.
    @usableFromInline
    nonisolated(nonsending) func runOnce<Value: Sendable>(
        declaring idempotency: Idempotency?,
        operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        // The classifier's word, when it is what made the call run once: no enclosing declaration.
        let enclosing = CallScope.current
        let classifiers =
            idempotency == nil && (enclosing.idempotency == nil || enclosing.idempotencyIsAClassifiers)
            ? self.classifierDeclaration.flatMap { $0.isIdempotent ? nil : $0 } : nil
        let idempotency = idempotency ?? classifiers
        guard var scope = CallScope.declaring(idempotency, byClassifier: classifiers != nil) else {
            return try await operation()
        }
        // The policies inside hear under this call's number of a call in it that may not run twice
        // and succeeded; so do the policies around it, when it fails after one (see
        // `CallScope.hearSucceededCalls()`).
        let enclosingSucceededCall = scope.hearSucceededCalls()
        defer { NestedRetryLedger.endSuccesses(of: scope.succeededCall, passingTo: enclosingSucceededCall) }
        do {
            let value = try await CallScope.$current.withValue(scope) { try await operation() }
            scope.noteSucceeded()  // a call that may not run twice reached the dependency
            return value
        } catch {
            NestedRetryLedger.recordFailure(error, ofCallDeclaring: idempotency)
            NestedRetryLedger.recordFailure(error, ofCallHearing: scope.succeededCall)
            throw error
        }
    }

    /// Enters the call `id` in the table of calls in flight, where its attempts, its timer
    /// and its caller's cancellation tell it what happened.
    @usableFromInline
    func open(_ id: UInt64) {
        self.calls.withLock { $0.open(id) }
    }

    /// Forgets the call `id`.
    @usableFromInline
    func close(_ id: UInt64) {
        self.calls.withLock { $0.close(id) }
    }

    /// The scope of a new attempt of a call with `scope`: a supersession signal of its own,
    /// which shares the quiet the call keeps with `first`, the signal of the call's first
    /// attempt, if this one comes after it (`TimeLimitSignal.holdQuiet(until:)`).
    @usableFromInline
    func attemptScope(_ scope: CallScope, after first: HedgedAttemptSignal? = nil) -> (CallScope, HedgedAttemptSignal) {
        let signal = TimeLimitSignal(
            enclosing: scope.supersessions, across: scope.timeLimits, clock: .hedging(self), firstOfCall: first?.signal)
        var attemptScope = scope
        attemptScope.supersessions = signal
        return (attemptScope, HedgedAttemptSignal(signal: signal))
    }

    /// Registers the next hedge of the call `id`, due at `deadline` on the strategy's clock,
    /// with the shared watcher: no timer task per call. A deadline already passed is due at once.
    @usableFromInline
    func armTimer(at deadline: Duration, for id: UInt64) -> UInt64 {
        self.watcher.register(deadline, HedgeDue(hedging: self, call: id))
    }

    /// Withdraws a registration made by ``armTimer(at:for:)``.
    @usableFromInline
    func disarmTimer(_ timer: UInt64) {
        self.watcher.withdraw(timer)
    }

    /// Withdraws a registration made by ``armTimer(at:for:)`` if the watcher has not taken it
    /// as due; `false` when it has, and its event is on its way to the call.
    @usableFromInline
    func withdrawTimer(_ timer: UInt64) -> Bool {
        self.watcher.withdrawIfPending(timer)
    }

    /// The time on the strategy's clock.
    @usableFromInline
    func now() -> Duration {
        self.watcher.now()
    }

    /// The clock the strategy's times are on, as ``ElapsedClock/identity`` names it.
    var clockIdentity: ObjectIdentifier { self.watcher.clock.identity }

    /// Records a call's success, once: the time from the call's start to its winning
    /// attempt's answer, for the percentile delay, and the tokens a success gives back
    /// to the budget, as a ``RetryPolicy``'s success does. A fixed delay learns nothing from
    /// the latency, so it is not recorded, and the state's lock is not taken.
    @usableFromInline
    func recordSuccess(_ latency: Duration) {
        if self.fixedDelay == nil { self.state.withLock { $0.record(latency) } }
        self.budget?.recordSuccess()
    }

    /// Takes in the failure of an attempt of the call `start`: keeps it in `failures` as the
    /// failure the call ends with if it matters more than the one kept, notes until when its
    /// retry-after hint asks for quiet, and returns whether the call may start more attempts.
    /// Whether the call ends on this failure at once is left in ``HedgedFailures/lastEndsCall``.
    ///
    /// What a ``RetryPolicy`` asks about a failure, in its order. First the ``Rulebook``'s rules,
    /// which end the call (a 429, a request that is not idempotent, a cancellation), whatever any
    /// classifier says. Then the classifier (``classifier``, else the nearest retry stage's in
    /// `stages`, else ``retryClassifierAround``, the nearest retry stage's around a pipeline's
    /// hedging stage, else ``DefaultRetryClassifier``), asked with the attempts started so far (`attempts`)
    /// and the call's idempotency as a policy reads it: a failure it will not retry starts no
    /// other attempt, and the attempts running go on; one it will not retry because the request
    /// may have been applied (``RetryStopReason/notIdempotent``, a CloudKit lost response in a call
    /// that declares nothing) ends the call as the rules' own "not idempotent" does. Its
    /// ``RetryDecision/retryAfter`` holds the next attempt back, as a server's hint does, but
    /// asks no other attempt for quiet: it is this strategy's word, not the server's.
    ///
    /// The first failure the call ends on at once is kept whatever fails after it; until one
    /// comes, the failure with the longest retry-after hint is, the later one among equals, so a
    /// call whose attempts all failed plainly ends with the last failure. A positive hint holds
    /// the call's next attempt back until it has passed; a hint longer than the call's hedge
    /// delay ends hedging instead, leaving the wait to whoever is around the call (a
    /// ``RetryPolicy`` honours it within its ``RetryPolicy/maximumRetryAfter`` and deadline).
    @usableFromInline
    func note(
        _ error: any Error, of start: HedgedCallStart, attempts: Int, inside stages: Any,
        into failures: inout HedgedFailures
    ) -> Bool {
        let analysis = FailureAnalysis(error)
        failures.lastCostsToken = Rulebook.loadedTheDependency(analysis)
        // The call's idempotency as a policy with this classifier reads it: the call's declaration
        // (in its scope), an enclosing call's, the classifier's, else idempotent; the request's own
        // report then tightens it.
        let classifier = self.classifier ?? Self.retryStageClassifier(in: stages) ?? self.retryClassifierAround
        let idempotency = (start.scope.handedDownIdempotency(over: classifier?.declaredIdempotency) ?? .idempotent)
            .tightened(by: analysis.requestIdempotency)
        let stop = Rulebook.stopReason(for: analysis, idempotency: idempotency)
        var ruled = stop != nil
        failures.lastIsTooManyRequests = stop == .tooManyRequests
        var refused = false
        var mayHaveBeenApplied = false
        var floor = Duration.zero
        if !ruled {
            let context = RetryContext(
                attempt: attempts, idempotency: idempotency, analysis: analysis,
                idempotencyIsDeclared: start.scope.idempotency != nil && !start.scope.idempotencyIsAClassifiers)
            let decision =
                classifier?.decision(for: error, context: context)
                ?? DefaultRetryClassifier().decision(for: error, context: context) ?? .retry
            if decision.isRetryable {
                floor = Swift.max(decision.retryAfter ?? .zero, .zero)
            } else if decision.stopReason == .notIdempotent {
                // The request may have been applied: as the rule for a call that may not run twice.
                ruled = true
                mayHaveBeenApplied = true
            } else {
                refused = true
            }
        }
        failures.lastEndsCall = ruled
        let hint = Swift.max(analysis.retryAfter ?? .zero, .zero)
        // A hint from the dependency asks every attempt of the call for quiet, the running ones
        // included; a refusal at one of the library's own gates speaks for that gate alone.
        let fromTheDependency = hint > .zero && failures.lastCostsToken
        failures.lastQuietEnd = fromTheDependency && !ruled ? self.now() + hint : nil
        // It asks the same of the hedged calls around this one, whose other attempts send to the
        // same dependency: each holds its own attempts back until it has passed, whether or not
        // this call ends on it, without waiting for this call's end.
        if fromTheDependency { TimeLimitSignal.hearQuiet(hint, from: start.scope.supersessions) }
        if failures.ending == nil || !failures.endingIsRuled && (ruled || hint >= failures.endingHint) {
            failures.ending = error
            failures.endingIsRuled = ruled
            failures.endingHint = hint
            failures.endingIsNotIdempotentVerdict = mayHaveBeenApplied
        }
        let wait = Swift.max(hint, floor)
        guard !ruled, !refused, wait <= start.delay else { return false }
        if wait > .zero {
            let end = self.now() + wait
            failures.quietUntil = Swift.max(failures.quietUntil ?? end, end)
        }
        return true
    }

    /// The classifier of the nearest ``RetryPolicy`` stage in `stages`, the rest of a pipeline a
    /// ``Hedging`` stage runs, or `nil` for none (and for a direct call's `()`). Failure path only.
    @usableFromInline
    static func retryStageClassifier(in stages: Any) -> (any RetryClassifier)? {
        (stages as? any RetryStageHolding)?.nearestRetryClassifier
    }

    /// Leaves word for the policies around a call that ended with `error`, a failure its
    /// classifier said may have been applied and must not be sent again, as a policy that stops
    /// on it does: they stop with ``RetryStopReason/notIdempotent`` instead of sending it again.
    @usableFromInline
    func recordNotIdempotentVerdict(on error: any Error) {
        guard !Task.isCancelled else { return }
        NestedRetryLedger.record(.notIdempotent, for: error, to: .here(in: CallScope.current.retryCall))
    }

    /// Why the call `start` starts no other attempt, a hedge or a replacement, though hedging
    /// would: a library time limit around it (a ``Timeout``, a pipeline's, a policy's
    /// `attemptTimeout`) ends it, its deadline passed on its clock while its timer may still be
    /// asleep (`CallScope.enclosingLimitEnds()`, claimed for that limit as a ``RetryPolicy``
    /// nested in it claims it); or the deadline an enclosing policy hands down has passed.
    /// `nil` when neither: the attempt may start.
    ///
    /// Read only when an attempt is about to start after the first: never on a call whose first
    /// attempt wins before its hedge delay.
    @usableFromInline
    func enclosingLimitStops(_ start: HedgedCallStart) -> HedgedCallLimitEnd? {
        if start.scope.enclosingLimitEnds() { return .endedByALimit }
        if let deadline = start.scope.deadline, deadline.remaining <= .zero { return .deadlinePassed }
        return nil
    }

    /// Counts a failed attempt a call took and carried on after (``failuresTaken``).
    @usableFromInline
    func tookFailure() {
        (self.original ?? self).failuresTaken.wrappingAdd(1, ordering: .releasing)
    }

    /// Reports a hedge started to the observer.
    @usableFromInline
    func reportHedge() {
        self.observer?.observe(StrategyEvent(strategyName: self.name, kind: .hedged))
    }

    /// Tells the call `id` about `event`, waking it if it waits.
    @usableFromInline
    func post(_ event: HedgedCallEvent, to id: UInt64) {
        let wake = self.calls.withLock { $0.post(event, to: id) }
        if let (parked, event) = wake { parked.resume(with: event) }
    }

    /// Records that attempt `index` of the call `id` ended; returns the waiter to hand its outcome to.
    @usableFromInline
    func end(_ index: Int, of id: UInt64) -> (any HedgedCallWaiter)? {
        self.calls.withLock { $0.end(index, of: id) }
    }

    /// The next pending event of the call `id`, or `nil` after parking `waiter`.
    @usableFromInline
    func next(of id: UInt64, parking waiter: any HedgedCallWaiter) -> HedgedCallEvent? {
        self.calls.withLock { $0.next(of: id, parking: waiter) }
    }

    /// Takes a token from the budget for a 429 the call ends on, as a ``RetryPolicy`` that stops
    /// on one does: server pushback costs budget like any failure that might have been retried.
    @usableFromInline
    func spendOnPushback() {
        self.budget?.recordFailure()
    }

    /// Takes a hedge from the budget; `false` when the budget is spent.
    ///
    /// Without `charging` (a replacement of an attempt the library's own gates refused, see
    /// ``Rulebook/loadedTheDependency(_:)``) the budget must still allow a retry, as a
    /// ``RetryPolicy``'s does, but loses no token.
    @usableFromInline
    func spendHedge(charging: Bool) -> Bool {
        guard let budget = self.budget else { return true }
        guard budget.allowsRetry else { return false }
        if charging { budget.recordFailure() }
        return true
    }
}

/// What a hedged call settles once, before its first attempt: its number, its scope, its
/// declared idempotency and its hedge delay.
@usableFromInline
struct HedgedCallStart: Sendable {
    @usableFromInline let id: UInt64
    @usableFromInline let scope: CallScope
    @usableFromInline let declared: Idempotency
    @usableFromInline let delay: Duration
    /// Whether a library time limit around the call had already passed its deadline when the
    /// call began, its timer perhaps still asleep (`CallScope.enclosingLimitEnds()`), and was
    /// claimed for it: the call starts no attempt.
    @usableFromInline let isEndedByALimit: Bool
}

/// Why a hedged call starts no other attempt (see ``Hedging/enclosingLimitStops(_:)``).
@usableFromInline
enum HedgedCallLimitEnd: Sendable {
    /// A library time limit around the call ends it: its deadline passed, and it claimed the call.
    case endedByALimit
    /// The deadline an enclosing call hands down has passed.
    case deadlinePassed
}

/// The supersession signal of one attempt, as the inlined call path sees it.
@usableFromInline
struct HedgedAttemptSignal: Sendable {
    let signal: TimeLimitSignal

    init(signal: TimeLimitSignal) {
        self.signal = signal
    }

    /// Whether a call inside the attempt declared that it may not run twice (a `POST`
    /// sent through a policy or a pipeline that knows it): no other copy may start.
    @usableFromInline
    var holdsNotIdempotentCall: Bool {
        self.signal.enclosesNotIdempotentCall
    }

    /// Leaves word for the policies around the hedged call, which ends with `error`, when a call
    /// in this attempt that may not run twice succeeded: its request reached the dependency
    /// (`NestedRetryLedger.recordFailure(_:ofAttemptUnder:)`). Failure path only.
    @usableFromInline
    func recordFailure(_ error: any Error) {
        NestedRetryLedger.recordFailure(error, ofAttemptUnder: self.signal)
    }

    /// Records that the call heard a retry-after hint ending at `end` on the strategy's clock,
    /// in the quiet the call's attempts share (``TimeLimitSignal/holdQuiet(until:)``).
    @usableFromInline
    func holdQuiet(until end: Duration) { self.signal.holdQuiet(until: end) }

    /// The end of the latest retry-after hint the call heard, from one of its attempts or from
    /// a call nested in one, on the strategy's clock; `nil` for none.
    @usableFromInline
    var quietEnd: Duration? { self.signal.quietEnd }

    /// Records that the attempt lost the race, before it is cancelled.
    @usableFromInline
    func fire() { self.signal.fire() }

    /// Records that the attempt lost the race unless its operation already returned;
    /// `false` when it did, and its outcome is on its way to the call.
    @usableFromInline
    func supersede() -> Bool { self.signal.claim() }

    /// Marks the attempt's own end.
    @usableFromInline
    func complete() { self.signal.complete() }

    /// Claims the right to hand the first attempt's outcome to the call as it starts the
    /// attempt; `false` once the call closed that window with ``closeStart()``.
    @usableFromInline
    func handOverAtStart() -> Bool { self.signal.handOverAtStart() }

    /// Closes the window in which the first attempt hands its outcome over at its start;
    /// `false` when the attempt already did.
    @usableFromInline
    func closeStart() -> Bool { self.signal.closeStart() }

    /// Whether the attempt's own task marked its end.
    @usableFromInline
    var isCompleted: Bool { self.signal.isCompleted }
}

/// The state of one hedged call while it waits for its attempts.
///
/// The first attempt is kept apart from the hedges, so that a call that starts no hedge
/// allocates no array.
@usableFromInline
struct HedgedCall<Value: Sendable> {
    @usableFromInline var first: HedgedAttempt<Value>?
    @usableFromInline var hedges: [HedgedAttempt<Value>] = []
    @usableFromInline var running = 0
    @usableFromInline var hedgesLeft: Int
    @usableFromInline var mayHedge = true
    @usableFromInline var callerCancelled = false
    /// The registration of the next hedge with the watcher, while it is pending.
    @usableFromInline var timer: UInt64?
    /// When ``timer`` is due, on the strategy's clock; read only while ``timer`` is set.
    @usableFromInline var timerDue: Duration?
    /// When the call started, on the strategy's clock: every attempt's latency counts from it.
    @usableFromInline var started = Duration.zero
    /// The failures of the call's attempts: the one it ends with, and the quiet servers asked for.
    @usableFromInline var failures = HedgedFailures()
    @usableFromInline var winner: Int?
    /// The attempts whose end the call has taken, one bit each.
    @usableFromInline var taken: UInt16 = 0
    /// Whether the hedge delay passed while an attempt's end was on its way.
    @usableFromInline var isHedgeDeferred = false
    /// Whether the call took a failure the rules end it on, and superseded the attempts
    /// still running (``supersedeRunning()``).
    @usableFromInline var isEndedByRule = false
    /// After such a failure, the attempts whose operation had already returned and whose
    /// end the call has not taken yet, one bit each: one of them that succeeded still wins.
    @usableFromInline var settling: UInt16 = 0

    @inlinable
    init(hedgesLeft: Int) {
        self.hedgesLeft = hedgesLeft
    }

    /// The number of attempts started.
    @inlinable
    var count: Int { self.hedges.count + (self.first == nil ? 0 : 1) }

    @inlinable
    func attempt(_ index: Int) -> HedgedAttempt<Value> {
        index == 0 ? self.first! : self.hedges[index - 1]
    }

    @inlinable
    mutating func add(_ attempt: HedgedAttempt<Value>) {
        if self.first == nil { self.first = attempt } else { self.hedges.append(attempt) }
        self.running += 1
    }

    /// The failure the call ends with when no attempt succeeded: the caller's cancellation
    /// if the caller gave up, else the failure the call kept (see ``HedgedFailures``).
    ///
    /// A call cancelled by an enclosing library time limit that fired, once an attempt
    /// failed, ends with the failure it kept too: the limit keeps it as its operation's
    /// late failure (see `LateOperationError`), so what that failure says about the
    /// request (a `POST`, a 429) still reaches the rules above the limit.
    @inlinable
    var ending: any Error {
        guard self.callerCancelled else { return self.failures.failure }
        if self.failures.ending != nil, LateOperationError.enclosingLimitFired() { return self.failures.failure }
        return CancellationError()
    }

    /// Whether a call inside any attempt started so far declared that it may not run twice.
    @inlinable
    var holdsNotIdempotentCall: Bool {
        for index in 0..<self.count where self.attempt(index).signal.holdsNotIdempotentCall { return true }
        return false
    }

    /// Supersedes each attempt whose end the call has not taken and whose operation still
    /// runs (it records the supersession before its cancellation, so what is nested in it
    /// reads its end as ``Interruption/superseded``); returns the others, whose operation had
    /// already returned, one bit each.
    @inlinable
    func supersedeRunning() -> UInt16 {
        var settled: UInt16 = 0
        for index in 0..<self.count where self.taken & (1 << UInt16(index)) == 0 {
            let attempt = self.attempt(index)
            if attempt.signal.supersede() {
                attempt.task.cancel()
            } else {
                settled |= 1 << UInt16(index)
            }
        }
        return settled
    }

    /// Records that the call heard a retry-after hint ending at `end`, in the quiet all its
    /// attempts share: a policy nested in any of them does not send again before then.
    @inlinable
    func holdQuiet(until end: Duration) {
        self.first?.signal.holdQuiet(until: end)
    }

    /// The time on the strategy's clock before which the call starts no attempt, if any: the
    /// later of the end of a retry-after hint one of its attempts failed with, within the hedge
    /// delay (``HedgedFailures/quietUntil``), and the quiet its attempts share, which a call
    /// nested in one of them may have extended (`TimeLimitSignal.hearQuiet(_:from:onlyOn:)`).
    @inlinable
    var quietUntil: Duration? {
        guard let shared = self.first?.signal.quietEnd else { return self.failures.quietUntil }
        return Swift.max(self.failures.quietUntil ?? shared, shared)
    }

    /// Whether an attempt's own task marked its end and the call has not taken that end yet.
    @inlinable
    var anAttemptEndedUntaken: Bool {
        for index in 0..<self.count where self.taken & (1 << UInt16(index)) == 0 {
            if self.attempt(index).signal.isCompleted { return true }
        }
        return false
    }
}

/// What a hedged call keeps of its failed attempts: the failure it ends with when no attempt
/// succeeds (see ``Hedging/note(_:of:into:)``), and until when servers asked it for quiet.
@usableFromInline
struct HedgedFailures {
    /// The failure the call ends with if no attempt succeeds; set by the first failure.
    @usableFromInline var ending: (any Error)?
    /// Whether the rules ended hedging on ``ending``: no later failure replaces it.
    @usableFromInline var endingIsRuled = false
    /// Whether the rules end the call on the failure taken last.
    @usableFromInline var lastEndsCall = false
    /// Whether that failure is an HTTP 429 (``RetryStopReason/tooManyRequests``), which costs a
    /// budget token when the call ends on it.
    @usableFromInline var lastIsTooManyRequests = false
    /// The retry-after hint of ``ending``; zero without one.
    @usableFromInline var endingHint = Duration.zero
    /// When the retry-after hint of the failure taken last ends, on the strategy's clock, if it
    /// asks the call's running attempts for quiet: a positive hint from the dependency, on a
    /// failure the rules do not end the call on.
    @usableFromInline var lastQuietEnd: Duration?
    /// The time on the strategy's clock before which no attempt starts: the end of the
    /// latest-ending retry-after hint of a failed attempt.
    @usableFromInline var quietUntil: Duration?
    /// Whether ``ending`` is a failure the classifier said may have been applied and must not
    /// be sent again (``RetryStopReason/notIdempotent``): the policies around hear of it.
    @usableFromInline var endingIsNotIdempotentVerdict = false
    /// Whether replacing the last failed attempt costs a budget token: not when the
    /// library's own gates refused it before it ran (``Rulebook/loadedTheDependency(_:)``).
    @usableFromInline var lastCostsToken = true

    /// The failure the call ends with; read only once an attempt failed.
    @inlinable
    var failure: any Error { self.ending ?? CancellationError() }

    @inlinable
    init() {}
}

/// One attempt of a hedged call: its task and the signal it is superseded by.
@usableFromInline
struct HedgedAttempt<Value: Sendable> {
    @usableFromInline var task: Task<Timed<Value>, any Error>
    @usableFromInline var signal: HedgedAttemptSignal

    @inlinable
    init(task: Task<Timed<Value>, any Error>, signal: HedgedAttemptSignal) {
        self.task = task
        self.signal = signal
    }
}

/// What wakes a hedged call: an event, or an attempt's outcome handed over by the attempt itself.
@usableFromInline
enum HedgedWake<Value: Sendable>: Sendable {
    case event(HedgedCallEvent)
    case ended(Int, Result<Timed<Value>, any Error>)
}

/// A hedged call waiting with its value type known, so that an attempt can hand its outcome over.
@usableFromInline
struct HedgedWaiter<Value: Sendable>: HedgedCallWaiter {
    @usableFromInline let continuation: UnsafeContinuation<HedgedWake<Value>, Never>

    @inlinable
    init(continuation: UnsafeContinuation<HedgedWake<Value>, Never>) {
        self.continuation = continuation
    }

    @inlinable
    func resume(with event: HedgedCallEvent) {
        self.continuation.resume(returning: .event(event))
    }
}

/// An attempt's value and when it came, counted from the call's start.
@usableFromInline
struct Timed<Value: Sendable>: Sendable {
    @usableFromInline var value: Value
    /// The time from the call's start to this answer on the strategy's clock; negative
    /// when the clock went back meanwhile (the percentile leaves such a reading out).
    @usableFromInline var latency: Duration

    @inlinable
    init(value: Value, latency: Duration) {
        self.value = value
        self.latency = latency
    }
}

/// What the watcher does when a hedged call's delay passes: tell the call.
private struct HedgeDue: DeadlineExpiry {
    let hedging: Hedging
    let call: UInt64

    func deadlineReached() {
        self.hedging.post(.hedgeDue, to: self.call)
    }
}
