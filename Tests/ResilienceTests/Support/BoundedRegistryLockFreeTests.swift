import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Resilience

/// A value that tells when it is released.
private final class Token: Sendable {
    let key: Int

    init(key: Int) {
        self.key = key
    }
}

/// The bounded registry (behind the limiter and pipeline registries) finds a key it
/// remembers bit for bit without its lock, as the breaker registry does; the values are
/// kept in boxes, so a struct value is read out of a box the reader has retained.
@Suite struct BoundedRegistryLockFreeTests {
    @Test(arguments: [
        "h1.example",  // inline
        "host-number-1.example.com",  // in storage of its own
    ])
    func aRememberedStringKeyIsFoundWhileTheLockIsHeld(host: String) throws {
        let registry = try BoundedRegistry<String, [Int]>(maximumCount: 10) { [$0.count, 7] }
        #expect(registry.value(for: host) == [host.count, 7])
        let found = registry.whileLocked { onAnotherThread { registry.value(for: host) } }
        #expect(found == [host.count, 7])
        #expect(registry.whileLocked { onAnotherThread { registry.existingValue(for: host) } } == [host.count, 7])
    }

    @Test func aRememberedRateLimiterIsFoundWhileTheLockIsHeld() throws {
        let limiters = try RateLimiterRegistry<Int>(
            name: "tenants", algorithm: .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)))
        let limiter = limiters.limiter(for: 42)
        let registry = limiters.registry
        let found: RateLimiter? = registry.whileLocked { onAnotherThread { limiters.limiter(for: 42) } }
        #expect(found === limiter)
    }

    /// A lookup that found its value without the lock still counts as a use: the bound
    /// forgets the key used least recently, not the one looked up without the lock.
    @Test func aKeyFoundWithoutTheLockCountsAsUsedWhenTheBoundForgetsOne() throws {
        let registry = try BoundedRegistry<Int, Token>(maximumCount: 2) { Token(key: $0) }
        try #require(
            RegistryKeyBits.slot(of: RegistryKeyBits.words(of: 1))
                != RegistryKeyBits.slot(of: RegistryKeyBits.words(of: 2)))
        let first = registry.value(for: 1)
        let second = registry.value(for: 2)
        let found: Token? = registry.whileLocked { onAnotherThread { registry.value(for: 1) } }
        #expect(found === first)
        _ = registry.value(for: 3)  // forgets 2, since 1 was used after it
        #expect(registry.existingValue(for: 1) === first)
        #expect(registry.existingValue(for: 2) == nil)
        #expect(registry.value(for: 2) !== second)
        #expect(registry.count == 2)
    }

    /// A slot rewritten while a reader is inside keeps what it held until the reader has
    /// left; the next write that finds the slot free releases it.
    @Test func aDisplacedValueIsKeptWhileAReaderIsInsideItsSlot() throws {
        let registry = try BoundedRegistry<Int, Token>(maximumCount: 2) { Token(key: $0) }
        let slot = RegistryKeyBits.slot(of: RegistryKeyBits.words(of: 1))
        let rivals = Array(
            (100...).lazy.filter { RegistryKeyBits.slot(of: RegistryKeyBits.words(of: $0)) == slot }.prefix(2))
        weak var displaced: Token?
        do {
            displaced = registry.value(for: 1)
            registry.recentKeys.slots[slot].readers.wrappingAdd(1, ordering: .sequentiallyConsistent)
            _ = registry.value(for: rivals[0])
            _ = registry.value(for: rivals[1])  // forgets 1 and rewrites the slot it was in
        }
        #expect(registry.existingValue(for: 1) == nil)
        #expect(displaced != nil, "released while a reader could still retain it")
        registry.recentKeys.slots[slot].readers.wrappingSubtract(1, ordering: .sequentiallyConsistent)
        _ = registry.value(for: 1)  // a write to the slot, which now has no reader
        #expect(displaced == nil)
    }

    /// Readers look up hot keys without the lock while a writer looks up keys remembered in
    /// the same slots (rewriting them) and keys not held (evicting): every value a reader
    /// gets is its own key's, and the bound holds.
    @Test func hotKeysFindTheirOwnValuesWhileAWriterRewritesTheirSlotsAndEvicts() throws {
        let registry = try BoundedRegistry<Int, Token>(maximumCount: 24) { Token(key: $0) }
        let hotKeys = Array(0..<8)
        let slots = Set(hotKeys.map { RegistryKeyBits.slot(of: RegistryKeyBits.words(of: $0)) })
        let rivals = Array(
            (1_000...).lazy.filter { slots.contains(RegistryKeyBits.slot(of: RegistryKeyBits.words(of: $0))) }.prefix(
                32))
        let readersLeft = Atomic(2)
        let wrong = Atomic(0)
        let rounds = Atomic(0)
        onSeparateThreads(3) { thread in
            if thread == 2 {
                var round = 0
                while readersLeft.load(ordering: .acquiring) > 0 {
                    _ = registry.value(for: rivals[round % rivals.count])
                    round += 1
                }
                rounds.store(round, ordering: .relaxed)
                return
            }
            var wrongHere = 0
            for lookup in 0..<100_000 {
                let key = hotKeys[(lookup &* 7 &+ thread) % hotKeys.count]
                if registry.value(for: key).key != key { wrongHere += 1 }
            }
            wrong.add(wrongHere, ordering: .relaxed)
            readersLeft.subtract(1, ordering: .releasing)
        }
        #expect(rounds.load(ordering: .relaxed) > 0, "the writer never ran")
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(registry.count <= 24)
    }
}

/// Runs `body` on a thread of its own and waits for it: the caller may hold the registry's
/// lock, so a lookup that took it would wait until the time limit and give `nil`.
private func onAnotherThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result?) -> Result? {
    let result = Lock<Result?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }.start()
    guard done.wait(timeout: .now() + .seconds(10)) == .success else { return nil }
    return result.withLock { $0 }
}
