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
/// that is closed and whose own throttle, if it has one, rejects nothing, since
/// such a breaker holds nothing worth keeping but its counts. Open, half-open
/// and isolated breakers are kept, because forgetting one would let its failing
/// dependency be called again at once. So is a closed breaker whose own
/// ``AdaptiveThrottle`` (one no other breaker held has: see `makeThrottle`)
/// rejects calls with a probability above zero, because forgetting it would hand
/// its overloaded host's clients a fresh throttle that lets every call through.
/// A throttle shared by every key keeps no breaker: forgetting one of its
/// breakers loses nothing of it. Only when every breaker held is kept for one of
/// those reasons does the registry forget the least recently used of them, so
/// that it never grows past its bound. A forgotten breaker keeps working for
/// anyone still holding it; the next ``breaker(for:)`` for its key makes a
/// fresh, closed one.
///
/// A registry made with a name tells its observer when it forgets a breaker that
/// was not closed: a change of the key's breaker from its state to
/// ``CircuitBreakerState/closed``, for ``CircuitBreakerTransitionReason/forgotten``.
/// Its breakers take their generations from one counter of the registry's, so
/// those of a key keep rising across the breakers the registry makes for it, and
/// the key's events sorted by generation end in the state its next caller meets.
/// The registry keeps one counter, however many keys it has forgotten. A breaker
/// forgotten while some task still uses it goes on numbering from that counter,
/// so its later events sort after the forgetting. A registry made with
/// ``init(maximumCount:makeBreaker:)`` holds breakers of yours: each numbers its
/// own generations from zero, and forgetting one is not reported.
///
/// Finding the victim walks from the least recently used end until it meets a
/// breaker not kept, reading each breaker's state, and its throttle's counts,
/// from atomic words without their locks. A throttle is judged without reading
/// its clock (which may be yours) under the registry's lock: at the latest time
/// it read it, or, on the system's continuous clock on Linux, at the time read
/// just before the lock. So a throttle on another clock that has not been called
/// since its window emptied may still be judged to reject, and its breaker kept,
/// until it is called again.
///
/// ## Cost
/// The registry remembers the last keys it was asked for, bit for bit, in a small
/// table of 16 entries, when the key type is one whose every bit is meaningful
/// (`String` and the fixed-width integers). A key whose representation is the
/// same as a remembered one (an integer, a string of up to 15 UTF-8 bytes, the same
/// `String` value or literal passed again) is found without a lock, and without
/// hashing or comparing it: an atomic increment and decrement, a few loads, and the
/// breaker's retain. Two values with the same bits are the same value, so no `==` is
/// needed to know it; as in a `Dictionary`, a key must not change its hash or
/// equality while the registry holds it. Such a hit still counts as a use: the next
/// operation that takes the lock moves its breaker to the front before anything else.
///
/// Any other key is hashed and compared as usual: the lookup hashes it, takes the
/// lock for one integer-keyed lookup, compares the key once, and takes the lock
/// once more to remember it (unless its slot already leads to the same breaker).
/// Either way the lookup allocates nothing. The key's own `hash(into:)` and `==`
/// always run outside the lock, so a key type may do anything in them. The lookup
/// is inlinable, so it is specialized for your key type (`String`, `Int`, a host)
/// in your module.
public final class CircuitBreakerRegistry<Key: Hashable & Sendable>: Sendable {
    /// The most breakers the registry keeps.
    public let maximumCount: Int

    @usableFromInline let makeBreaker: @Sendable (Key) -> CircuitBreaker
    @usableFromInline let entries: Lock<RegistryEntries<Key>>
    /// The last keys looked up, bit for bit, read without the lock.
    @usableFromInline let recentKeys: RegistryRecentKeys<CircuitBreaker>

