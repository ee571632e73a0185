/// Hands out one ``ResiliencePipeline`` per key (per host), keeping at most ``maximumCount``.
///
/// Each key gets its own stages (its own breaker, limiter and timeouts), so one
/// failing host does not shut off the others.
///
/// At the bound, the least recently used pipeline whose breakers are all closed
/// is forgotten, as ``CircuitBreakerRegistry`` forgets closed breakers first: a
/// pipeline with a breaker open, half-open or isolated is kept, since forgetting
/// it would let its failing host be called again at once. Only when every
/// pipeline held has such a breaker is the least recently used of them
/// forgotten, so that the registry never grows past its bound. Anyone still
/// holding a forgotten pipeline keeps using it. The breakers looked at are the
/// ``CircuitBreaker`` stages of the pipeline, nested pipelines included; a
/// strategy of your own is not looked into.
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
            maximumCount: maximumCount, sparing: { $0.strategies.hasABreakerNotClosed }, make: makePipeline)
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

/// A strategy that may hold ``CircuitBreaker`` stages, for the registry to tell a
/// pipeline whose host is failing. Internal, so only the package's own strategies answer
/// (the registry asks under its lock, where no user code may run).
protocol CircuitBreakerHolding {
    /// Whether a breaker in it is open, half-open or isolated.
    var holdsABreakerThatIsNotClosed: Bool { get }
}

extension ResilienceStrategy {
    /// Whether this strategy, if it is one of the package's, holds a breaker that is not closed.
    var hasABreakerNotClosed: Bool {
        (self as? any CircuitBreakerHolding)?.holdsABreakerThatIsNotClosed ?? false
    }
}

extension CircuitBreaker: CircuitBreakerHolding {
    var holdsABreakerThatIsNotClosed: Bool { !self.isClosed }
}

extension NestedStrategies: CircuitBreakerHolding {
    var holdsABreakerThatIsNotClosed: Bool {
        self.outer.hasABreakerNotClosed || self.inner.hasABreakerNotClosed
    }
}

extension ResiliencePipeline: CircuitBreakerHolding {
    var holdsABreakerThatIsNotClosed: Bool { self.strategies.hasABreakerNotClosed }
}
