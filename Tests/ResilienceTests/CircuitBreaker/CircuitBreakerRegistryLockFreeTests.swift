import Dispatch
import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// A key type of the user's, which the registry cannot compare bit for bit: it is hashed
/// and compared on every lookup.
private struct TenantKey: Hashable, Sendable, CustomStringConvertible {
    let region: Int8
    let tenant: Int

    var description: String { "\(self.region)/\(self.tenant)" }
}

/// The lookup of a key the registry remembers takes no lock, while another thread
/// rewrites the remembered keys and evicts breakers.
///
/// Each stress test runs reader threads that look up a few hot keys, checking that every
/// breaker they get is their key's (by its name, `"<registry>[<key>]"`), against a writer
/// thread that looks up keys remembered in the same slots (so that it rewrites the slots
/// the readers read) and keys the registry does not hold (so that it evicts). Without the
/// second version check of a slot, a reader can take a key's bits from before a rewrite
/// and the breaker from after it: these tests then count wrong breakers.
@Suite struct CircuitBreakerRegistryLockFreeTests {
    /// Reader lookups per reader thread in each stress test.
    static let lookupsPerReader = 200_000

    @Test func intKeysFindTheirOwnBreakersWhileAWriterRewritesTheirSlotsAndEvicts() throws {
        let registry = try CircuitBreakerRegistry<Int>(name: "ids", maximumCount: 24, clock: TestClock())
        let hotKeys = Array(0..<8)
        let rivals = keys(sharingSlotsWith: hotKeys, count: 32, from: (1_000...).lazy.map { $0 })
        let wrong = wrongLookups(in: registry, of: hotKeys, seed: 11) { round in
            _ = registry.breaker(for: rivals[round % rivals.count])
        }
        #expect(wrong == 0)
        #expect(registry.count <= 24)
    }