    /// Creates a registry that makes each key's breaker with `makeBreaker`.
    ///
    /// `makeBreaker` runs outside the registry's lock; if two tasks ask for a
    /// new key at once, both may call it, and the breaker made second is
    /// dropped unused. The same holds for the `makeThrottle` closure of the other
    /// initializers, which the breaker they make calls: it runs once per breaker made,
    /// outside the lock, and a throttle it makes for a breaker that is dropped unused,
    /// or later forgotten at the bound, goes with that breaker.
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
        let recentKeys = RegistryRecentKeys<CircuitBreaker>()
        self.recentKeys = recentKeys
        self.entries = Lock(RegistryEntries(recentKeys: recentKeys))
    }

    /// Creates a registry whose breakers share one configuration, observer and clock.
    ///
    /// Each breaker is named `"<name>[<key>]"`, and all of them measure time
    /// from the registry's creation, so their snapshots and events compare directly.
    ///
    /// With `makeThrottle`, each breaker asks a client-side ``AdaptiveThrottle``
    /// before every call, as ``CircuitBreaker/throttle`` describes: return a new
    /// throttle for each key when the keys are separate servers (a registry of
    /// hosts), so that one host's outage throttles only the calls to it; return one
    /// shared throttle for every key when the keys are endpoints of one server:
    ///
    /// ```swift
    /// let clock = ContinuousClock()
    /// // A throttle per host, made with the breaker and forgotten with it.
    /// let hosts = try CircuitBreakerRegistry<String>(name: "hosts", makeThrottle: { _ in
    ///     try? AdaptiveThrottle(floor: 10, clock: clock)
    /// }, clock: clock)
    /// // One throttle for every endpoint of one server.
    /// let throttle = try AdaptiveThrottle(clock: clock)
    /// let endpoints = try CircuitBreakerRegistry<String>(
    ///     name: "api", makeThrottle: { _ in throttle }, clock: clock)
    /// ```
    ///
    /// - Parameters:
    ///   - name: The prefix of each breaker's name.
    ///   - configuration: The settings of every breaker.
    ///   - maximumCount: The most breakers kept; at least 1. Defaults to 1,000.
    ///   - observer: Receives every breaker's events, or `nil`.
    ///   - makeThrottle: Returns the throttle of the breaker the registry is making for a
    ///     key, or `nil` for none; `nil` (the default) gives no breaker a throttle. See
    ///     ``init(maximumCount:makeBreaker:)`` for when the registry calls it.
    ///   - clock: The clock every breaker uses.
    /// - Throws: ``ConfigurationError`` when `maximumCount` is below 1.
    public convenience init(
        name: String,
        configuration: CircuitBreakerConfiguration = .default,
        maximumCount: Int = 1_000,
        observer: (any CircuitBreakerObserver)? = nil,
        makeThrottle: (@Sendable (Key) -> AdaptiveThrottle?)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        let elapsedClock = ElapsedClock(clock)
        let generations = CircuitBreakerGenerations()
        try self.init(maximumCount: maximumCount) { key in
            CircuitBreaker(
                name: "\(name)[\(key)]", configuration: configuration, observer: observer,
                throttle: makeThrottle?(key), elapsedClock: elapsedClock,
                generations: generations)
        }
    }

    /// Creates a registry from settings already validated; it cannot fail, so it does not throw.
    ///
    /// Each breaker is named `"<name>[<key>]"`, is made with `configuration.breaker`, and
    /// measures time from the registry's creation, as with
    /// ``init(name:configuration:maximumCount:observer:makeThrottle:clock:)``, which also
    /// says how to choose between a throttle per key and one shared by every key.
    ///
    /// A throttle is not one of the encoded settings: it carries a clock, a random
    /// generator and counts, and a shared one is an object several layers hold. A
    /// decoded configuration takes its throttles here, through `makeThrottle`.
    ///
    /// - Parameters:
    ///   - name: The prefix of each breaker's name.
    ///   - configuration: The bound and the settings of every breaker.
    ///   - observer: Receives every breaker's events, or `nil`.
    ///   - makeThrottle: Returns the throttle of the breaker the registry is making for a
    ///     key, or `nil` for none; `nil` (the default) gives no breaker a throttle.
    ///   - clock: The clock every breaker uses.
    public convenience init(
        name: String,
        configuration: CircuitBreakerRegistryConfiguration,
        observer: (any CircuitBreakerObserver)? = nil,
        makeThrottle: (@Sendable (Key) -> AdaptiveThrottle?)? = nil,
        clock: some Clock<Duration> = ContinuousClock()
    ) {
        let elapsedClock = ElapsedClock(clock)
        let generations = CircuitBreakerGenerations()
        let breakerConfiguration = configuration.breaker
        self.init(uncheckedMaximumCount: configuration.maximumCount) { key in
            CircuitBreaker(
                name: "\(name)[\(key)]", configuration: breakerConfiguration, observer: observer,
                throttle: makeThrottle?(key), elapsedClock: elapsedClock,
                generations: generations)
        }
    }

    /// The breaker for `key`, made now if the registry does not hold one.
    ///
    /// The same key returns the same breaker for as long as the registry keeps
    /// it (see the bound, above).
    @inlinable
    public func breaker(for key: Key) -> CircuitBreaker {
        let words = RegistryKeyBits.words(of: key)
        let slot = RegistryKeyBits.isBitComparable(Key.self) ? RegistryKeyBits.slot(of: words) : 0
        // A key remembered bit for bit: no lock, no hashing and no `==`.
        if RegistryKeyBits.isBitComparable(Key.self),
            let breaker = self.recentKeys.breaker(for: words, slot: slot, markingUse: true)
        {
            return breaker
        }
        // The key's hash and `==` run outside the lock; under it, only integer work.
        let hash = key.hashValue
        if let candidate = self.entries.withLock({ $0.useFirstCandidate(hash: hash, slot: slot) }),
            candidate.key == key
        {
            // Already remembered in this slot (another copy of an equal key): no second lock.
            if candidate.isMarkedUsed, candidate.isRemembered { return candidate.breaker }
            let released = self.entries.withLock { entries in
                if !candidate.isMarkedUsed { entries.use(index: candidate.index, ifHolding: candidate.breaker) }
                return entries.remember(key, slot: slot, index: candidate.index, ifHolding: candidate.breaker)
            }
            // Released here, outside the lock: a key's or a breaker's deinit may run user code.
            _ = released
            return candidate.breaker
        }
        return self.breakerAfterMiss(for: key, hash: hash, slot: slot)
    }

    /// The breaker for `key` if the registry holds one; never makes one, and
    /// does not count as a use.
    public func existingBreaker(for key: Key) -> CircuitBreaker? {
        let words = RegistryKeyBits.words(of: key)
        let slot = RegistryKeyBits.isBitComparable(Key.self) ? RegistryKeyBits.slot(of: words) : 0
        if RegistryKeyBits.isBitComparable(Key.self),
            let breaker = self.recentKeys.breaker(for: words, slot: slot, markingUse: false)
        {
            return breaker
        }
        let hash = key.hashValue
        let candidates = self.entries.withLock { $0.candidates(hash: hash) }
        return candidates.first { $0.key == key }?.breaker
    }

    /// How many breakers the registry holds; never more than ``maximumCount``.
    public var count: Int {
        self.entries.withLock { $0.count }
    }

    /// A snapshot of every breaker held, by key.
    public func snapshots() -> [Key: CircuitBreakerSnapshot] {
        let held = self.entries.withLock { $0.all() }
        var result: [Key: CircuitBreakerSnapshot] = [:]
        result.reserveCapacity(held.count)
        for (key, breaker) in held {
            result[key] = breaker.snapshot()
        }
        return result
    }

    /// Whether another holder (or the caller) has the registry's lock now; for tests.
    package var isLockHeld: Bool {
        self.entries.isHeld
    }

    /// The lookup when the first candidate for `hash` was not `key`: another key with the
    /// same hash, or no breaker yet.
    ///
    /// Compares every candidate outside the lock. To add a breaker, it checks under the lock
    /// that no entry was added or removed since it looked (a version number), so a key can
    /// never get two breakers; if one was, it looks again.
    @usableFromInline
    func breakerAfterMiss(for key: Key, hash: Int, slot: Int) -> CircuitBreaker {
        var made: CircuitBreaker?
        while true {
            let (candidates, version, judgesThrottles) = self.entries.withLock {
                ($0.candidates(hash: hash), $0.version, $0.judgesThrottles(maximumCount: self.maximumCount))
            }
            if let found = candidates.first(where: { $0.key == key }) {
                let released = self.entries.withLock { entries in
                    entries.use(index: found.index, ifHolding: found.breaker)
                    return entries.remember(key, slot: slot, index: found.index, ifHolding: found.breaker)
                }
                // Released here, outside the lock: a key's or a breaker's deinit may run user code.
                _ = released
                return found.breaker
            }
            let breaker = made ?? self.makeBreaker(key)
            made = breaker
            // Read before the lock, and only when the insertion will forget a breaker and some
            // breaker held has a throttle: a throttle is judged under the lock at this reading,
            // without reading its clock there (see `AdaptiveThrottle.isRejecting(atSystemBoot:)`).
            let reading = judgesThrottles ? ThrottleReading() : nil
            let released: RegistryReleased<Key>? = self.entries.withLock { entries in
                guard entries.version == version else { return nil }
                return entries.insert(
                    key: key, hash: hash, slot: slot, breaker: breaker, maximumCount: self.maximumCount,
                    throttleReading: reading)
            }
            // Released here, outside the lock: a key's or a breaker's deinit may run user code.
            if let released {
                // A breaker forgotten while not closed: the observer hears that its key's breaker is closed now.
                released.evictedBreaker?.reportForgotten()
                _ = released
                return breaker
            }
        }
    }
}

