public import Synchronization

/// A registry's last keys, bit for bit, each with the object it found (a breaker, or the
/// box of a ``BoundedRegistry`` value): read without the registry's lock, written only under it.
///
/// The comments below speak of the circuit breaker registry; the bounded registry of
/// limiters and pipelines uses the table the same way, with its boxes for breakers.
///
/// A lookup whose key has exactly the bits remembered in its slot takes the slot's
/// breaker with no lock, no `hash(into:)` and no `==`. Two things make that safe:
///
/// - **No torn entry.** Each slot is a sequence lock: the writer (who holds the registry's
///   lock, so there is one at a time) makes the slot's version odd, stores the key's bits
///   and the breaker's address, and makes the version even again. A reader loads the
///   version, the key's bits and the address, then the version again, and trusts what it
///   read only if both versions are the same even number. Every field is an atomic, so
///   there is no data race, and the ThreadSanitizer gate sees every access.
/// - **No freed breaker.** A reader announces itself on the slot (``RegistryRecentSlot/readers``)
///   before it reads the version, and leaves only after it has retained the breaker. A
///   writer that replaces or clears a slot checks that count after making the version
///   odd; if a reader is inside, the writer keeps the breaker and the key it displaced
///   (``RegistryEntries/retired``) instead of releasing them, and releases them at a later
///   write that finds the slot's count at zero. All four accesses involved are sequentially
///   consistent, so either the writer sees the reader's announcement, or the reader sees
///   the odd (or a newer) version and never takes the old address.
///
/// The key a slot remembers is held as a copy by the registry (under its lock) for as long
/// as its bits are in the slot and until no reader can be comparing them, so a `String`'s
/// storage cannot be freed and its address reused by another string while a reader
/// compares bits: equal bits of two live values mean the same value.
///
/// A hit cannot take the registry's lock to move its breaker to the front of the recency
/// list, so it sets its slot's ``RegistryRecentSlot/isUsed`` flag (and
/// ``hasUnrecordedUse``), and the next operation that takes the lock moves the breakers of
/// the flagged slots to the front before anything else. Recency is then exact with
/// respect to every locked operation; hits between two locked operations count as
/// happening together.
///
/// Only the table is generic: a slot holds its object as an `AnyObject`, and the lock-free
/// read borrows the slot in a closure that captures nothing of `Object`, so that the
/// closure is plain code, which this module's optimizer inlines into ``breaker(for:slot:markingUse:)``
/// before the lookup is serialized for inlining into callers. A closure over a generic slot
/// is generic: this module specialized it for ``CircuitBreaker`` but left it a separate
/// function, and a client's optimizer did not inline it either, so the breaker registry's
/// lookup paid a call (and, no longer small, was not inlined into its own caller).
@usableFromInline
final class RegistryRecentKeys<Object: AnyObject & Sendable>: Sendable {
    /// One slot per value of ``RegistryKeyBits/slot(of:)``.
    @usableFromInline let slots: [RegistryRecentSlot]
    /// The same slots, unretained, for the lock-free lookup: reading an element of ``slots``
    /// retains and releases it (two more atomic operations per lookup), which the lookup
    /// avoids by borrowing the slot through ``Unmanaged/_withUnsafeGuaranteedRef(_:)``.
    /// ``slots`` keeps every slot alive for as long as this table lives.
    @usableFromInline let unretainedSlots: [Unmanaged<RegistryRecentSlot>]
    /// Whether some slot's ``RegistryRecentSlot/isUsed`` may be set.
    @usableFromInline let hasUnrecordedUse = Atomic<Bool>(false)

    @usableFromInline init() {
        self.slots = (0..<RegistryKeyBits.slotCount).map { _ in RegistryRecentSlot() }
        self.unretainedSlots = self.slots.map { Unmanaged.passUnretained($0) }
    }

    /// Whether a lock-free hit may have marked a slot as used; a relaxed load, clearing nothing.
    @inlinable
    var mayHaveUnrecordedUse: Bool {
        self.hasUnrecordedUse.load(ordering: .relaxed)
    }

