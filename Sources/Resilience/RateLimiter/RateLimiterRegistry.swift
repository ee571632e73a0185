/// Hands out one ``RateLimiter`` per key (per host, per tenant), keeping at most ``maximumCount``.
///
/// At the bound, the least recently used limiter is forgotten; anyone still
/// holding it keeps using it, and the next ``limiter(for:)`` for its key makes a
/// fresh, full one.
///
/// ```swift
/// let limiters = try RateLimiterRegistry<String>(maximumCount: 500) { host in
///     try! RateLimiter(.tokenBucket(capacity: 10, tokensPerPeriod: 10, period: .seconds(1)), name: host)
/// }
/// try await limiters.limiter(for: "api.example.com").execute { try await fetch() }
/// ```
public final class RateLimiterRegistry<Key: Hashable & Sendable>: Sendable {
    @usableFromInline let registry: BoundedRegistry<Key, RateLimiter>

    /// Creates a registry that makes each key's limiter with `makeLimiter`, outside its lock.
    ///
    /// - Parameters:
    ///   - maximumCount: The most limiters kept; in 1...10,000,000. Defaults to 1,000.
    ///   - makeLimiter: Makes the limiter for a key the registry does not hold.
    /// - Throws: ``ConfigurationError`` naming `maximumCount` when out of range.
    public init(
        maximumCount: Int = 1_000,
        makeLimiter: @escaping @Sendable (Key) -> RateLimiter
    ) throws(ConfigurationError) {
        self.registry = try BoundedRegistry(maximumCount: maximumCount, make: makeLimiter)
    }

    /// Creates a registry whose limiters share one algorithm, wait, observer and clock; each is named `"<name>[<key>]"`.
    ///
    /// - Throws: ``ConfigurationError`` naming `maximumWait` or `maximumCount` when out of range.
    public convenience init(
        name: String,
        algorithm: RateLimiterAlgorithm,
        maximumWait: Duration = .zero,
        maximumCount: Int = 1_000,
        observer: (any StrategyObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        _ = try RateLimiter(algorithm, maximumWait: maximumWait, clock: clock)  // validates once, up front
        let sendableClock = ElapsedClock(clock)
        try self.init(maximumCount: maximumCount) { key in
            RateLimiter(
                unchecked: algorithm, name: "\(name)[\(key)]", maximumWait: maximumWait, observer: observer,
                elapsedClock: sendableClock)
        }
    }

    /// The most limiters kept.
    public var maximumCount: Int { self.registry.maximumCount }
    /// How many limiters the registry holds; never more than ``maximumCount``.
    public var count: Int { self.registry.count }

    /// The limiter for `key`, made now if the registry does not hold one.
    ///
    /// A key the registry remembers bit for bit (a `String` or an integer passed again) is
    /// found without its lock.
    @inlinable
    public func limiter(for key: Key) -> RateLimiter {
        self.registry.value(for: key)
    }

    /// The limiter for `key` if held; never makes one.
    public func existingLimiter(for key: Key) -> RateLimiter? {
        self.registry.existingValue(for: key)
    }
}
