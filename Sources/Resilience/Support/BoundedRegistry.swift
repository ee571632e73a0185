/// One value per key, made on first use, at most `maximumCount` kept; the least
/// recently used is forgotten first. The registries of limiters and pipelines share it.
///
/// Looking up a held key costs one dictionary lookup under the lock; finding a
/// victim walks every entry, on insertion at the bound only.
///
/// Unlike ``CircuitBreakerRegistry``, it has no table of recent keys read without
/// the lock: its values may be structs, which a lock-free reader could not retain
/// safely without boxing each one (`Docs/DesignDecisions.md` says why it stays locked).
final class BoundedRegistry<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value
        var lastUse: UInt64
    }

    private struct Entries {
        var byKey: [Key: Entry] = [:]
        var clock: UInt64 = 0
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
    func value(for key: Key) -> Value {
        let held: Value? = self.entries.withLock { entries in
            entries.clock += 1
            let now = entries.clock
            guard entries.byKey[key] != nil else { return nil }
            entries.byKey[key]!.lastUse = now
            return entries.byKey[key]!.value
        }
        if let held { return held }
        let made = self.make(key)
        let (value, evicted): (Value, Value?) = self.entries.withLock { entries in
            entries.clock += 1
            if let existing = entries.byKey[key] { return (existing.value, nil) }
            var evicted: Value?
            if entries.byKey.count >= self.maximumCount,
                let victim = entries.byKey.min(by: { $0.value.lastUse < $1.value.lastUse })?.key
            {
                evicted = entries.byKey.removeValue(forKey: victim)?.value
            }
            entries.byKey[key] = Entry(value: made, lastUse: entries.clock)
            return (made, evicted)
        }
        _ = evicted  // released here, outside the lock
        return value
    }

    /// The value for `key` if held; not counted as a use.
    func existingValue(for key: Key) -> Value? {
        self.entries.withLock { $0.byKey[key]?.value }
    }

    /// How many values are held.
    var count: Int { self.entries.withLock { $0.byKey.count } }
}