    /// Whether a lock-free hit may have marked a slot as used since the last call; clears the mark.
    @inlinable
    func takeUnrecordedUse() -> Bool {
        self.hasUnrecordedUse.load(ordering: .relaxed)
            && self.hasUnrecordedUse.exchange(false, ordering: .acquiring)
    }

    /// Whether a lock-free hit marked `slot` as used since the last call; clears the mark.
    @inlinable
    func takeUse(slot: Int) -> Bool {
        self.unretainedSlots[slot]._withUnsafeGuaranteedRef { $0.takeUse() }
    }

    /// Stores `bits` and `breaker` in `slot`, or empties it; see ``RegistryRecentSlot/write(_:breaker:)``.
    @inlinable
    func write(slot: Int, _ bits: RegistryKeyBits.Words, breaker: Object?) -> Bool {
        self.unretainedSlots[slot]._withUnsafeGuaranteedRef { $0.write(bits, breaker: breaker) }
    }

    /// Whether no lock-free reader is inside `slot` now.
    @inlinable
    func isUnread(slot: Int) -> Bool {
        self.unretainedSlots[slot]._withUnsafeGuaranteedRef { $0.isUnread }
    }

    /// The breaker remembered for a key with exactly `bits`, retained, or `nil`; marks the
    /// slot as used when `markingUse` is set. Takes no lock and runs no user code.
    @inlinable
    func breaker(for bits: RegistryKeyBits.Words, slot: Int, markingUse: Bool) -> Object? {
        // The closure captures `bits` and `markingUse` alone, not `self`, so it is not generic
        // (see the type's comment); the table's own flag is set after it.
        let (found, isNewlyUsed) = self.unretainedSlots[slot]._withUnsafeGuaranteedRef {
            recent -> (Unmanaged<any AnyObject & Sendable>?, Bool) in
            // Announce the read before looking at the slot: a writer that does not see this
            // keeps whatever it displaces until a later write (see the type's comment).
            recent.readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
            let found = recent.read(bits)
            // Retained before leaving: once the count drops, a writer may release its copy.
            if let found { _ = found.retain() }
            recent.readers.wrappingSubtract(1, ordering: .releasing)
            guard found != nil, markingUse, !recent.isUsed.load(ordering: .relaxed) else { return (found, false) }
            recent.isUsed.store(true, ordering: .relaxed)
            return (found, true)
        }
        if isNewlyUsed { self.hasUnrecordedUse.store(true, ordering: .releasing) }
        guard let found else { return nil }
        // Only ``write(slot:_:breaker:)`` stores an address in the table, and only an `Object`'s.
        return unsafeDowncast(found.takeRetainedValue(), to: Object.self)
    }
}

/// One slot of ``RegistryRecentKeys``: a sequence lock over a key's bits and a breaker's address.
///
/// Not generic: it holds the object as an `AnyObject`, which the table turns back into its
/// `Object` (see ``RegistryRecentKeys``).
@usableFromInline
final class RegistryRecentSlot: Sendable {
    /// Even while the slot is stable, odd while the writer rewrites it.
    @usableFromInline let version = Atomic<UInt64>(0)
    /// How many lock-free readers are between announcing themselves and retaining the breaker.
    @usableFromInline let readers = Atomic<Int>(0)
    /// The first 8 bytes of the key, zero-padded.
    @usableFromInline let keyLow = Atomic<UInt64>(0)
    /// Bytes 8 to 15 of the key, zero-padded.
    @usableFromInline let keyHigh = Atomic<UInt64>(0)
    /// The breaker, not retained by the slot (the registry holds it), or `nil` when the slot is empty.
    @usableFromInline let breaker = Atomic<Unmanaged<any AnyObject & Sendable>?>(nil)
    /// Set by a lock-free hit; cleared when the registry records the use under its lock.
    @usableFromInline let isUsed = Atomic<Bool>(false)

