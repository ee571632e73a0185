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
///   key a full allowance early.
///
/// Only when every pipeline held is kept for such a reason is the least recently
/// used of them forgotten, so that the registry never grows past its bound; its
/// key may then exceed what those stages enforce, once. Choose a bound above the
/// number of keys busy at once (and within one rate limiter period) to rule that
/// out. The stages looked at are the package's own, nested pipelines included; a
/// strategy of your own is not looked into (the registry asks under its lock,
/// where no user code runs).
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
    private let pipelines: BoundedRegistry<Key, ResiliencePipeline<Strategies>>

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
            preparingSparing: FullAllowanceReading.sparing(sharedClock: nil) { $1.strategies.holdsStateToKeep($0) },
            make: makePipeline)
    }

    /// The most pipelines kept.
    public var maximumCount: Int { self.pipelines.maximumCount }
    /// How many pipelines the registry holds; never more than ``maximumCount``.
    public var count: Int { self.pipelines.count }

    /// The pipeline for `key`, made now if the registry does not hold one.
    public func pipeline(for key: Key) -> ResiliencePipeline<Strategies> {
        self.pipelines.value(for: key)
    }

    /// The pipeline for `key` if held; never makes one.
    public func existingPipeline(for key: Key) -> ResiliencePipeline<Strategies>? {
        self.pipelines.existingValue(for: key)
    }
}

/// A strategy of the package's own that may hold state a fresh copy would not have (a
/// breaker not closed, a bulkhead in use, a rate limiter's permits taken), for the
/// registry to tell a pipeline it must not forget early. Internal, so only the
/// package's own strategies answer (the registry asks under its lock, where no user
/// code may run).
protocol StageStateHolding {
    /// Whether forgetting it now would let its key past what it enforces: a breaker open,
    /// half-open or isolated, a ``ConcurrencyLimiter`` with calls in flight or queued, a
    /// ``RateLimiter`` not back at its full allowance by `reading` or with callers waiting.
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool
}

extension ResilienceStrategy {
    /// Whether this strategy, if it is one of the package's, holds state worth keeping.
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool {
        (self as? any StageStateHolding)?.holdsStateToKeep(reading) ?? false
    }
}

extension CircuitBreaker: StageStateHolding {
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool { !self.isClosed }
}

extension ConcurrencyLimiter: StageStateHolding {
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool { self.storage.isInUse }
}

extension RateLimiter: StageStateHolding {
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool { !reading.isAtFullAllowance(self) }
}

extension NestedStrategies: StageStateHolding {
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool {
        self.outer.holdsStateToKeep(reading) || self.inner.holdsStateToKeep(reading)
    }
}

extension ResiliencePipeline: StageStateHolding {
    func holdsStateToKeep(_ reading: FullAllowanceReading) -> Bool { self.strategies.holdsStateToKeep(reading) }
}