/// The registry's breakers in a table from hash values to nodes, threaded on a doubly
/// linked recency list kept in an array (indices, not references), most recent first.
///
/// The table is keyed by the key's hash value, an `Int`, so that no user code (the key's
/// `hash(into:)` or `==`) runs while the registry's lock is held: the registry hashes
/// outside the lock, and compares the candidates it gets back outside the lock too.
@usableFromInline
struct RegistryEntries<Key: Hashable & Sendable> {
    @usableFromInline
    struct Node {
        @usableFromInline var key: Key
        @usableFromInline var hash: Int
        @usableFromInline var breaker: CircuitBreaker
        /// The next node with the same hash value, or -1.
        @usableFromInline var nextWithSameHash: Int
        @usableFromInline var newer: Int
        @usableFromInline var older: Int
    }

    /// A node with the same hash value as a lookup's key, for the caller to compare outside the lock.
    @usableFromInline
    struct Candidate {
        @usableFromInline var index: Int
        @usableFromInline var key: Key
        @usableFromInline var breaker: CircuitBreaker
        /// Whether the lookup already marked the node as the most recently used.
        @usableFromInline var isMarkedUsed: Bool
        /// Whether the cache of recent keys already points the lookup's slot at this node.
        @usableFromInline var isRemembered: Bool

