/// One value per key, made on first use, at most `maximumCount` kept; the least
/// recently used is forgotten first. The registries of limiters and pipelines share it.
///
/// The entries are keyed by the key's hash value, an `Int`, so that no user code
/// (the key's `hash(into:)` or `==`) runs while the lock is held: a lookup hashes
/// the key first, takes the lock for an integer-keyed look-up that returns the
/// entries with that hash, and compares them after releasing it. Looking up a
/// held key takes the lock once (twice when another held key has the same hash
/// value); finding a victim walks every entry, on insertion at the bound only.
///
/// Unlike ``CircuitBreakerRegistry``, it has no table of recent keys read without
/// the lock: its values may be structs, which a lock-free reader could not retain
/// safely without boxing each one (`Docs/DesignDecisions.md` says why it stays locked).
final class BoundedRegistry<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var key: Key
        var value: Value
        var lastUse: UInt64
    }

    private struct Entries {
        /// The entries with each hash value, in insertion order.
        var byHash: [Int: [Entry]] = [:]
        var count = 0
        var clock: UInt64 = 0
        /// Bumped by every insertion and removal.
        var version: UInt64 = 0

        /// The entries with `hash`, and the version they belong to. When there is only one,
        /// it is marked as used now: it is almost surely the key's, and a wrong guess (a
        /// full hash collision with a key not held) costs that entry nothing worse than
        /// counting as used.
        mutating func candidates(hash: Int) -> (entries: [Entry], version: UInt64) {
            self.clock += 1
            guard let count = self.byHash[hash]?.count else { return ([], self.version) }
            // In place: no copy of the chain while no earlier lookup still holds it.
            if count == 1 { self.byHash[hash]?[0].lastUse = self.clock }
            return (self.byHash[hash] ?? [], self.version)
        }

        /// Marks the entry at `index` of `hash`'s chain as used, if nothing was added or
        /// removed since `version`.
        mutating func use(hash: Int, index: Int, version: UInt64) {
            guard self.version == version, let count = self.byHash[hash]?.count, index < count else { return }
            self.clock += 1
            self.byHash[hash]![index].lastUse = self.clock
        }

        /// Adds `value` for `key`, forgetting the least recently used entry at the bound;
        /// returns the forgotten entry, for the caller to release outside the lock.
        mutating func insert(key: Key, value: Value, hash: Int, maximumCount: Int) -> Entry? {
            self.clock += 1
            self.version &+= 1
            var evicted: Entry?
            if self.count >= maximumCount, let victim = self.leastRecentlyUsed() {
                evicted = self.byHash[victim.hash]!.remove(at: victim.index)
                if self.byHash[victim.hash]!.isEmpty { self.byHash[victim.hash] = nil }
                self.count -= 1
            }
            self.byHash[hash, default: []].append(Entry(key: key, value: value, lastUse: self.clock))
            self.count += 1
            return evicted
        }

        private func leastRecentlyUsed() -> (hash: Int, index: Int)? {
            var oldest: (hash: Int, index: Int, lastUse: UInt64)?
            for (hash, entries) in self.byHash {
                for (index, entry) in entries.enumerated() where entry.lastUse < oldest?.lastUse ?? .max {
                    oldest = (hash, index, entry.lastUse)
                }
            }
            return oldest.map { ($0.hash, $0.index) }
        }
    }

    let maximumCount: Int
    private let make: @Sendable (Key) -> Value
    private let entries = Lock(Entries())

    init(maximumCount: Int, make: @escaping @Sendable (Key) -> Value) throws(ConfigurationError) {
        try ConfigurationError.require(
            (1...10_000_000).contains(maximumCount), "maximumCount", maximumCount, "in 1...10000000")
        self.maximumCount = maximumCount
        self.make = make
    }

    /// The value for `key`, made now (outside the lock) if not held.
    ///
    /// To add a value, it checks under the lock that no entry was added or removed since it
    /// looked (a version number), so a key can never get two values; if one was, it looks again.
    func value(for key: Key) -> Value {
        let hash = key.hashValue
        var made: Value?
        while true {
            let (candidates, version) = self.entries.withLock { $0.candidates(hash: hash) }
            if let index = candidates.firstIndex(where: { $0.key == key }) {
                if candidates.count > 1 {
                    self.entries.withLock { $0.use(hash: hash, index: index, version: version) }
                }
                return candidates[index].value
            }
            let value = made ?? self.make(key)
            made = value
            let evicted: Entry?? = self.entries.withLock { entries in
                guard entries.version == version else { return nil }
                return .some(entries.insert(key: key, value: value, hash: hash, maximumCount: self.maximumCount))
            }
            // Released here, outside the lock: a key's or a value's deinit may run user code.
            if let evicted {
                _ = evicted
                return value
            }
        }
    }

    /// The value for `key` if held; not counted as a use.
    func existingValue(for key: Key) -> Value? {
        let hash = key.hashValue
        let candidates = self.entries.withLock { $0.byHash[hash] ?? [] }
        return candidates.first { $0.key == key }?.value
    }

    /// How many values are held.
    var count: Int { self.entries.withLock { $0.count } }

    /// Whether another holder (or the caller) has the lock now; for tests.
    var isLockHeld: Bool { self.entries.isHeld }
}
