import Resilience
import ResilienceTesting
import Testing

@MainActor
private final class ScreenModel {
    var loads = 0
}

/// The shared breaker through its public API, on a test clock.
@Suite struct CircuitBreakerTests {
    @Test func opensAfterFiveConsecutiveFailuresByDefault() async throws {
        let breaker = try CircuitBreaker(name: "default", clock: TestClock())
        for _ in 0..<4 { await breaker.fail() }
        #expect(breaker.state == .closed)
        await breaker.fail()
        #expect(breaker.state == .open)
    }

    @Test func returnsTheOperationsValueAndRethrowsItsErrorUnchanged() async throws {
        let breaker = try CircuitBreaker(name: "values", clock: TestClock())
        #expect(try await breaker.execute { 42 } == 42)
        await #expect(throws: HTTPFailure.self) {
            try await breaker.execute { throw HTTPFailure(status: 503) }
        }
    }

    @Test func theRejectionNamesTheBreakerAndCarriesTheRemainingOpenTime() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "payments", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)), clock: clock)
        await breaker.fail()
        clock.advance(by: .seconds(12))
        var ran = false
        let error = await #expect(throws: CircuitBreakerOpenError.self) {
            try await breaker.execute { ran = true }
        }
        #expect(!ran)
        #expect(error?.breakerName == "payments")
        #expect(error?.state == .open)
        #expect(error?.retryAfter == .seconds(18))
        #expect(error?.isRetryable == true)
        #expect(ErrorHints.retryAfter(of: try #require(error)) == .seconds(18))
        #expect(error?.description.contains("payments") == true)
    }

    @Test func recoversThroughAProbeOnceTheOpenTimeHasPassed() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "recovery", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)), clock: clock)
        await breaker.fail()
        clock.advance(by: .seconds(10))
        #expect(breaker.state == .halfOpen)
        #expect(try await breaker.execute { "ok" } == "ok")
        #expect(breaker.state == .closed)
    }

    @Test func aFailedProbeReopensWithAGrowingOpenTime() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "growing", tripRule: .consecutiveFailures(1),
            openDuration: .growing(initial: .seconds(2), multiplier: 3, maximum: .seconds(60)), clock: clock)
        await breaker.fail()
        #expect(breaker.snapshot().remainingOpenTime == .seconds(2))
        clock.advance(by: .seconds(2))
        await breaker.fail()
        #expect(breaker.snapshot().remainingOpenTime == .seconds(6))
        clock.advance(by: .seconds(6))
        await breaker.fail()
        #expect(breaker.snapshot().remainingOpenTime == .seconds(18))
        #expect(breaker.snapshot().consecutiveTrips == 3)
    }

    @Test func aHalfOpenRejectionCarriesTheTimeUntilTheEarliestProbeLeaseRunsOut() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "probing", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)),
            maximumProbes: 2, probeLease: .seconds(20), clock: clock)
        await breaker.fail()
        clock.advance(by: .seconds(30))
        let parked = AsyncStream<Void>.makeStream()
        let release = AsyncStream<Void>.makeStream()
        var probes: [Task<Void, any Error>] = []
        for offset in [0, 5] {
            clock.advance(by: .seconds(offset))
            probes.append(
                Task {
                    try await breaker.execute {
                        parked.continuation.yield()
                        for await _ in release.stream { break }
                    }
                })
            var iterator = parked.stream.makeAsyncIterator()
            _ = await iterator.next()
        }
        #expect(breaker.snapshot().probesInFlight == 2)
        clock.advance(by: .seconds(3))
        let error = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
        #expect(error?.state == .halfOpen)
        // The first probe took its 20 s lease at 30 s; it is now 38 s.
        #expect(error?.retryAfter == .seconds(12))
        release.continuation.finish()
        for probe in probes { try await probe.value }
    }

    @Test func isolateRejectsEveryCallUntilReset() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(name: "maintenance", observer: observer, clock: clock)
        breaker.isolate()
        clock.advance(by: .seconds(86_400))
        let error = await #expect(throws: CircuitBreakerOpenError.self) {
            try await breaker.execute { 1 }
        }
        #expect(error?.state == .isolated)
        #expect(error?.retryAfter == nil)
        #expect(error?.isRetryable == false)
        breaker.reset()
        #expect(try await breaker.execute { 2 } == 2)
        #expect(observer.transitions == ["closed->isolated", "isolated->closed"])
        #expect(observer.changes.map(\.reason) == [.isolated, .reset])
    }

    @Test func resetClosesAnOpenBreakerAtOnce() async throws {
        let breaker = try CircuitBreaker(name: "reset", tripRule: .consecutiveFailures(1), clock: TestClock())
        await breaker.fail()
        #expect(breaker.state == .open)
        breaker.reset()
        #expect(breaker.state == .closed)
        #expect(try await breaker.execute { true })
    }

    @Test func theObserverHearsEveryTransitionAndRejection() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(
            name: "observed", tripRule: .consecutiveFailures(2), openDuration: .fixed(.seconds(5)),
            observer: observer, clock: clock)
        await breaker.fail()
        await breaker.fail(with: HTTPFailure(status: 502))
        clock.advance(by: .seconds(1))
        await breaker.fail()  // rejected
        clock.advance(by: .seconds(4))
        _ = try await breaker.execute { 1 }

        #expect(observer.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
        let trip = try #require(observer.changes.first)
        #expect(trip.breakerName == "observed")
        #expect(trip.reason == .tripped)
        #expect(trip.openDuration == .seconds(5))
        #expect(trip.at == .zero)
        #expect((trip.error as? HTTPFailure)?.httpStatusCode == 502)
        #expect(observer.changes.map(\.generation) == [1, 2, 3])
        #expect(observer.rejections.count == 1)
        #expect(observer.rejections.first?.retryAfter == .seconds(4))
        #expect(observer.rejections.first?.state == .open)
    }

    @Test func aSuccessWhileClosedReportsNothing() async throws {
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(name: "quiet", observer: observer, clock: TestClock())
        for _ in 0..<100 { _ = try await breaker.execute { 1 } }
        await breaker.fail()
        _ = try await breaker.execute { 1 }
        #expect(observer.changes.isEmpty)
        #expect(observer.rejections.isEmpty)
        #expect(breaker.snapshot().consecutiveFailures == 0)
    }

    @Test func aSuccessAfterFailuresResetsTheRunThroughTheLock() async throws {
        let breaker = try CircuitBreaker(name: "run", tripRule: .consecutiveFailures(3), clock: TestClock())
        await breaker.fail()
        await breaker.fail()
        #expect(breaker.snapshot().consecutiveFailures == 2)
        _ = try await breaker.execute { 1 }
        #expect(breaker.snapshot().consecutiveFailures == 0)
        await breaker.fail()
        await breaker.fail()
        #expect(breaker.state == .closed)
    }

    @Test func aSlowSuccessCountsAsAFailure() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "slow", tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(2)), clock: clock)
        let call = Task {
            try await breaker.execute { try await clock.sleep(for: .seconds(3)) }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(3))
        try await call.value
        #expect(breaker.state == .open)
    }

    @Test func aFastSuccessUnderASlowCallRuleDoesNotCount() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "fast", tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(2)), clock: clock)
        let call = Task {
            try await breaker.execute { try await clock.sleep(for: .seconds(2)) }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(2))
        try await call.value
        #expect(breaker.state == .closed)
    }

    @Test func aFailureRateBreakerCountsEveryCall() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "rate", tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .time(.seconds(10))),
            clock: clock)
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 1 }
        await breaker.fail()
        var snapshot = breaker.snapshot()
        #expect(snapshot.recentCalls == 3)
        #expect(snapshot.recentFailures == 1)
        await breaker.fail()
        snapshot = breaker.snapshot()
        #expect(snapshot.state == .open)
    }

    @Test func theSuccessThatCompletesTheMinimumCallsOpensAFailureRateBreaker() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(
            name: "rate", tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(10)),
            observer: observer, clock: clock)
        for _ in 0..<3 { await breaker.fail() }
        #expect(breaker.state == .closed)
        _ = try await breaker.execute { 1 }  // 3 of 4 failed
        #expect(breaker.state == .open)
        #expect(observer.changes.map(\.reason) == [.tripped])
        #expect(observer.changes.first?.error == nil)
        await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
    }

    @Test func theSnapshotShowsHalfOpenOnceTheOpenTimeHasPassed() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(
            name: "snap", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(3)), observer: observer,
            clock: clock)
        clock.advance(by: .seconds(1))
        await breaker.fail()
        clock.advance(by: .seconds(2))
        var snapshot = breaker.snapshot()
        #expect(snapshot.state == .open)
        #expect(snapshot.openedAt == .seconds(1))
        #expect(snapshot.takenAt == .seconds(3))
        #expect(snapshot.remainingOpenTime == .seconds(1))
        clock.advance(by: .seconds(1))
        snapshot = breaker.snapshot()
        #expect(snapshot.state == .halfOpen)
        #expect(snapshot.remainingOpenTime == nil)
        #expect(observer.transitions == ["closed->open", "open->halfOpen"])
    }

    @Test @MainActor func aMainActorCallerTouchesItsStateInsideTheOperation() async throws {
        let model = ScreenModel()
        let breaker = try CircuitBreaker(name: "ui", clock: TestClock())
        let loads = try await breaker.execute {
            MainActor.assertIsolated()
            model.loads += 1
            return model.loads
        }
        #expect(loads == 1)
        #expect(model.loads == 1)
    }
}
