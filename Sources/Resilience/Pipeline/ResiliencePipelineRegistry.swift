/// Hands out one ``ResiliencePipeline`` per key (per host), keeping at most ``maximumCount``.
///
/// Each key gets its own stages (its own breaker, limiter and timeouts), so one
/// failing host does not shut off the others.
///
/// At the bound, the least recently used pipeline whose stages hold nothing that a
/// fresh pipeline would lack is forgotten first. A pipeline is kept while
/// - a ``CircuitBreaker`` stage is open, half-open or isolated, as
///   ``CircuitBreakerRegistry`` keeps such breakers: forgetting it would let its
///   failing host be called again at once;
/// - a ``ConcurrencyLimiter`` stage has calls in flight or callers queued:
///   forgetting it would let the key's next calls through a fresh, empty limiter
///   while those still run, more at once than its limit;
/// - a ``RateLimiter`` stage is not back at its full allowance, or has callers
///   waiting for a permit, judged as ``RateLimiterRegistry`` judges its limiters
///   (the clocks read before the registry's lock): forgetting it would hand the
///   key a full allowance early;
/// - a ``RetryBudget`` of the pipeline's own (a ``RetryPolicy``'s or a
///   ``Hedging`` stage's) has tokens spent, or an ``AdaptiveThrottle`` of its own
///   (a stage, or a policy's or a breaker's ``RetryPolicy/throttle``) rejects
///   calls with a probability above zero: forgetting it would hand a key whose
///   host is overloaded a full budget and a throttle that lets everything
///   through, so its clients would retry and send into the overload again.
///
/// A budget or throttle is the pipeline's own when no other pipeline the
/// registry holds holds it (the registry counts, for each one, the pipelines
/// that hold it). One shared by every key, as their documentation recommends for
/// the keys of one server, keeps no pipeline: forgetting one of its pipelines
/// loses nothing of it, since the others, and the key's next pipeline, still use
/// it. Return a new budget or throttle from `makePipeline` for each key when the
/// keys are separate servers, so that one server's overload spends only its own.
/// A throttle is judged without reading its clock (which may be yours) under the
/// lock: at the latest time it read it, or, on the system's continuous clock on
/// Linux, at the time read just before the lock. So a throttle on another clock
/// that has not been called since its window emptied may still be judged to
/// reject, and its pipeline kept, until it is called again.
/// A budget fills again only through successes, so a budget spent by a host no
/// longer called keeps its pipeline, as an open breaker does.
///
/// Only when every pipeline held is kept for such a reason is the least recently
/// used of them forgotten, so that the registry never grows past its bound; its
/// key may then exceed what those stages enforce, once. Choose a bound above the
/// number of keys busy at once (and within one rate limiter period, or holding a
/// spent budget of their own) to rule that out. The stages looked at are the
/// package's own, nested pipelines included; a strategy of your own is not looked
/// into (the registry asks under its lock, where no user code runs).
///
/// Finding the pipeline to forget walks every pipeline held, under the lock, at
/// each insertion at the bound, but looks into the stages only of those used
/// before the oldest one found so far that holds nothing to keep: a few, unless
/// most pipelines are kept.
///
/// Anyone still holding a forgotten pipeline keeps using it. A call that looked
/// a pipeline up but has not yet entered its limiter (taken a slot, queued, or
/// taken or waited for a permit) does not make it busy: if the pipeline is
/// forgotten in that moment, the call still goes through the old limiter while
/// the key's next calls go through a fresh one, so the key may get one call
/// more at once, or one permit more, for each call caught that way. The same
/// goes for a caller that holds on to a pipeline and calls it later.
///
/// ```swift
/// let pipelines = try ResiliencePipelineRegistry<String, StandardHTTPStrategies> { host in
///     try! ResiliencePipeline.standardHTTP(name: host)
/// }
/// let (data, _) = try await pipelines.pipeline(for: url.host ?? "").data(for: URLRequest(url: url))
/// ```
public final class ResiliencePipelineRegistry<Key: Hashable & Sendable, Strategies: ResilienceStrategy>: Sendable {
    @usableFromInline let pipelines: BoundedRegistry<Key, ResiliencePipeline<Strategies>>

    /// Creates a registry that makes each key's pipeline with `makePipeline`, outside its lock.
    ///
    /// - Parameters:
    ///   - maximumCount: The most pipelines kept; in 1...10,000,000. Defaults to 1,000.
    ///   - makePipeline: Makes the pipeline for a key the registry does not hold.
    /// - Throws: ``ConfigurationError`` naming `maximumCount` when out of range.
    public init(
        maximumCount: Int = 1_000,
        makePipeline: @escaping @Sendable (Key) -> ResiliencePipeline<Strategies>
    ) throws(ConfigurationError) {
        self.pipelines = try BoundedRegistry(
            maximumCount: maximumCount,
            preparingSparing: FullAllowanceReading.sparing(sharedClock: nil) { reading, pipeline, parts in
                pipeline.strategies.stageHoldsStateToKeep(StageStateReading(allowance: reading, parts: parts))
            },
            parts: { pipeline in
                var parts: [ObjectIdentifier] = []
                pipeline.strategies.appendStageSharedParts(to: &parts)
                return parts
            },
            make: makePipeline)
    }