        @inlinable
        init(index: Int, key: Key, breaker: CircuitBreaker, isMarkedUsed: Bool = false, isRemembered: Bool = false) {
            self.index = index
            self.key = key
            self.breaker = breaker
            self.isMarkedUsed = isMarkedUsed
            self.isRemembered = isRemembered
        }
    }

    /// The first node of each hash value's chain.
    @usableFromInline var firstByHash: [Int: Int] = [:]
    @usableFromInline var nodes: [Node] = []
    @usableFromInline var newest = -1
    @usableFromInline var oldest = -1
    /// Bumped by every insertion and removal.
    @usableFromInline var version: UInt64 = 0
    /// The lock-free table of recent keys, which only this state writes.
    @usableFromInline let recent: RegistryRecentKeys<CircuitBreaker>
    /// The key each slot of ``recent`` remembers: a copy, so that its bits stay those of a
    /// live value (a string's storage cannot be freed and reused while the slot holds them).
    @usableFromInline var recentKeys: [Key?]
    /// The breaker each slot of ``recent`` points at, held so that the slot's address stays valid.
    @usableFromInline var recentBreakers: [CircuitBreaker?]
    /// The node each remembered key found, or -1 when none (never remembered, or evicted).
    @usableFromInline var recentIndices: [Int]
    /// What slots held before they were rewritten while a lock-free reader was inside them:
    /// released by a later operation that finds the slot without readers.
    @usableFromInline var retired: [RegistryRetired<Key>] = []
    /// How many of the breakers held have each throttle, so that one shared by other keys'
    /// breakers keeps none of them; empty when no breaker held has a throttle.
    var throttleHolders: [ObjectIdentifier: Int] = [:]