    @usableFromInline init() {}

    /// Whether a lock-free hit marked the slot as used since the last call; clears the mark.
    @inlinable
    func takeUse() -> Bool {
        guard self.isUsed.load(ordering: .relaxed) else { return false }
        self.isUsed.store(false, ordering: .relaxed)
        return true
    }

    /// The breaker stored with exactly `bits`, if the slot held them, unchanged, for the whole read.
    ///
    /// The caller must be counted in ``readers`` while it calls this and until it has
    /// retained the result.
    ///
    /// - Parameter afterReadingTheKey: Runs between reading the key's bits and reading the
    ///   breaker: a seam for tests, which write the slot there to show that the second look
    ///   at the version catches it. The lookup passes nothing, and the call compiles away.
    @inlinable
    func read(
        _ bits: RegistryKeyBits.Words, afterReadingTheKey: () -> Void = {}
    ) -> Unmanaged<any AnyObject & Sendable>? {
        let version = self.version.load(ordering: .sequentiallyConsistent)
        // Acquiring loads: the second load of the version cannot move above them, and a
        // field written by a newer write makes that load see the newer, odd version.
        guard version & 1 == 0,
            self.keyLow.load(ordering: .acquiring) == bits.low,
            self.keyHigh.load(ordering: .acquiring) == bits.high
        else { return nil }
        afterReadingTheKey()
        guard let breaker = self.breaker.load(ordering: .acquiring),
            self.version.load(ordering: .relaxed) == version
        else { return nil }
        return breaker
    }

    /// Stores `bits` and `breaker` (or clears the slot, with `nil`); the caller holds the
    /// registry's lock, so writes never overlap.
    ///
    /// - Returns: Whether a lock-free reader may still be using what the slot held before,
    ///   so that it must not be released yet.
    @inlinable
    func write(_ bits: RegistryKeyBits.Words, breaker: (any AnyObject & Sendable)?) -> Bool {
        let version = self.version.load(ordering: .relaxed)
        self.version.store(version &+ 1, ordering: .sequentiallyConsistent)
        self.keyLow.store(bits.low, ordering: .releasing)
        self.keyHigh.store(bits.high, ordering: .releasing)
        self.breaker.store(breaker.map { Unmanaged.passUnretained($0) }, ordering: .releasing)
        self.version.store(version &+ 2, ordering: .releasing)
        return self.readers.load(ordering: .sequentiallyConsistent) != 0
    }

    /// Whether no lock-free reader is inside the slot now, so that anything it displaced earlier may be released.
    @inlinable var isUnread: Bool {
        self.readers.load(ordering: .sequentiallyConsistent) == 0
    }
}

/// What a slot of ``RegistryRecentKeys`` held before it was rewritten: the key copy and the
/// breaker the registry kept for it.
@usableFromInline
struct RegistryRetired<Key: Hashable & Sendable> {
    /// The slot it was in, whose reader count says when it may be released.
    @usableFromInline var slot: Int
    @usableFromInline var key: Key?
    @usableFromInline var breaker: CircuitBreaker?

    @inlinable init(slot: Int, key: Key?, breaker: CircuitBreaker?) {
        self.slot = slot
        self.key = key
        self.breaker = breaker
    }
}

/// What one locked operation of the registry let go of, for the caller to drop after the
/// lock is released: a key's or a breaker's deinit may run user code.
@usableFromInline
struct RegistryReleased<Key: Hashable & Sendable> {
    /// The key of the breaker forgotten to make room.
    @usableFromInline var evictedKey: Key?
    /// The breaker forgotten to make room.
    @usableFromInline var evictedBreaker: CircuitBreaker?
    /// What the slot the operation rewrote held, when no reader was inside it.
    @usableFromInline var displaced: RegistryRetired<Key>?
    /// Earlier retired entries whose slots no reader is inside any more.
    @usableFromInline var retired: [RegistryRetired<Key>] = []

    @inlinable init() {}
}
