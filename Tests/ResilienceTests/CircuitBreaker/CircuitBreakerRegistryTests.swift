import Resilience
import ResilienceTesting
import Testing

@Suite struct CircuitBreakerRegistryTests {
    static func registry(maximumCount: Int = 100, clock: TestClock = TestClock()) throws
        -> CircuitBreakerRegistry<String>
    {
        try CircuitBreakerRegistry(
            name: "hosts", configuration: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(1)),
            maximumCount: maximumCount, clock: clock)
    }

    @Test func theSameKeyReturnsTheSameBreaker() throws {
        let registry = try Self.registry()
        #expect(registry.breaker(for: "a.example") === registry.breaker(for: "a.example"))
        #expect(registry.count == 1)
    }

    @Test func anotherKeyReturnsAnotherBreaker() throws {
        let registry = try Self.registry()
        let first = registry.breaker(for: "a.example")
        let second = registry.breaker(for: "b.example")
        #expect(first !== second)
        #expect(first.name == "hosts[a.example]")
        #expect(second.name == "hosts[b.example]")
        #expect(registry.count == 2)
    }

    @Test func oneKeysFailuresDoNotOpenAnotherKeysBreaker() async throws {
        let registry = try Self.registry()
        await registry.breaker(for: "down.example").fail()
        #expect(registry.breaker(for: "down.example").state == .open)
        #expect(try await registry.breaker(for: "up.example").execute { 1 } == 1)
    }

    @Test func staysWithinItsBound() throws {
        let registry = try Self.registry(maximumCount: 3)
        for index in 0..<50 {
            _ = registry.breaker(for: "host-\(index)")
            #expect(registry.count <= 3)
        }
        #expect(registry.count == 3)
        #expect(registry.existingBreaker(for: "host-49") != nil)
        #expect(registry.existingBreaker(for: "host-0") == nil)
    }

    @Test func evictsTheLeastRecentlyUsedClosedBreakerFirst() throws {
        let registry = try Self.registry(maximumCount: 3)
        let a = registry.breaker(for: "a")
        let b = registry.breaker(for: "b")
        _ = registry.breaker(for: "c")
        _ = registry.breaker(for: "a")  // a is now the most recently used
        _ = registry.breaker(for: "d")  // evicts b, the least recently used
        #expect(registry.existingBreaker(for: "a") === a)
        #expect(registry.existingBreaker(for: "b") == nil)
        #expect(registry.breaker(for: "b") !== b)
    }

    @Test func keepsOpenBreakersWhileAClosedOneCanGo() async throws {
        let registry = try Self.registry(maximumCount: 3)
        let down = registry.breaker(for: "down")
        await down.fail()
        _ = registry.breaker(for: "b")
        _ = registry.breaker(for: "c")
        _ = registry.breaker(for: "d")  // "down" is the least recently used, but open
        #expect(registry.existingBreaker(for: "down") === down)
        #expect(registry.existingBreaker(for: "b") == nil)

        down.isolate()
        _ = registry.breaker(for: "e")
        #expect(registry.existingBreaker(for: "down") === down)
        #expect(registry.count == 3)
    }

    @Test func whenEveryBreakerIsOpenTheLeastRecentlyUsedGoes() async throws {
        let registry = try Self.registry(maximumCount: 2)
        let a = registry.breaker(for: "a")
        let b = registry.breaker(for: "b")
        await a.fail()
        await b.fail()
        _ = registry.breaker(for: "c")
        #expect(registry.count == 2)
        #expect(registry.existingBreaker(for: "a") == nil)
        #expect(registry.existingBreaker(for: "b") === b)
        // The forgotten breaker still works for whoever holds it.
        #expect(a.state == .open)
    }

    @Test func existingBreakerNeitherCreatesNorCountsAsAUse() throws {
        let registry = try Self.registry(maximumCount: 2)
        #expect(registry.existingBreaker(for: "a") == nil)
        #expect(registry.count == 0)
        _ = registry.breaker(for: "a")
        _ = registry.breaker(for: "b")
        _ = registry.existingBreaker(for: "a")
        _ = registry.breaker(for: "c")
        #expect(registry.existingBreaker(for: "a") == nil)
        #expect(registry.existingBreaker(for: "b") != nil)
    }

    @Test func concurrentFirstUsesOfAKeyShareOneBreaker() async throws {
        let registry = try Self.registry()
        let breakers = await withTaskGroup(of: CircuitBreaker.self) { group in
            for _ in 0..<200 {
                group.addTask { registry.breaker(for: "shared") }
            }
            var breakers: [CircuitBreaker] = []
            for await breaker in group { breakers.append(breaker) }
            return breakers
        }
        #expect(breakers.allSatisfy { $0 === breakers[0] })
        #expect(registry.count == 1)
    }

    @Test func concurrentUseOfManyKeysStaysWithinTheBound() async throws {
        let registry = try Self.registry(maximumCount: 16)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<1_000 {
                group.addTask {
                    let breaker = registry.breaker(for: "host-\(index % 64)")
                    if index.isMultiple(of: 7) { await breaker.fail() }
                }
            }
        }
        #expect(registry.count == 16)
        #expect(registry.snapshots().count == 16)
    }

    @Test func aCustomFactoryMakesEachBreaker() throws {
        let clock = TestClock()
        let registry = try CircuitBreakerRegistry<Int>(maximumCount: 10) { key in
            CircuitBreaker(
                name: "shard-\(key)", configuration: .default, clock: clock)
        }
        #expect(registry.breaker(for: 7).name == "shard-7")
    }

    @Test func snapshotsCoverEveryBreakerByKey() async throws {
        let clock = TestClock()
        let registry = try Self.registry(clock: clock)
        await registry.breaker(for: "down").fail()
        _ = registry.breaker(for: "up")
        clock.advance(by: .seconds(3))
        let snapshots = registry.snapshots()
        #expect(snapshots["down"]?.state == .open)
        #expect(snapshots["down"]?.openedAt == .zero)
        #expect(snapshots["down"]?.takenAt == .seconds(3))
        #expect(snapshots["up"]?.state == .closed)
    }

    @Test func aBoundBelowOneIsRejected() {
        let error = #expect(throws: ConfigurationError.self) {
            try CircuitBreakerRegistry<String>(name: "none", maximumCount: 0)
        }
        #expect(error?.setting == "maximumCount")
    }
}