    @Test func inlineStringKeysFindTheirOwnBreakersWhileAWriterRewritesTheirSlotsAndEvicts() throws {
        let registry = try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: 24, clock: TestClock())
        let hotKeys = (0..<8).map { "h\($0).example" }  // at most 15 UTF-8 bytes: stored inline
        #expect(hotKeys.allSatisfy { $0.utf8.count <= 15 })
        let rivals = keys(sharingSlotsWith: hotKeys, count: 32, from: (0...).lazy.map { "r\($0).example" })
        let wrong = wrongLookups(in: registry, of: hotKeys, seed: 12) { round in
            _ = registry.breaker(for: rivals[round % rivals.count])
        }
        #expect(wrong == 0)
        #expect(registry.count <= 24)
    }

    @Test func heapStringKeysFindTheirOwnBreakersWhileAWriterRewritesTheirSlotsAndEvicts() throws {
        let registry = try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: 24, clock: TestClock())
        // Longer than 15 UTF-8 bytes: each string's bytes live in storage of its own, and the
        // bits the registry compares are that storage's address.
        let hotKeys = (0..<8).map { "host-number-\($0).example.com" }
        #expect(hotKeys.allSatisfy { $0.utf8.count > 15 })
        // A heap string's slot follows its storage's address, so these land in slots at
        // random; with 16 slots, most of them share one with a hot key.
        let rivals = (0..<32).map { "rival-number-\($0).example.com" }
        let wrong = wrongLookups(in: registry, of: hotKeys, seed: 13) { round in
            if round % 4 == 0 {
                // An equal copy of a hot key in fresh storage: other bits, the same breaker;
                // remembering it rewrites a slot and releases the copy it displaces.
                let copy = String(decoding: Array(hotKeys[round / 4 % hotKeys.count].utf8), as: UTF8.self)
                _ = registry.breaker(for: copy)
            } else {
                _ = registry.breaker(for: rivals[round % rivals.count])
            }
        }
        #expect(wrong == 0)
        #expect(registry.count <= 24)
    }

    @Test func userKeysTakeTheHashedPathAndFindTheirOwnBreakersWhileAWriterEvicts() throws {
        let registry = try CircuitBreakerRegistry<TenantKey>(name: "tenants", maximumCount: 24, clock: TestClock())
        #expect(!RegistryKeyBits.isBitComparable(TenantKey.self))
        let hotKeys = (0..<8).map { TenantKey(region: 1, tenant: $0) }
        let wrong = wrongLookups(in: registry, of: hotKeys, seed: 14, lookupsPerReader: Self.lookupsPerReader / 10) {
            round in
            _ = registry.breaker(for: TenantKey(region: 2, tenant: round % 32))
        }
        #expect(wrong == 0)
        #expect(registry.count <= 24)
    }

    /// A write that lands between a reader's look at the key's bits and its look at the
    /// breaker: the reader sees the version change and takes nothing, rather than one
    /// key's bits with the other key's breaker.
    @Test func aReadOverlappingAWriteTakesNothing() throws {
        let slot = RegistryRecentSlot()
        let mine = try CircuitBreaker(name: "mine", clock: TestClock())
        let other = try CircuitBreaker(name: "other", clock: TestClock())
        let myBits = RegistryKeyBits.Words(low: 0x1111, high: 0x2222)
        let otherBits = RegistryKeyBits.Words(low: 0x3333, high: 0x4444)
        _ = slot.write(myBits, breaker: mine)
        #expect(slot.read(myBits)?.takeUnretainedValue() === mine)
        #expect(slot.read(otherBits) == nil)
        let overlapped = slot.read(myBits) { _ = slot.write(otherBits, breaker: other) }
        #expect(overlapped == nil)
        #expect(slot.read(otherBits)?.takeUnretainedValue() === other)
        // An empty slot gives nothing, even for a key whose bits are all zero.
        _ = slot.write(.zero, breaker: nil)
        #expect(slot.read(.zero) == nil)
        withExtendedLifetime((mine, other)) {}
    }

    /// One slot rewritten back and forth between two keys as fast as a writer can, under
    /// readers of one of them: a reader gets that key's breaker or nothing, never the other
    /// key's. Both breakers live as long as the test, so this checks the slot's versions
    /// alone; the tests above check the registry around them.
    @Test func aSlotRewrittenBetweenTwoKeysNeverGivesOneKeyTheOthersBreaker() throws {
        let recent = RegistryRecentKeys<CircuitBreaker>()
        let mine = try CircuitBreaker(name: "mine", clock: TestClock())
        let other = try CircuitBreaker(name: "other", clock: TestClock())
        let myBits = RegistryKeyBits.Words(low: 0x1111, high: 0x2222)
        let otherBits = RegistryKeyBits.Words(low: 0x3333, high: 0x4444)
        let isWriting = Atomic(false)
        let isReading = Atomic(true)
        let wrong = Atomic(0)
        let found = Atomic(0)
        onSeparateThreads(2) { thread in
            if thread == 1 {
                // The only writer, as the registry's lock makes it.
                while isReading.load(ordering: .acquiring) {
                    _ = recent.write(slot: 0, myBits, breaker: mine)
                    isWriting.store(true, ordering: .releasing)
                    _ = recent.write(slot: 0, otherBits, breaker: other)
                }
                return
            }
            while !isWriting.load(ordering: .acquiring) {}
            var wrongHere = 0
            var foundHere = 0
            for _ in 0..<Self.lookupsPerReader * 10 {
                guard let breaker = recent.breaker(for: myBits, slot: 0, markingUse: false) else { continue }
                foundHere += 1
                if breaker !== mine { wrongHere += 1 }
            }
            wrong.store(wrongHere, ordering: .relaxed)
            found.store(foundHere, ordering: .relaxed)
            isReading.store(false, ordering: .releasing)
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(found.load(ordering: .relaxed) > 0, "no reader ever found its key")
    }

    /// The registry's lock is held by this thread while another thread looks up keys the
    /// registry remembers: the lookups finish, so they never wait for the lock.
    @Test(arguments: [
        "h1.example",  // inline
        "host-number-1.example.com",  // in storage of its own
    ])
    func aRememberedStringKeyIsFoundWhileTheLockIsHeld(host: String) throws {
        let registry = try CircuitBreakerRegistry<String>(name: "hosts", clock: TestClock())
        let breaker = registry.breaker(for: host)
        #expect(registry.breaker(for: host) === breaker)
        let found = registry.entries.withLock { _ in lookUpOnAnotherThread { registry.breaker(for: host) } }
        #expect(found === breaker)
        #expect(
            registry.entries.withLock { _ in lookUpOnAnotherThread { registry.existingBreaker(for: host) } } === breaker
        )
    }

    @Test func aRememberedIntKeyIsFoundWhileTheLockIsHeld() throws {
        let registry = try CircuitBreakerRegistry<Int>(name: "ids", clock: TestClock())
        let breaker = registry.breaker(for: 42)
        let found = registry.entries.withLock { _ in lookUpOnAnotherThread { registry.breaker(for: 42) } }
        #expect(found === breaker)
    }

    /// A lookup that found its breaker without the lock still counts as a use: the bound
    /// forgets the key that was used least recently, not the one looked up without the lock.
    @Test func aKeyFoundWithoutTheLockCountsAsUsedWhenTheBoundForgetsOne() throws {
        let registry = try CircuitBreakerRegistry<Int>(name: "ids", maximumCount: 2, clock: TestClock())
        // Two keys in different slots, so that the second does not displace the first.
        try #require(
            RegistryKeyBits.slot(of: RegistryKeyBits.words(of: 1))
                != RegistryKeyBits.slot(of: RegistryKeyBits.words(of: 2)))
        let first = registry.breaker(for: 1)
        let second = registry.breaker(for: 2)
        #expect(registry.entries.withLock { _ in lookUpOnAnotherThread { registry.breaker(for: 1) } } === first)
        _ = registry.breaker(for: 3)  // forgets 2, since 1 was used after it
        #expect(registry.existingBreaker(for: 1) === first)
        #expect(registry.existingBreaker(for: 2) == nil)
        #expect(registry.breaker(for: 2) !== second)
    }

    /// A slot rewritten while a reader is inside keeps what it held until the reader has
    /// left; the next write that finds the slot free releases it.
    @Test func aDisplacedBreakerIsKeptWhileAReaderIsInsideItsSlot() throws {
        let registry = try CircuitBreakerRegistry<Int>(name: "ids", maximumCount: 2, clock: TestClock())
        let slotKeys = keys(sharingSlotsWith: [1], count: 2, from: (100...).lazy.map { $0 })
        let slot = RegistryKeyBits.slot(of: RegistryKeyBits.words(of: 1))
        weak var displaced: CircuitBreaker?
        do {
            displaced = registry.breaker(for: 1)
            registry.recentKeys.slots[slot].readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
            _ = registry.breaker(for: slotKeys[0])
            _ = registry.breaker(for: slotKeys[1])  // forgets 1 and rewrites the slot it was in
        }
        #expect(registry.existingBreaker(for: 1) == nil)
        #expect(displaced != nil, "released while a reader could still retain it")
        registry.recentKeys.slots[slot].readers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        _ = registry.breaker(for: 1)  // a write to the slot, which now has no reader
        #expect(displaced == nil)
    }
}

