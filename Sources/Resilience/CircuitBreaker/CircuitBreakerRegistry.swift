/// Hands out one ``CircuitBreaker`` per key (per host, per endpoint, per
/// tenant), creating each on first use and keeping at most ``maximumCount``.
///
/// One breaker shared by unrelated endpoints lets one bad host shut off all
/// the good ones; a registry gives each key its own:
///
/// ```swift
/// let breakers = try CircuitBreakerRegistry<String>(
///     name: "hosts",
///     configuration: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(3)),
///     maximumCount: 500
/// )
/// let data = try await breakers.breaker(for: url.host ?? "").execute {
///     try await session.data(from: url)
/// }
/// ```
///
/// ## At the bound
/// When a new key arrives and the registry already holds ``maximumCount``
/// breakers, it forgets one to make room: the least recently used breaker
/// that is closed, since a closed breaker holds nothing worth keeping but
/// its counts. Open, half-open and isolated breakers are kept, because
/// forgetting one would let its failing dependency be called again at once;
/// only when every breaker held is in one of those states does the registry
/// forget the least recently used of them, so that it never grows past its
/// bound. A forgotten breaker keeps working for anyone still holding it; the
/// next ``breaker(for:)`` for its key makes a fresh, closed one.
///
/// Finding the victim walks from the least recently used end until it meets a
/// closed breaker, reading each breaker's state from an atomic word without
/// its lock. Looking up an existing key costs one dictionary lookup under the
/// registry's lock and no allocation.
public final class CircuitBreakerRegistry<Key: Hashable & Sendable>: Sendable {
    /// The most breakers the registry keeps.
    public let maximumCount: Int

    private let makeBreaker: @Sendable (Key) -> CircuitBreaker
    private let entries: Lock<RegistryEntries<Key>>

    /// Creates a registry that makes each key's breaker with `makeBreaker`.
    ///
    /// `makeBreaker` runs outside the registry's lock; if two tasks ask for a
    /// new key at once, both may call it, and the breaker made second is
    /// dropped unused.
    ///
    /// - Parameters:
    ///   - maximumCount: The most breakers kept; at least 1. Defaults to 1,000.
    ///   - makeBreaker: Makes the breaker for a key the registry does not hold.
    /// - Throws: ``ConfigurationError`` when `maximumCount` is below 1.
    public convenience init(
        maximumCount: Int = 1_000,
        makeBreaker: @escaping @Sendable (Key) -> CircuitBreaker
    ) throws(ConfigurationError) {
        try ConfigurationError.require(maximumCount >= 1, "maximumCount", maximumCount, "in 1...Int.max")
        self.init(uncheckedMaximumCount: maximumCount, makeBreaker: makeBreaker)
    }

    private init(uncheckedMaximumCount maximumCount: Int, makeBreaker: @escaping @Sendable (Key) -> CircuitBreaker) {
        self.maximumCount = maximumCount
        self.makeBreaker = makeBreaker
        self.entries = Lock(RegistryEntries())
    }

