import Synchronization

/// Hands out one ``RateLimiter`` per key (per host, per tenant), keeping at most ``maximumCount``.
///
/// At the bound, the registry forgets the least recently used limiter that is back
/// at its full allowance (a token bucket full, a sliding window empty), if nothing more
/// were taken: the fresh, full limiter the next ``limiter(for:)`` for its key makes
/// admits no more than the forgotten one would have. A limiter with permits taken
/// and not yet refilled is kept, since forgetting it would hand its key a full
/// allowance early, more permits than the configured rate. Only when every limiter
/// held is in that state is the least recently used of them forgotten anyway, so
/// that the registry never grows past its bound; its key may then get up to one
/// full allowance more than its rate, once. Choose a bound above the number of keys
/// that are busy within one period (one window) to rule that out.
///
/// A limiter with callers waiting for a permit (within its `maximumWait`) is not back
/// at its full allowance either, whatever its bucket or window holds: a waiter holds
/// no permit while it sleeps, and at the refill it finds the bucket full and takes its
/// token only once it runs; a fresh limiter for its key would meanwhile admit another
/// caller. A caller counts as waiting from before the attempt that decides it waits
/// until after its last attempt, however the wait ends (a permit, a refusal, a
/// cancellation).
///
/// Anyone still holding a forgotten limiter keeps using it. A call already under way
/// on a limiter when it is forgotten (looked up, and neither admitted nor counted as
/// waiting yet) can still take one of its permits while the fresh limiter admits its
/// key's next callers: each such call may get its key one permit more than its rate.
/// The window is the moment between a call's lookup and its attempt (for a lock-free
/// take, between loading the loan and taking from it), the same for every caller that
/// holds on to a limiter.
///
/// Whether a limiter is back at its full allowance is judged by its clock read just
/// before the registry takes its lock (never under it: an injected clock is user
/// code), so it is judged a little early, which can only keep a limiter that had just
/// refilled. Limiters made by ``init(name:algorithm:maximumWait:maximumCount:observer:clock:)``
/// share the one clock read; those made by your own closure are judged by the system's
/// continuous clock when they count on it (on Linux), and otherwise at the latest time
/// they counted at, which keeps a limiter that has refilled since but not been called.
/// A reading taken while a limiter re-based onto a clock that went back is not trusted
/// either (see ``RateLimiter``).
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
        self.registry = try Self.registry(maximumCount: maximumCount, sharedClock: nil, makeLimiter: makeLimiter)
    }

    /// - Parameter sharedClock: The clock every limiter `makeLimiter` makes counts on, if they share one.
    init(
        maximumCount: Int, sharedClock: ElapsedClock,
        makeLimiter: @escaping @Sendable (Key) -> RateLimiter
    ) throws(ConfigurationError) {
        self.registry = try Self.registry(
            maximumCount: maximumCount, sharedClock: sharedClock, makeLimiter: makeLimiter)
    }

    /// A bounded registry that forgets limiters back at their full allowance first.
    private static func registry(
        maximumCount: Int, sharedClock: ElapsedClock?,
        makeLimiter: @escaping @Sendable (Key) -> RateLimiter
    ) throws(ConfigurationError) -> BoundedRegistry<Key, RateLimiter> {
        try BoundedRegistry(
            maximumCount: maximumCount,
            preparingSparing: FullAllowanceReading.sparing(sharedClock: sharedClock) { reading, limiter, _ in
                !reading.isAtFullAllowance(limiter)
            },
            make: makeLimiter)
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
        try self.init(maximumCount: maximumCount, sharedClock: sendableClock) { key in
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

/// The clock readings by which ``RateLimiterRegistry`` judges, under its lock, whether a
/// limiter is back at its full allowance; read before the lock.
struct FullAllowanceReading {
    /// ``RateLimiterStorage/rebasesAnywhere``, read before the clocks.
    let rebases: UInt64
    /// The shared clock's reading, when the registry's limiters share one.
    let shared: Duration?
    /// The system's boot-time clock in nanoseconds, on Linux.
    let systemBoot: Int64?

    init(sharedClock: ElapsedClock?) {
        self.rebases = RateLimiterStorage.rebasesAnywhere.load(ordering: .acquiring)
        #if canImport(Glibc)
            self.systemBoot = SystemClockSource.system.boot()
        #else
            self.systemBoot = nil
        #endif
        self.shared = sharedClock?.now()
    }

    /// A registry's test of which values to keep (see ``BoundedRegistry/Sparing``): it reads
    /// the clocks before the registry's lock, and asks `keeps` under it with that reading
    /// (and the registry's counts of shared parts).
    /// Shared by ``RateLimiterRegistry`` and ``ResiliencePipelineRegistry``, whose rate limiter
    /// stages it judges the same way.
    ///
    /// Optional, as the registry takes it: a function value returned by a call does not
    /// convert to an optional `@Sendable` function type under Swift 6.3's checking.
    static func sparing<Value: Sendable>(
        sharedClock: ElapsedClock?,
        _ keeps: @escaping @Sendable (FullAllowanceReading, Value, SharedPartCounts) -> Bool
    ) -> (@Sendable () -> (Value, SharedPartCounts) -> Bool)? {
        {
            // Read before the registry's lock: the re-base count first, then the clocks.
            let reading = FullAllowanceReading(sharedClock: sharedClock)
            return { keeps(reading, $0, $1) }
        }
    }

    /// Whether `limiter` would be back at its full allowance now, if nothing more were taken;
    /// reads no clock (see ``RateLimiterStorage/isAtFullAllowance(at:rebasesBefore:)``).
    func isAtFullAllowance(_ limiter: RateLimiter) -> Bool {
        let reading = self.systemBoot.flatMap { limiter.clock.elapsed(atSystemBoot: $0) } ?? self.shared
        return limiter.storage.isAtFullAllowance(at: reading, rebasesBefore: self.rebases)
    }
}
