/// Hands out one ``ResiliencePipeline`` per key (per host), keeping at most ``maximumCount``.
///
/// Each key gets its own stages (its own breaker, limiter and timeouts), so one
/// failing host does not shut off the others. At the bound, the least recently
/// used pipeline is forgotten; anyone still holding it keeps using it.
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
        self.pipelines = try BoundedRegistry(maximumCount: maximumCount, make: makePipeline)
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