    /// Creates a registry whose breakers share one configuration, observer and clock.
    ///
    /// Each breaker is named `"<name>[<key>]"`, and all of them measure time
    /// from the registry's creation, so their snapshots and events compare directly.
    ///
    /// - Parameters:
    ///   - name: The prefix of each breaker's name.
    ///   - configuration: The settings of every breaker.
    ///   - maximumCount: The most breakers kept; at least 1. Defaults to 1,000.
    ///   - observer: Receives every breaker's events, or `nil`.
    ///   - clock: The clock every breaker uses.
    /// - Throws: ``ConfigurationError`` when `maximumCount` is below 1.
    public convenience init(
        name: String,
        configuration: CircuitBreakerConfiguration = .default,
        maximumCount: Int = 1_000,
        observer: (any CircuitBreakerObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        let elapsedClock = ElapsedClock(clock)
        try self.init(maximumCount: maximumCount) { key in
            CircuitBreaker(
                name: "\(name)[\(key)]", configuration: configuration, observer: observer,
                elapsedClock: elapsedClock)
        }
    }

    /// Creates a registry from settings already validated; it cannot fail, so it does not throw.
    ///
    /// Each breaker is named `"<name>[<key>]"`, is made with `configuration.breaker`, and
    /// measures time from the registry's creation, as with
    /// ``init(name:configuration:maximumCount:observer:clock:)``.
    ///
    /// - Parameters:
    ///   - name: The prefix of each breaker's name.
    ///   - configuration: The bound and the settings of every breaker.
    ///   - observer: Receives every breaker's events, or `nil`.
    ///   - clock: The clock every breaker uses.
    public convenience init(
        name: String,
        configuration: CircuitBreakerRegistryConfiguration,
        observer: (any CircuitBreakerObserver)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        let elapsedClock = ElapsedClock(clock)
        let breakerConfiguration = configuration.breaker
        self.init(uncheckedMaximumCount: configuration.maximumCount) { key in
            CircuitBreaker(
                name: "\(name)[\(key)]", configuration: breakerConfiguration, observer: observer,
                elapsedClock: elapsedClock)
        }
    }

    /// The breaker for `key`, made now if the registry does not hold one.
    ///
    /// The same key returns the same breaker for as long as the registry keeps
    /// it (see the bound, above).
    public func breaker(for key: Key) -> CircuitBreaker {
        if let existing = self.entries.withLock({ $0.lookUp(key) }) {
            return existing
        }
        let made = self.makeBreaker(key)
        let (breaker, evicted) = self.entries.withLock { entries in
            if let existing = entries.lookUp(key) {
                return (existing, CircuitBreaker?.none)
            }
            return (made, entries.insert(key: key, breaker: made, maximumCount: self.maximumCount))
        }
        _ = evicted  // released here, outside the lock, in case its deinit runs user code
        return breaker
    }

    /// The breaker for `key` if the registry holds one; never makes one, and
    /// does not count as a use.
    public func existingBreaker(for key: Key) -> CircuitBreaker? {
        self.entries.withLock { entries in
            entries.indexByKey[key].map { entries.nodes[$0].breaker }
        }
    }

    /// How many breakers the registry holds; never more than ``maximumCount``.
    public var count: Int {
        self.entries.withLock { $0.indexByKey.count }
    }

    /// A snapshot of every breaker held, by key.
    public func snapshots() -> [Key: CircuitBreakerSnapshot] {
        let held = self.entries.withLock { entries in
            entries.indexByKey.map { key, index in (key, entries.nodes[index].breaker) }
        }
        var result: [Key: CircuitBreakerSnapshot] = [:]
        result.reserveCapacity(held.count)
        for (key, breaker) in held {
            result[key] = breaker.snapshot()
        }
        return result
    }
}

/// The registry's breakers in a dictionary, threaded on a doubly linked
/// recency list kept in an array (indices, not references), most recent first.
private struct RegistryEntries<Key: Hashable & Sendable> {
    struct Node {
        var key: Key
        var breaker: CircuitBreaker
        var newer: Int
        var older: Int
    }

    var indexByKey: [Key: Int] = [:]
    var nodes: [Node] = []
    var newest = -1
    var oldest = -1

    /// The breaker for `key`, marked as the most recently used.
    mutating func lookUp(_ key: Key) -> CircuitBreaker? {
        guard let index = self.indexByKey[key] else { return nil }
        if index != self.newest {
            self.unlink(index)
            self.pushNewest(index)
        }
        return self.nodes[index].breaker
    }

    /// Adds `breaker` for `key` as the most recently used; returns the breaker forgotten to make room.
    mutating func insert(key: Key, breaker: CircuitBreaker, maximumCount: Int) -> CircuitBreaker? {
        if self.nodes.count < maximumCount {
            self.nodes.append(Node(key: key, breaker: breaker, newer: -1, older: -1))
            let index = self.nodes.count - 1
            self.pushNewest(index)
            self.indexByKey[key] = index
            return nil
        }
        var victim = self.oldest
        var index = self.oldest
        while index != -1 {
            if self.nodes[index].breaker.isClosed {
                victim = index
                break
            }
            index = self.nodes[index].newer
        }
        let evicted = self.nodes[victim].breaker
        self.indexByKey[self.nodes[victim].key] = nil
        self.unlink(victim)
        self.nodes[victim] = Node(key: key, breaker: breaker, newer: -1, older: -1)
        self.pushNewest(victim)
        self.indexByKey[key] = victim
        return evicted
    }

    private mutating func unlink(_ index: Int) {
        let newer = self.nodes[index].newer
        let older = self.nodes[index].older
        if newer != -1 { self.nodes[newer].older = older } else { self.newest = older }
        if older != -1 { self.nodes[older].newer = newer } else { self.oldest = newer }
        self.nodes[index].newer = -1
        self.nodes[index].older = -1
    }

    private mutating func pushNewest(_ index: Int) {
        self.nodes[index].older = self.newest
        self.nodes[index].newer = -1
        if self.newest != -1 { self.nodes[self.newest].newer = index }
        self.newest = index
        if self.oldest == -1 { self.oldest = index }
    }
}
