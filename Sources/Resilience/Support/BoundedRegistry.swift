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
/// A looked-up key not remembered takes the lock once (three times when another held key
/// has the same hash value) and once more to remember it, unless its slot already leads to
/// the same value. The whole lookup, insertion included, is inlinable, so that it is
/// specialized for the caller's key and value types, as ``CircuitBreakerRegistry``'s is.
@usableFromInline
final class BoundedRegistry<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// A value, in an object that a lock-free reader can retain.
    @usableFromInline
    final class Box: Sendable {
        @usableFromInline let value: Value
        /// The objects of ``Parts`` the value holds, each once. Kept here rather than in an
        /// entry, so that the copies of entries a lookup makes retain nothing more.
        @usableFromInline let parts: [ObjectIdentifier]

        @inlinable
        init(_ value: Value, parts: [ObjectIdentifier]) {
            self.value = value
            self.parts = parts
        }
    }

    @usableFromInline
    struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var box: Box
        @usableFromInline var lastUse: UInt64

        @inlinable
        init(key: Key, box: Box, lastUse: UInt64) {
            self.key = key
            self.box = box
            self.lastUse = lastUse
        }
    }

    /// The first entry with a lookup's hash value, for the caller to compare outside the lock.
    @usableFromInline
    struct Candidate {
        @usableFromInline var key: Key
        @usableFromInline var box: Box
        /// Whether no other entry has the same hash value; then the lookup marked it as used.
        @usableFromInline var isOnly: Bool
        /// Whether the lookup's slot of the table of recent keys already leads to its box.
        @usableFromInline var isRemembered: Bool

        @inlinable
        init(key: Key, box: Box, isOnly: Bool, isRemembered: Bool) {
            self.key = key
            self.box = box
            self.isOnly = isOnly
            self.isRemembered = isRemembered
        }
    }

    /// What a slot of the table of recent keys held before it was rewritten: the key copy
    /// and the box, kept until no lock-free reader is inside the slot.
    @usableFromInline
    struct Retired {
        @usableFromInline var slot: Int
        @usableFromInline var key: Key?
        @usableFromInline var box: Box?

        @inlinable
        init(slot: Int, key: Key?, box: Box?) {
            self.slot = slot
            self.key = key
            self.box = box
        }
    }

    /// What one locked operation let go of, for the caller to drop after the lock is
    /// released: a key's or a value's deinit may run user code.
    @usableFromInline
    struct Released {
        @usableFromInline var evicted: Entry?
        @usableFromInline var displaced: Retired?
        @usableFromInline var retired: [Retired] = []

        @inlinable init() {}
    }

    @usableFromInline
    struct Entries {
        /// The entries with each hash value, in insertion order.
        @usableFromInline var byHash: [Int: [Entry]] = [:]
        @usableFromInline var count = 0
        @usableFromInline var clock: UInt64 = 0
        /// Bumped by every insertion and removal.
        @usableFromInline var version: UInt64 = 0
        /// The lock-free table, which only this state writes.
        @usableFromInline let recent: RegistryRecentKeys<Box>
        /// The key each slot of ``recent`` remembers: a copy, so that its bits stay those of
        /// a live value (a `String`'s storage cannot be freed and reused) while they are there.
        @usableFromInline var recentKeys: [Key?]
        /// The box each slot of ``recent`` points at, held so that the slot's address stays valid.
        @usableFromInline var recentBoxes: [Box?]
        /// The hash value of each slot's key, to find its entry when a lock-free hit is recorded.
        @usableFromInline var recentHashes: [Int]
        /// What rewritten slots held while a lock-free reader was inside them.
        @usableFromInline var retired: [Retired] = []
        /// How many of the values held hold each object of ``Parts``; empty without ``Parts``.
        @usableFromInline var partHolders: [ObjectIdentifier: Int] = [:]

        @usableFromInline let maximumCount: Int

        init(recent: RegistryRecentKeys<Box>, maximumCount: Int) {
            self.recent = recent
            self.maximumCount = maximumCount
            self.recentKeys = Array(repeating: nil, count: RegistryKeyBits.slotCount)
            self.recentBoxes = Array(repeating: nil, count: RegistryKeyBits.slotCount)
            self.recentHashes = Array(repeating: 0, count: RegistryKeyBits.slotCount)
        }

        /// The most retired entries kept before the registry stops remembering new keys (it
        /// still clears slots), so that readers that never leave cannot make the list grow.
        @inlinable static var maximumRetired: Int { 2 * RegistryKeyBits.slotCount }

        /// The first entry with `hash`, with whether it is the only one and whether `slot`
        /// already leads to it, and the version of the entries. When it is the only one, it
        /// is marked as used now: it is almost surely the key's, and a wrong guess (a full
        /// hash collision with a key not held) costs that entry nothing worse than counting
        /// as used. The held key's lookup: one integer-keyed look-up, no copy of the chain.
        @inlinable
        mutating func firstCandidate(hash: Int, slot: Int) -> (candidate: Candidate?, version: UInt64, isFull: Bool) {
            self.recordLockFreeUses()
            self.clock += 1
            guard let position = self.byHash.index(forKey: hash) else { return (nil, self.version, self.isFull) }
            // In place, through the dictionary's values: no copy of the chain, no second look-up.
            var candidate = Self.first(of: &self.byHash.values[position], stampingIfOnly: self.clock)
            candidate.isRemembered = self.recentBoxes[slot] === candidate.box
            return (candidate, self.version, self.isFull)
        }

        /// The first entry of `chain`, stamped as used at `clock` when it is the only one;
        /// the chain is borrowed in place, neither copied nor retained.
        @inlinable
        static func first(of chain: inout [Entry], stampingIfOnly clock: UInt64) -> Candidate {
            let isOnly = chain.count == 1
            if isOnly { chain[0].lastUse = clock }
            return Candidate(key: chain[0].key, box: chain[0].box, isOnly: isOnly, isRemembered: false)
        }

        /// The entries with `hash`, the version they belong to, and whether `slot` already
        /// leads to the first one; the first is marked as used when it is the only one, as
        /// ``firstCandidate(hash:slot:)`` does.
        @inlinable
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
        @inlinable var isFull: Bool { self.count >= self.maximumCount }

        /// Marks the entry at `index` of `hash`'s chain as used, if nothing was added or
        /// removed since `version`.
        @inlinable
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
        @inlinable @inline(__always)
        mutating func recordLockFreeUses() {
            guard RegistryKeyBits.isBitComparable(Key.self), self.recent.mayHaveUnrecordedUse else { return }
            self.recordMarkedUses()
        }

        /// The part of ``recordLockFreeUses()`` that runs when some slot may be marked.
        @inlinable
        mutating func recordMarkedUses() {
            guard self.recent.takeUnrecordedUse() else { return }
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
        @inlinable
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
        @inlinable
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
        @inlinable
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
        @inlinable
        mutating func clear(slot: Int) {
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
        @inlinable
        func leastRecentlyUsed(
            sparing isSpared: ((Value, SharedPartCounts) -> Bool)?
        ) -> (hash: Int, index: Int)? {
            var oldest: (hash: Int, index: Int, lastUse: UInt64)?
            var oldestSpared: (hash: Int, index: Int, lastUse: UInt64)?
            let parts = SharedPartCounts(holders: self.partHolders)
            // Indices rather than `enumerated()`: should this code run unspecialized (a caller
            // that could not specialize it), an enumerated sequence asks the runtime for its
            // types' metadata at every step.
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
    @usableFromInline typealias Sparing = @Sendable () -> (Value, SharedPartCounts) -> Bool

    /// The objects a value holds that other values may hold too, and whose state the sparing
    /// test looks at (a pipeline's retry budgets and throttles); found outside the lock, once
    /// for each value made. It must be the package's own code, and return objects the value
    /// keeps alive (their identities are counted while it is held).
    @usableFromInline typealias Parts = @Sendable (Value) -> [ObjectIdentifier]

    let maximumCount: Int
    @usableFromInline let make: @Sendable (Key) -> Value
    @usableFromInline let sparing: Sparing?
    @usableFromInline let parts: Parts?
    @usableFromInline let recent: RegistryRecentKeys<Box>
    @usableFromInline let entries: Lock<Entries>

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
    /// A key remembered bit for bit takes no lock and runs no `hash(into:)` or `==`; any
    /// other key takes ``lockedValue(for:slot:)``. Everything here is inlinable, down to
    /// the insertion, so that it is specialized for the caller's key and value types:
    /// generic code asks the runtime for the metadata of the table's types at every step.
    @inlinable
    func value(for key: Key) -> Value {
        guard RegistryKeyBits.isBitComparable(Key.self) else { return self.lockedValue(for: key, slot: 0) }
        let words = RegistryKeyBits.words(of: key)
        let slot = RegistryKeyBits.slot(of: words)
        if let box = self.recent.breaker(for: words, slot: slot, markingUse: true) {
            return box.value
        }
        return self.lockedValue(for: key, slot: slot)
    }

    /// The lookup of a key not remembered bit for bit, whose slot in the table is `slot`.
    ///
    /// A key held, alone with its hash value, is hashed, found with the lock held for one
    /// integer-keyed look-up, and compared after the lock is released; a key of a type that
    /// can be remembered takes the lock once more to be remembered, unless its slot already
    /// leads to the same value.
    ///
    /// Never inlined (but specialized): inlined into ``value(for:)``, it would grow the
    /// remembered key's path past what the caller's optimizer inlines, and the table's read
    /// would become a call of its own.
    @inlinable @inline(never)
    func lockedValue(for key: Key, slot: Int) -> Value {
        // The key's hash and `==` run outside the lock; under it, only integer work.
        let hash = key.hashValue
        let (first, version, isFull) = self.entries.withLock { $0.firstCandidate(hash: hash, slot: slot) }
        // No entry with the hash: on to the insertion, with what this look found.
        guard let candidate = first else {
            return self.value(for: key, hash: hash, slot: slot, ifNoneHeldAt: (version, isFull))
        }
        if candidate.isOnly, candidate.key == key {
            // Marked as used under the lock already; remembered unless its slot leads to it.
            if RegistryKeyBits.isBitComparable(Key.self), !candidate.isRemembered {
                let released = self.entries.withLock { $0.remember(key, hash: hash, slot: slot, box: candidate.box) }
                // Released here, outside the lock: a key's or a value's deinit may run user code.
                _ = released
            }
            return candidate.box.value
        }
        return self.value(for: key, hash: hash, slot: slot, ifNoneHeldAt: nil)
    }

    /// The lookup of a key whose first look found no entry of its own alone with its hash
    /// value: no entry with that hash (the look's version and whether the registry was at its
    /// bound are then `noneHeld`, for the insertion), or other entries.
    ///
    /// To add a value, it checks under the lock that no entry was added or removed since it
    /// looked (a version number), so a key can never get two values; if one was, it looks again.
    @inlinable
    func value(
        for key: Key, hash: Int, slot: Int, ifNoneHeldAt noneHeld: (version: UInt64, isFull: Bool)?
    ) -> Value {
        var made: Box?
        // A look that found no entry with the hash needs no second one before the insertion.
        var noneHeld = noneHeld
        while true {
            let version: UInt64
            let isFull: Bool
            if let known = noneHeld {
                noneHeld = nil
                (version, isFull) = known
            } else {
                let found = self.entries.withLock { $0.candidates(hash: hash, slot: slot) }
                let candidates = found.entries
                if let index = candidates.firstIndex(where: { $0.key == key }) {
                    let box = candidates[index].box
                    if candidates.count > 1 || (RegistryKeyBits.isBitComparable(Key.self) && !found.isRemembered) {
                        let released = self.entries.withLock { entries in
                            if candidates.count > 1 { entries.use(hash: hash, index: index, version: found.version) }
                            return entries.remember(key, hash: hash, slot: slot, box: box)
                        }
                        // Released here, outside the lock: a key's or a value's deinit may run user code.
                        _ = released
                    }
                    return box.value
                }
                (version, isFull) = (found.version, found.isFull)
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
    @inlinable
    func box(for key: Key) -> Box {
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
@usableFromInline
struct SharedPartCounts {
    @usableFromInline let holders: [ObjectIdentifier: Int]

    @inlinable
    init(holders: [ObjectIdentifier: Int]) {
        self.holders = holders
    }

    /// Whether `part`, which the value asked about holds, is its own: no other value held holds it.
    func isOwn(_ part: AnyObject) -> Bool {
        self.holders[ObjectIdentifier(part), default: 0] <= 1
    }
}