/// `count` keys from `candidates` whose slots in the registry's table of recent keys are
/// among `keys`' slots, so that looking them up rewrites the slots `keys` are read from.
private func keys<Key: Hashable & Sendable>(
    sharingSlotsWith keys: [Key], count: Int, from candidates: some Sequence<Key>
) -> [Key] {
    let slots = Set(keys.map { RegistryKeyBits.slot(of: RegistryKeyBits.words(of: $0)) })
    return Array(
        candidates.lazy.filter { slots.contains(RegistryKeyBits.slot(of: RegistryKeyBits.words(of: $0))) }.prefix(
            count))
}

/// Looks up random keys of `hotKeys` on two reader threads, `lookupsPerReader` times each,
/// while a writer thread calls `churn` with 0, 1, 2, ... until the readers finish; returns
/// how many lookups returned a breaker other than their key's.
private func wrongLookups<Key: Hashable & Sendable & CustomStringConvertible>(
    in registry: CircuitBreakerRegistry<Key>, of hotKeys: [Key], seed: UInt64,
    lookupsPerReader: Int = CircuitBreakerRegistryLockFreeTests.lookupsPerReader,
    churn: @escaping @Sendable (Int) -> Void
) -> Int {
    let prefix = registry.breaker(for: hotKeys[0]).name.prefix { $0 != "[" }
    let expectedNames = hotKeys.map { "\(prefix)[\($0)]" }
    let readersLeft = Atomic(2)
    let wrong = Atomic(0)
    let writerRounds = Atomic(0)
    onSeparateThreads(3) { thread in
        if thread == 2 {
            var round = 0
            while readersLeft.load(ordering: .acquiring) > 0 {
                churn(round)
                round += 1
            }
            writerRounds.store(round, ordering: .relaxed)
            return
        }
        var generator = SeededRandomNumberGenerator(seed: seed &+ UInt64(thread))
        var wrongHere = 0
        for _ in 0..<lookupsPerReader {
            let index = Int.random(in: 0..<hotKeys.count, using: &generator)
            if registry.breaker(for: hotKeys[index]).name != expectedNames[index] { wrongHere += 1 }
        }
        wrong.add(wrongHere, ordering: .relaxed)
        readersLeft.subtract(1, ordering: .releasing)
    }
    #expect(writerRounds.load(ordering: .relaxed) > 0, "the writer never ran")
    return wrong.load(ordering: .relaxed)
}

/// Runs `lookUp` on a thread of its own and waits for it: the caller may hold the
/// registry's lock, so a lookup that took it would wait until the time limit.
private func lookUpOnAnotherThread(
    _ lookUp: @escaping @Sendable () -> CircuitBreaker?
) -> CircuitBreaker? {
    let result = Lock<CircuitBreaker?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let breaker = lookUp()
        result.withLock { $0 = breaker }
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + .seconds(30)) == .success else { return nil }
    return result.withLock { $0 }
}
