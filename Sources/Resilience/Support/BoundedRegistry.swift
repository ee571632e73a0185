/// One value per key, made on first use, at most `maximumCount` kept; the least
/// recently used is forgotten first. The registries of limiters and pipelines share it.
///
/// The entries are keyed by the key's hash value, an `Int`, so that no user code
/// (the key's `hash(into:)` or `==`) runs while the lock is held: a lookup hashes
/// the key first, takes the lock for an integer-keyed look-up that returns the
/// entries with that hash, and compares them after releasing it. Finding a victim
/// walks every entry, on insertion at the bound only, but asks the sparing test (see
/// ``Sparing``) only of the entries used before the oldest one not spared found so far:
/// in a walk whose order (the hash values') is unrelated to use, about the logarithm of
/// the count of them, unless most entries are spared.
///
/// A value may hold objects that other values hold too (see ``Parts``: a pipeline's retry
/// budget, shared by every key or made for one), whose state forgetting one of those values
/// does not lose. The registry counts, for each such object, the values held that hold it,
/// so that the sparing test can tell a value's own objects from shared ones
/// (``SharedPartCounts``).
///
/// Like ``CircuitBreakerRegistry``, it remembers the last keys it was asked for bit for
/// bit, for `String` and the fixed-width integers, in a ``RegistryRecentKeys`` table read
/// without the lock: a lookup of a key remembered there takes no lock and runs no
/// `hash(into:)` or `==`. Each value is kept in a ``Box`` (one allocation per insertion),
/// since a value may be a struct, which a lock-free reader could not retain; the table
/// holds the box's address, and the reader retains the box before it reads the value out
/// of it. Why it is safe is ``RegistryRecentKeys``'s comment; `Docs/DesignDecisions.md`
/// gives the measurement. A lock-free hit marks its slot as used, and the next locked
/// operation stamps the entry it leads to as used before anything else, so the least
/// recently used entry is exact with respect to locked operations.
///
/// A looked-up key not remembered takes the lock once (twice when another held key has
/// the same hash value) and once more to remember it, unless its slot already leads to
/// the same value.
@usableFromInline
final class BoundedRegistry<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// A value, in an object that a lock-free reader can retain.
    @usableFromInline
    final class Box: Sendable {
        @usableFromInline let value: Value
        /// The objects of ``Parts`` the value holds, each once. Kept here rather than in an
        /// entry, so that the copies of entries a lookup makes retain nothing more.
        let parts: [ObjectIdentifier]

        init(_ value: Value, parts: [ObjectIdentifier]) {
            self.value = value
            self.parts = parts
        }
    }

    private struct Entry {
        var key: Key
        var box: Box
        var lastUse: UInt64
    }

    /// What a slot of the table of recent keys held before it was rewritten: the key copy
    /// and the box, kept until no lock-free reader is inside the slot.
    private struct Retired {
        var slot: Int
        var key: Key?
        var box: Box?
    }

    /// What one locked operation let go of, for the caller to drop after the lock is
    /// released: a key's or a value's deinit may run user code.
    private struct Released {
        var evicted: Entry?
        var displaced: Retired?
        var retired: [Retired] = []
    }

    private struct Entries {
        /// The entries with each hash value, in insertion order.
        var byHash: [Int: [Entry]] = [:]
        var count = 0
        var clock: UInt64 = 0
        /// Bumped by every insertion and removal.
        var version: UInt64 = 0
        /// The lock-free table, which only this state writes.
        let recent: RegistryRecentKeys<Box>
        /// The key each slot of ``recent`` remembers: a copy, so that its bits stay those of
        /// a live value (a `String`'s storage cannot be freed and reused) while they are there.
        var recentKeys: [Key?]
        /// The box each slot of ``recent`` points at, held so that the slot's address stays valid.
        var recentBoxes: [Box?]
        /// The hash value of each slot's key, to find its entry when a lock-free hit is recorded.
        var recentHashes: [Int]
        /// What rewritten slots held while a lock-free reader was inside them.
        var retired: [Retired] = []
        /// How many of the values held hold each object of ``Parts``; empty without ``Parts``.
        var partHolders: [ObjectIdentifier: Int] = [:]

        let maximumCount: Int

        init(recent: RegistryRecentKeys<Box>, maximumCount: Int) {
            self.recent = recent
            self.maximumCount = maximumCount
            self.recentKeys = Array(repeating: nil, count: RegistryKeyBits.slotCount)
            self.recentBoxes = Array(repeating: nil, count: RegistryKeyBits.slotCount)
            self.recentHashes = Array(repeating: 0, count: RegistryKeyBits.slotCount)
        }

        /// The most retired entries kept before the registry stops remembering new keys (it
        /// still clears slots), so that readers that never leave cannot make the list grow.
        static var maximumRetired: Int { 2 * RegistryKeyBits.slotCount }

        /// The entries with `hash`, the version they belong to, and whether `slot` already
        /// leads to the first one. When there is only one, it is marked as used now: it is
        /// almost surely the key's, and a wrong guess (a full hash collision with a key not
        /// held) costs that entry nothing worse than counting as used.
        mutating func candidates(hash: Int, slot: Int) -> (
            entries: [Entry], version: UInt64, isRemembered: Bool, isFull: Bool
        ) {
            self.recordLockFreeUses()
            self.clock += 1
            guard let count = self.byHash[hash]?.count else { return ([], self.version, false, self.isFull) }
            // In place: no copy of the chain while no earlier lookup still holds it.
            if count == 1 { self.byHash[hash]?[0].lastUse = self.clock }
            let entries = self.byHash[hash] ?? []
            return (entries, self.version, self.recentBoxes[slot] === entries.first?.box, self.isFull)
        }

        /// Whether an insertion now would forget an entry.
        var isFull: Bool { self.count >= self.maximumCount }

        /// Marks the entry at `index` of `hash`'s chain as used, if nothing was added or
        /// removed since `version`.
        mutating func use(hash: Int, index: Int, version: UInt64) {
            self.recordLockFreeUses()
            guard self.version == version, let count = self.byHash[hash]?.count, index < count else { return }
            self.clock += 1
            self.byHash[hash]![index].lastUse = self.clock
        }

        /// Stamps as used the entries that lock-free hits found since the last locked
        /// operation; every operation that reads or changes recency calls it first.
        ///
        /// Nothing for a key type that never takes the lock-free path, and one load when no
        /// hit happened since the last call.
        mutating func recordLockFreeUses() {
            guard RegistryKeyBits.isBitComparable(Key.self), self.recent.takeUnrecordedUse() else { return }
            self.clock += 1
            for slot in 0..<RegistryKeyBits.slotCount where self.recent.takeUse(slot: slot) {
                guard let box = self.recentBoxes[slot],
                    let index = self.byHash[self.recentHashes[slot]]?.firstIndex(where: { $0.box === box })
                else { continue }
                self.byHash[self.recentHashes[slot]]![index].lastUse = self.clock
            }
        }

        /// Remembers that `key` (with `hash`) found `box` in `slot`, if `box` is still held;
        /// returns what that displaced, for the caller to release outside the lock.
        mutating func remember(_ key: Key, hash: Int, slot: Int, box: Box) -> Released {
            var released = Released()
            released.retired = self.sweepRetired()
            guard RegistryKeyBits.isBitComparable(Key.self), self.recentBoxes[slot] !== box,
                self.byHash[hash]?.contains(where: { $0.box === box }) == true,
                self.retired.count < Self.maximumRetired
            else { return released }
            var displaced = Retired(slot: slot, key: key, box: box)
            swap(&displaced.key, &self.recentKeys[slot])
            swap(&displaced.box, &self.recentBoxes[slot])
            self.recentHashes[slot] = hash
            if self.recent.write(slot: slot, RegistryKeyBits.words(of: key), breaker: box) {
                self.retired.append(displaced)
            } else {
                released.displaced = displaced
            }
            return released
        }

        /// Takes out of ``retired`` every entry whose slot no lock-free reader is inside.
        mutating func sweepRetired() -> [Retired] {
            guard !self.retired.isEmpty else { return [] }
            let recent = self.recent
            var released: [Retired] = []
            self.retired.removeAll { entry in
                guard recent.isUnread(slot: entry.slot) else { return false }
                released.append(entry)
                return true
            }
            return released
        }

        /// Adds `box` for `key`, forgetting the least recently used entry at the bound, and
        /// remembers `key` in `slot`; returns what it let go of, for the caller to release
        /// outside the lock.
        mutating func insert(
            key: Key, box: Box, hash: Int, slot: Int, sparing isSpared: ((Value, SharedPartCounts) -> Bool)?
        ) -> Released {
            self.recordLockFreeUses()
            self.clock += 1
            self.version &+= 1
            // Counted before a victim is chosen: an object the new value holds too is not the
            // victim's own, since forgetting the victim loses nothing of it.
            for part in box.parts { self.partHolders[part, default: 0] += 1 }
            var evicted: Entry?
            if self.isFull, let victim = self.leastRecentlyUsed(sparing: isSpared) {
                evicted = self.byHash[victim.hash]!.remove(at: victim.index)
                if self.byHash[victim.hash]!.isEmpty { self.byHash[victim.hash] = nil }
                self.count -= 1
                for part in evicted!.box.parts {
                    let holders = self.partHolders[part, default: 1] - 1
                    self.partHolders[part] = holders > 0 ? holders : nil
                }
                // No slot may lead to a box the registry no longer holds.
                if let victimBox = evicted?.box {
                    for index in 0..<RegistryKeyBits.slotCount where self.recentBoxes[index] === victimBox {
                        self.clear(slot: index)
                    }
                }
            }
            self.byHash[hash, default: []].append(Entry(key: key, box: box, lastUse: self.clock))
            self.count += 1
            var released = self.remember(key, hash: hash, slot: slot, box: box)
            released.evicted = evicted
            return released
        }

        /// Empties `slot`, keeping what it held in ``retired`` for a later sweep.
        private mutating func clear(slot: Int) {
            var displaced = Retired(slot: slot, key: nil, box: nil)
            swap(&displaced.key, &self.recentKeys[slot])
            swap(&displaced.box, &self.recentBoxes[slot])
            _ = self.recent.write(slot: slot, .zero, breaker: nil)
            self.retired.append(displaced)
        }

        /// The least recently used entry that `isSpared` does not spare, else the least
        /// recently used of all, so that the registry never grows past its bound.
        ///
        /// `isSpared` is asked only of an entry used before the oldest one not spared found so
        /// far: any other can be the victim neither way, since the oldest spared entry counts
        /// only when no entry is unspared, and then none was passed over.
        private func leastRecentlyUsed(
            sparing isSpared: ((Value, SharedPartCounts) -> Bool)?
        ) -> (hash: Int, index: Int)? {
            var oldest: (hash: Int, index: Int, lastUse: UInt64)?
            var oldestSpared: (hash: Int, index: Int, lastUse: UInt64)?
            let parts = SharedPartCounts(holders: self.partHolders)
            // Indices rather than `enumerated()`: this code is generic, unspecialized, and an
            // enumerated sequence asks the runtime for its types' metadata at every step.
            for (hash, entries) in self.byHash {
                for index in 0..<entries.count {
                    let lastUse = entries[index].lastUse
                    guard lastUse < oldest?.lastUse ?? .max else { continue }
                    if let isSpared, isSpared(entries[index].box.value, parts) {
                        if lastUse < oldestSpared?.lastUse ?? .max { oldestSpared = (hash, index, lastUse) }
                    } else {
                        oldest = (hash, index, lastUse)
                    }
                }
            }
            return (oldest ?? oldestSpared).map { ($0.hash, $0.index) }
        }
    }

    /// Makes, outside the lock, the test of which values to forget only when every value held
    /// is spared.
    ///
    /// Called before the lock by an insertion that will find the registry at its bound, so
    /// that it may read what the test needs and must not read under the lock (a clock that
    /// may be user code); the test it returns is asked under the lock, so it must be the
    /// package's own code (never a user's closure). What it read is older than the moment
    /// the test is asked: the test must allow for that. The test is also given the counts of
    /// ``Parts``, to tell the value's own objects from those other values held share.
    typealias Sparing = @Sendable () -> (Value, SharedPartCounts) -> Bool

    /// The objects a value holds that other values may hold too, and whose state the sparing
    /// test looks at (a pipeline's retry budgets and throttles); found outside the lock, once
    /// for each value made. It must be the package's own code, and return objects the value
    /// keeps alive (their identities are counted while it is held).
    typealias Parts = @Sendable (Value) -> [ObjectIdentifier]

    let maximumCount: Int
    private let make: @Sendable (Key) -> Value
    private let sparing: Sparing?
    private let parts: Parts?
    @usableFromInline let recent: RegistryRecentKeys<Box>
    private let entries: Lock<Entries>

    /// - Parameters:
    ///   - maximumCount: The most values kept; in 1...10,000,000.
    ///   - sparing: Makes, before the lock, the test of which values the bound forgets last
    ///     (see ``Sparing``); `nil` to forget the least recently used of all.
    ///   - parts: The objects of each value whose holders the registry counts for `sparing`
    ///     (see ``Parts``); `nil` for none.
    ///   - make: Makes the value for a key not held, outside the lock.
    init(
        maximumCount: Int, preparingSparing sparing: Sparing? = nil, parts: Parts? = nil,
        make: @escaping @Sendable (Key) -> Value
    ) throws(ConfigurationError) {
        try ConfigurationError.require(
            (1...10_000_000).contains(maximumCount), "maximumCount", maximumCount, "in 1...10000000")
        self.maximumCount = maximumCount
        self.sparing = sparing
        self.parts = parts
        self.make = make
        let recent = RegistryRecentKeys<Box>()
        self.recent = recent
        self.entries = Lock(Entries(recent: recent, maximumCount: maximumCount))
    }

    /// The value for `key`, made now (outside the lock) if not held.
    ///
    /// A key remembered bit for bit takes no lock and runs no `hash(into:)` or `==`.
    /// Inlinable, so that the lookup is specialized for the caller's key and value types
    /// (a generic lookup asks the runtime for the metadata of the table's types on every
    /// call); everything else is out of line, in ``value(for:slot:)``.
    @inlinable
    func value(for key: Key) -> Value {
        guard RegistryKeyBits.isBitComparable(Key.self) else { return self.value(for: key, slot: 0) }
        let words = RegistryKeyBits.words(of: key)
        let slot = RegistryKeyBits.slot(of: words)
        if let box = self.recent.breaker(for: words, slot: slot, markingUse: true) {
            return box.value
        }
        return self.value(for: key, slot: slot)
    }

    /// The lookup of a key not remembered bit for bit, whose slot in the table is `slot`.
    ///
    /// To add a value, it checks under the lock that no entry was added or removed since it
    /// looked (a version number), so a key can never get two values; if one was, it looks again.
    @usableFromInline
    func value(for key: Key, slot: Int) -> Value {
        let hash = key.hashValue
        var made: Box?
        while true {
            let (candidates, version, isRemembered, isFull) = self.entries.withLock {
                $0.candidates(hash: hash, slot: slot)
            }
            if let index = candidates.firstIndex(where: { $0.key == key }) {
                let box = candidates[index].box
                if candidates.count > 1 || (RegistryKeyBits.isBitComparable(Key.self) && !isRemembered) {
                    let released = self.entries.withLock { entries in
                        if candidates.count > 1 { entries.use(hash: hash, index: index, version: version) }
                        return entries.remember(key, hash: hash, slot: slot, box: box)
                    }
                    // Released here, outside the lock: a key's or a value's deinit may run user code.
                    _ = released
                }
                return box.value
            }
            let box = made ?? self.box(for: key)
            made = box
            // Made before the lock, and only when the insertion will forget an entry: the count
            // cannot change without a change of version, which sends the loop round again.
            let isSpared = isFull ? self.sparing?() : nil
            let released: Released? = self.entries.withLock { entries in
                guard entries.version == version else { return nil }
                return entries.insert(key: key, box: box, hash: hash, slot: slot, sparing: isSpared)
            }
            // Released here, outside the lock: a key's or a value's deinit may run user code.
            if let released {
                _ = released
                return box.value
            }
        }
    }

    /// A box with the value made for `key` and its ``Parts``, each once; outside the lock.
    private func box(for key: Key) -> Box {
        let value = self.make(key)
        guard let found = self.parts?(value), !found.isEmpty else { return Box(value, parts: []) }
        var parts: [ObjectIdentifier] = []
        for part in found where !parts.contains(part) { parts.append(part) }
        return Box(value, parts: parts)
    }

    /// The value for `key` if held; not counted as a use.
    func existingValue(for key: Key) -> Value? {
        let words = RegistryKeyBits.words(of: key)
        if RegistryKeyBits.isBitComparable(Key.self),
            let box = self.recent.breaker(for: words, slot: RegistryKeyBits.slot(of: words), markingUse: false)
        {
            return box.value
        }
        let hash = key.hashValue
        let candidates = self.entries.withLock { $0.byHash[hash] ?? [] }
        return candidates.first { $0.key == key }?.box.value
    }

    /// How many values are held.
    var count: Int { self.entries.withLock { $0.count } }

    /// Whether another holder (or the caller) has the lock now; for tests.
    var isLockHeld: Bool { self.entries.isHeld }

    /// The lock-free table of recent keys; for tests.
    var recentKeys: RegistryRecentKeys<Box> { self.recent }

    /// Runs `body` while holding the registry's lock; for tests that show a lookup never takes it.
    func whileLocked<Result>(_ body: () -> Result) -> Result {
        self.entries.withLock { _ in body() }
    }
}

/// How many of the values a ``BoundedRegistry`` holds hold each of its values' shared parts
/// (see ``BoundedRegistry/Parts``), for its sparing test, under its lock.
struct SharedPartCounts {
    fileprivate let holders: [ObjectIdentifier: Int]

    /// Whether `part`, which the value asked about holds, is its own: no other value held holds it.
    func isOwn(_ part: AnyObject) -> Bool {
        self.holders[ObjectIdentifier(part), default: 0] <= 1
    }
}