    @usableFromInline init(recentKeys: RegistryRecentKeys<CircuitBreaker>) {
        self.recent = recentKeys
        self.recentKeys = Array(repeating: nil, count: RegistryKeyBits.slotCount)
        self.recentBreakers = Array(repeating: nil, count: RegistryKeyBits.slotCount)
        self.recentIndices = Array(repeating: -1, count: RegistryKeyBits.slotCount)
        self.retired.reserveCapacity(Self.maximumRetired + RegistryKeyBits.slotCount)
    }

    /// The most retired entries kept before the registry stops remembering new keys (it
    /// still clears slots), so that readers that never leave cannot make the list grow.
    @usableFromInline static var maximumRetired: Int { 2 * RegistryKeyBits.slotCount }

    /// Moves the nodes that lock-free hits found since the last locked operation to the front
    /// of the recency list; every operation that reads or changes recency calls it first.
    ///
    /// Nothing for a key type that never takes the lock-free path, and one load when no hit
    /// happened since the last call.
    @inlinable @inline(__always)
    mutating func recordLockFreeUses() {
        guard RegistryKeyBits.isBitComparable(Key.self), self.recent.mayHaveUnrecordedUse
        else { return }
        self.recordMarkedUses()
    }

    /// The part of ``recordLockFreeUses()`` that runs when some slot may be marked.
    @usableFromInline
    mutating func recordMarkedUses() {
        guard self.recent.takeUnrecordedUse() else { return }
        for slot in 0..<RegistryKeyBits.slotCount where self.recent.takeUse(slot: slot) {
            let index = self.recentIndices[slot]
            if index >= 0, index != self.newest {
                self.unlink(index)
                self.pushNewest(index)
            }
        }
    }

    /// Remembers that `key` found the node at `index`, if the node still holds `breaker`;
    /// returns what that displaced, for the caller to release outside the lock.
    @inlinable
    mutating func remember(
        _ key: Key, slot: Int, index: Int, ifHolding breaker: CircuitBreaker
    ) -> RegistryReleased<Key> {
        var released = RegistryReleased<Key>()
        released.retired = self.sweepRetired()
        guard index < self.nodes.count, self.nodes[index].breaker === breaker,
            self.retired.count < Self.maximumRetired
        else { return released }
        var displaced = RegistryRetired(slot: slot, key: key, breaker: breaker)
        swap(&displaced.key, &self.recentKeys[slot])
        swap(&displaced.breaker, &self.recentBreakers[slot])
        self.recentIndices[slot] = index
        if RegistryKeyBits.isBitComparable(Key.self),
            self.recent.write(slot: slot, RegistryKeyBits.words(of: key), breaker: breaker)
        {
            self.retired.append(displaced)
        } else {
            released.displaced = displaced
        }
        return released
    }