    /// The most pipelines kept.
    public var maximumCount: Int { self.pipelines.maximumCount }
    /// How many pipelines the registry holds; never more than ``maximumCount``.
    public var count: Int { self.pipelines.count }

    /// The pipeline for `key`, made now if the registry does not hold one.
    ///
    /// A key the registry remembers bit for bit (a `String` or an integer passed again) is
    /// found without its lock. Inlinable, so that the lookup is specialized for your key type.
    @inlinable
    public func pipeline(for key: Key) -> ResiliencePipeline<Strategies> {
        self.pipelines.value(for: key)
    }

    /// The pipeline for `key` if held; never makes one.
    public func existingPipeline(for key: Key) -> ResiliencePipeline<Strategies>? {
        self.pipelines.existingValue(for: key)
    }
}

/// What a stage is judged by, under the registry's lock: the clocks read before it, and
/// which of the budgets and throttles of the pipeline asked about no other pipeline held holds.
struct StageStateReading {
    let allowance: FullAllowanceReading
    let parts: SharedPartCounts
}

/// A strategy of the package's own that may hold state a fresh copy would not have (a
/// breaker not closed, a bulkhead in use, a rate limiter's permits taken, a budget of its
/// own spent), for the registry to tell a pipeline it must not forget early. Internal, so
/// only the package's own strategies answer (the registry asks under its lock, where no
/// user code may run).
protocol StageStateHolding {
    /// Whether forgetting it now would let its key past what it enforces: a breaker open,
    /// half-open or isolated, a ``ConcurrencyLimiter`` with calls in flight or queued, a
    /// ``RateLimiter`` not back at its full allowance by `reading` or with callers waiting,
    /// a ``RetryBudget`` not full or an ``AdaptiveThrottle`` rejecting, either of the
    /// pipeline's own (see ``appendSharedParts(to:)``).
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool

    /// Appends the budgets and throttles it holds, which other pipelines may hold too, for
    /// the registry to count their holders. Called outside the lock, once per pipeline made.
    func appendSharedParts(to parts: inout [ObjectIdentifier])
}

extension ResilienceStrategy {
    /// Whether this strategy, if it is one of the package's, holds state worth keeping.
    ///
    /// Named apart from the requirements, so that it can never stand in for one of them
    /// (it would call itself).
    func stageHoldsStateToKeep(_ reading: StageStateReading) -> Bool {
        (self as? any StageStateHolding)?.holdsStateToKeep(reading) ?? false
    }

    /// Appends the budgets and throttles of this strategy, if it is one of the package's.
    func appendStageSharedParts(to parts: inout [ObjectIdentifier]) {
        (self as? any StageStateHolding)?.appendSharedParts(to: &parts)
    }
}

extension RetryBudget {
    /// Spent, and the pipeline's own: a budget shared with other pipelines held loses nothing
    /// when one of them is forgotten.
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool {
        !self.isFull && reading.parts.isOwn(self)
    }
}

extension AdaptiveThrottle: StageStateHolding {
    /// Rejecting, and the pipeline's own, as for a ``RetryBudget``.
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool {
        self.isRejecting(atSystemBoot: reading.allowance.systemBoot) && reading.parts.isOwn(self)
    }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) {
        parts.append(ObjectIdentifier(self))
    }
}

extension CircuitBreaker: StageStateHolding {
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool {
        !self.isClosed || self.throttle?.holdsStateToKeep(reading) == true
    }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) {
        self.throttle?.appendSharedParts(to: &parts)
    }
}

extension RetryPolicy: StageStateHolding {
    nonisolated func holdsStateToKeep(_ reading: StageStateReading) -> Bool {
        self.budget?.holdsStateToKeep(reading) == true || self.throttle?.holdsStateToKeep(reading) == true
    }

    nonisolated func appendSharedParts(to parts: inout [ObjectIdentifier]) {
        if let budget = self.budget { parts.append(ObjectIdentifier(budget)) }
        self.throttle?.appendSharedParts(to: &parts)
    }
}

extension Hedging: StageStateHolding {
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool {
        self.budget?.holdsStateToKeep(reading) == true
    }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) {
        if let budget = self.budget { parts.append(ObjectIdentifier(budget)) }
    }
}

extension ConcurrencyLimiter: StageStateHolding {
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool { self.storage.isInUse }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) {}
}

extension RateLimiter: StageStateHolding {
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool { !reading.allowance.isAtFullAllowance(self) }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) {}
}

extension NestedStrategies: StageStateHolding {
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool {
        self.outer.stageHoldsStateToKeep(reading) || self.inner.stageHoldsStateToKeep(reading)
    }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) {
        self.outer.appendStageSharedParts(to: &parts)
        self.inner.appendStageSharedParts(to: &parts)
    }
}

extension ResiliencePipeline: StageStateHolding {
    func holdsStateToKeep(_ reading: StageStateReading) -> Bool { self.strategies.stageHoldsStateToKeep(reading) }

    func appendSharedParts(to parts: inout [ObjectIdentifier]) { self.strategies.appendStageSharedParts(to: &parts) }
}
