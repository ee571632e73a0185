import Resilience
import ResilienceTesting
import Testing

/// A registry's observer hears every breaker's events, by name, and
/// ``CircuitBreakerStateChangeEvent/generation`` orders them: across the bound too, where the
/// registry forgets a key's breaker and later makes another under the same name.
@Suite(.timeLimit(.minutes(5))) struct CircuitBreakerRegistryGenerationTests {
    private func registry(clock: TestClock, log: BreakerObserverLog) throws -> CircuitBreakerRegistry<String> {
        try CircuitBreakerRegistry<String>(
            name: "hosts",
            configuration: try CircuitBreakerConfiguration(
                tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(5))),
            maximumCount: 1, observer: log, clock: clock)
    }

    private func fail(_ breaker: CircuitBreaker) async {
        _ = try? await breaker.execute { () async throws -> Int in throw StatusError(status: 503) }
    }

    /// After the registry forgot a closed breaker at its bound, the next breaker for the same
    /// key numbers its generations after the old one's: ordered by generation, the key's last
    /// event is its trip, not the old breaker's close.
    @Test func generationsOfOneKeyKeepRisingAcrossTheRegistrysBound() async throws {
        let clock = TestClock()
        let log = BreakerObserverLog()
        let registry = try self.registry(clock: clock, log: log)
        // Key "a": trip, then a probe closes it again (closed -> open -> half-open -> closed).
        await self.fail(registry.breaker(for: "a"))
        clock.advance(by: .seconds(5))
        _ = try await registry.breaker(for: "a").execute { 1 }
        // Key "b" takes the only place: "a", closed, is forgotten, with no event.
        _ = registry.breaker(for: "b")
        // Key "a" again: a fresh breaker, which trips.
        let fresh = registry.breaker(for: "a")
        #expect(fresh.snapshot().generation >= 3, "a fresh breaker starts in the registry's latest generation")
        await self.fail(fresh)
        #expect(registry.breaker(for: "a").state == .open)

        let events = log.changes.withLock { $0 }.filter { $0.breakerName == "hosts[a]" }
        #expect(events.map(\.to) == [.open, .halfOpen, .closed, .open])
        let generations = events.map(\.generation)
        #expect(generations == generations.sorted() && Set(generations).count == generations.count, "\(generations)")
        let byGeneration = events.sorted { $0.generation < $1.generation }
        #expect(
            byGeneration.last?.to == .open,
            "ordered by generation, the key's last state reads \(String(describing: byGeneration.last?.to)); generations \(generations)"
        )
    }

    /// A registry whose every breaker is open forgets one at its bound: the observer hears that
    /// the key's breaker is closed now (``CircuitBreakerTransitionReason/forgotten``), in a
    /// generation after the breaker's trip, so that the events of the key tell its state.
    @Test func forgettingAnOpenBreakerIsReported() async throws {
        let clock = TestClock()
        let log = BreakerObserverLog()
        let registry = try self.registry(clock: clock, log: log)
        let old = registry.breaker(for: "a")
        await self.fail(old)
        #expect(old.state == .open)
        // Key "b" needs the only place, held by an open breaker: the registry forgets it anyway.
        _ = registry.breaker(for: "b")
        #expect(registry.existingBreaker(for: "a") == nil)
        #expect(old.state == .open, "the forgotten breaker keeps its state for its holders")

        let events = log.changes.withLock { $0 }.filter { $0.breakerName == "hosts[a]" }
        #expect(events.map(\.to) == [.open, .closed])
        #expect(events.map(\.reason) == [.tripped, .forgotten])
        #expect(events.last?.from == .open)
        #expect(events.map(\.generation) == events.map(\.generation).sorted())
        // The key's next breaker is closed, as the last event of its name says.
        let fresh = registry.breaker(for: "a")
        #expect(fresh !== old && fresh.state == .closed)
        #expect(log.changes.withLock { $0 }.filter { $0.breakerName == "hosts[b]" }.isEmpty)
    }

    /// A closed breaker forgotten at the bound holds nothing worth telling: no event.
    @Test func forgettingAClosedBreakerIsNotReported() async throws {
        let log = BreakerObserverLog()
        let registry = try self.registry(clock: TestClock(), log: log)
        _ = registry.breaker(for: "a")
        _ = registry.breaker(for: "b")
        #expect(registry.existingBreaker(for: "a") == nil)
        #expect(log.changes.withLock { $0 }.isEmpty)
    }
}