    /// Empties `slot`, keeping what it held in ``retired`` for the next sweep.
    mutating func clear(slot: Int) {
        var displaced = RegistryRetired<Key>(slot: slot, key: nil, breaker: nil)
        swap(&displaced.key, &self.recentKeys[slot])
        swap(&displaced.breaker, &self.recentBreakers[slot])
        self.recentIndices[slot] = -1
        if RegistryKeyBits.isBitComparable(Key.self) {
            _ = self.recent.write(slot: slot, .zero, breaker: nil)
        }
        self.retired.append(displaced)
    }

    /// Takes out of ``retired`` every entry whose slot no lock-free reader is inside, for the
    /// caller to release outside the lock.
    ///
    /// A reader that could have read a retired entry announced itself before the write that
    /// retired it; a count of zero now means it has left, and a reader arriving later finds
    /// the slot's new contents.
    @inlinable
    mutating func sweepRetired() -> [RegistryRetired<Key>] {
        guard !self.retired.isEmpty else { return [] }
        let recent = self.recent
        var released: [RegistryRetired<Key>] = []
        self.retired.removeAll { entry in
            guard recent.isUnread(slot: entry.slot) else { return false }
            released.append(entry)
            return true
        }
        return released
    }

    /// How many breakers are held.
    var count: Int { self.nodes.count }

    /// The first node with `hash`; marked as the most recently used when it is the only one.
    ///
    /// The key is compared outside the lock, after this returns, so the mark is made in
    /// advance: when no other node shares the hash value, the node is almost surely the
    /// key's (only a full hash collision with a key not held makes it a wrong guess, which
    /// costs that node nothing worse than counting as used). When the chain is longer, the
    /// caller's miss path marks the node that matched.
    @inlinable
    mutating func useFirstCandidate(hash: Int, slot: Int) -> Candidate? {
        self.recordLockFreeUses()
        guard let index = self.firstByHash[hash] else { return nil }
        let isOnlyNode = self.nodes[index].nextWithSameHash == -1
        if index != self.newest, isOnlyNode {
            self.unlink(index)
            self.pushNewest(index)
        }
        return Candidate(
            index: index, key: self.nodes[index].key, breaker: self.nodes[index].breaker,
            isMarkedUsed: isOnlyNode || index == self.newest, isRemembered: self.recentIndices[slot] == index)
    }

    /// Every node with `hash`.
    func candidates(hash: Int) -> [Candidate] {
        var result: [Candidate] = []
        var index = self.firstByHash[hash] ?? -1
        while index != -1 {
            result.append(Candidate(index: index, key: self.nodes[index].key, breaker: self.nodes[index].breaker))
            index = self.nodes[index].nextWithSameHash
        }
        return result
    }

    /// Every key and breaker held.
    func all() -> [(Key, CircuitBreaker)] {
        self.nodes.map { ($0.key, $0.breaker) }
    }

    /// Marks the node at `index` as the most recently used, if it still holds `breaker`.
    @inlinable
    mutating func use(index: Int, ifHolding breaker: CircuitBreaker) {
        self.recordLockFreeUses()
        guard index < self.nodes.count, self.nodes[index].breaker === breaker, index != self.newest else { return }
        self.unlink(index)
        self.pushNewest(index)
    }

    /// Whether an insertion now would forget a breaker while some breaker held has a throttle,
    /// so that it must judge throttles (with a ``ThrottleReading`` made before the lock).
    func judgesThrottles(maximumCount: Int) -> Bool {
        self.nodes.count >= maximumCount && !self.throttleHolders.isEmpty
    }

    /// Whether `breaker`'s throttle is its own (no other breaker held has it) and rejects calls
    /// with a probability above zero at `reading` (never without one): forgetting the breaker would hand its key a
    /// throttle that lets every call through to an overloaded host.
    private func ownThrottleIsRejecting(_ breaker: CircuitBreaker, at reading: ThrottleReading?) -> Bool {
        guard let reading, let throttle = breaker.throttle,
            self.throttleHolders[ObjectIdentifier(throttle), default: 0] <= 1
        else { return false }
        return throttle.isRejecting(atSystemBoot: reading.systemBoot)
    }

    /// Adds `breaker` for `key` as the most recently used and remembers `key` in `slot`;
    /// returns what it released (the entry forgotten to make room, what the slots it
    /// rewrote held), for the caller to release outside the lock.
    ///
    /// At the bound, it forgets the least recently used breaker that is closed and whose own
    /// throttle, if it has one, rejects nothing at `throttleReading` (`nil` when no breaker held
    /// has a throttle); when every breaker is kept that way, the least recently used of all.
    mutating func insert(
        key: Key, hash: Int, slot: Int, breaker: CircuitBreaker, maximumCount: Int,
        throttleReading: ThrottleReading? = nil
    ) -> RegistryReleased<Key> {
        self.recordLockFreeUses()
        self.version &+= 1
        // Counted before a victim is chosen: a throttle the new breaker has too is not the
        // victim's own, since forgetting the victim loses nothing of it.
        if let throttle = breaker.throttle { self.throttleHolders[ObjectIdentifier(throttle), default: 0] += 1 }
        if self.nodes.count < maximumCount {
            self.nodes.append(
                Node(
                    key: key, hash: hash, breaker: breaker, nextWithSameHash: self.firstByHash[hash] ?? -1,
                    newer: -1, older: -1))
            let index = self.nodes.count - 1
            self.pushNewest(index)
            self.firstByHash[hash] = index
            return self.remember(key, slot: slot, index: index, ifHolding: breaker)
        }
        var victim = self.oldest
        var index = self.oldest
        while index != -1 {
            let candidate = self.nodes[index].breaker
            if candidate.isClosed, !self.ownThrottleIsRejecting(candidate, at: throttleReading) {
                victim = index
                break
            }
            index = self.nodes[index].newer
        }
        let evicted = (key: self.nodes[victim].key, breaker: self.nodes[victim].breaker)
        if let throttle = evicted.breaker.throttle {
            let holders = self.throttleHolders[ObjectIdentifier(throttle), default: 1] - 1
            self.throttleHolders[ObjectIdentifier(throttle)] = holders > 0 ? holders : nil
        }
        self.removeFromHashChain(victim)
        self.unlink(victim)
        // A remembered key must not find the evicted breaker again: its slots are emptied
        // now, and what they held is released once no lock-free reader can be using it.
        for slot in self.recentIndices.indices where self.recentIndices[slot] == victim {
            self.clear(slot: slot)
        }
        self.nodes[victim] = Node(
            key: key, hash: hash, breaker: breaker, nextWithSameHash: self.firstByHash[hash] ?? -1, newer: -1,
            older: -1)
        self.firstByHash[hash] = victim
        self.pushNewest(victim)
        var released = self.remember(key, slot: slot, index: victim, ifHolding: breaker)
        released.evictedKey = evicted.key
        released.evictedBreaker = evicted.breaker
        return released
    }

    private mutating func removeFromHashChain(_ index: Int) {
        let hash = self.nodes[index].hash
        let next = self.nodes[index].nextWithSameHash
        if self.firstByHash[hash] == index {
            self.firstByHash[hash] = next == -1 ? nil : next
            return
        }
        var previous = self.firstByHash[hash] ?? -1
        while previous != -1 {
            if self.nodes[previous].nextWithSameHash == index {
                self.nodes[previous].nextWithSameHash = next
                return
            }
            previous = self.nodes[previous].nextWithSameHash
        }
    }

    @inlinable
    mutating func unlink(_ index: Int) {
        let newer = self.nodes[index].newer
        let older = self.nodes[index].older
        if newer != -1 { self.nodes[newer].older = older } else { self.newest = older }
        if older != -1 { self.nodes[older].newer = newer } else { self.oldest = newer }
        self.nodes[index].newer = -1
        self.nodes[index].older = -1
    }

    @inlinable
    mutating func pushNewest(_ index: Int) {
        self.nodes[index].older = self.newest
        self.nodes[index].newer = -1
        if self.newest != -1 { self.nodes[self.newest].newer = index }
        self.newest = index
        if self.oldest == -1 { self.oldest = index }
    }
}

/// Reads a key as raw bytes, for the registry's cache of recent keys.
///
/// Two values with the same bits are the same value, whatever their type's `==`
/// says, so a key found here needs no comparison through user code. Equal values
/// with different bits (two `String`s with separate storage) simply miss.
@usableFromInline
enum RegistryKeyBits {
    /// How many keys the cache remembers; a power of two.
    @usableFromInline static var slotCount: Int { 16 }

    /// Whether every bit of a `Key` value is meaningful, so that its bytes may be read and compared.
    ///
    /// A struct with padding, or an enum whose cases leave payload bytes unused, has
    /// bytes nobody initialized; reading them is undefined, so such keys skip the cache.
    @inlinable
    static func isBitComparable<Key>(_: Key.Type) -> Bool {
        Key.self == String.self || Key.self == Int.self || Key.self == Int64.self || Key.self == Int32.self
            || Key.self == Int16.self || Key.self == Int8.self || Key.self == UInt.self || Key.self == UInt64.self
            || Key.self == UInt32.self || Key.self == UInt16.self || Key.self == UInt8.self
    }

    /// The cache slot of a key with `words`: a multiplicative hash of its bytes (not the
    /// key's `hash(into:)`). The lookup uses slot 0 for a key type that is not
    /// `isBitComparable(_:)`, whose words it never reads.
    @inlinable
    static func slot(of words: Words) -> Int {
        var hash = (0x9E37_79B9_7F4A_7C15 ^ words.low) &* 0xFF51_AFD7_ED55_8CCD
        hash = (hash ^ words.high) &* 0xFF51_AFD7_ED55_8CCD
        return Int(truncatingIfNeeded: (hash ^ (hash >> 29)) & UInt64(Self.slotCount - 1))
    }

    /// A key's bytes as two zero-padded 64-bit words; every key type the cache takes fits in 16 bytes.
    @usableFromInline
    struct Words: Equatable, Sendable {
        @usableFromInline var low: UInt64
        @usableFromInline var high: UInt64

        @inlinable init(low: UInt64, high: UInt64) {
            self.low = low
            self.high = high
        }

        /// The bits of an empty slot.
        @inlinable static var zero: Self { Self(low: 0, high: 0) }
    }

    /// The bytes of `key`, for a key type that is `isBitComparable(_:)`; ``Words/zero`` for any other.
    @inlinable
    static func words<Key>(of key: Key) -> Words {
        guard Self.isBitComparable(Key.self), MemoryLayout<Key>.size <= 16 else { return .zero }
        return withUnsafeBytes(of: key) { bytes in
            if bytes.count == 16 {
                return Words(
                    low: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                    high: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
            if bytes.count == 8 {
                return Words(low: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), high: 0)
            }
            var words = Words.zero
            for offset in 0..<bytes.count {
                if offset < 8 {
                    words.low |= UInt64(bytes[offset]) &<< UInt64(offset * 8)
                } else {
                    words.high |= UInt64(bytes[offset]) &<< UInt64((offset - 8) * 8)
                }
            }
            return words
        }
    }
}

/// The reading by which ``CircuitBreakerRegistry`` judges, under its lock, whether a breaker's
/// throttle rejects calls; made before the lock, since a throttle's clock may be user code.
struct ThrottleReading {
    /// The system's boot-time clock in nanoseconds, on Linux: a throttle on the system's
    /// continuous clock is judged at it, any other at the latest time it read its clock.
    let systemBoot: Int64?

    init() {
        #if canImport(Glibc)
            self.systemBoot = SystemClockSource.system.boot()
        #else
            self.systemBoot = nil
        #endif
    }
}
