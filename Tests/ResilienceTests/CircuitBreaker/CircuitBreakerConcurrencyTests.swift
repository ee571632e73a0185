import Resilience
import ResilienceTesting
import Testing

/// Half-open admission under a stampede, hung probes and late results, with
/// operations that really overlap: each parks on the test clock until the test
/// moves time.
@Suite(.timeLimit(.minutes(5)))
struct CircuitBreakerConcurrencyTests {
    enum Outcome: Sendable {
        case ran
        case rejected
    }

    /// Trips `breaker`, then moves the clock to the end of its open time.
    static func tripAndWaitOut(_ breaker: CircuitBreaker, clock: TestClock, openFor: Duration) async {
        await breaker.fail()
        #expect(breaker.snapshot().state == .open)
        clock.advance(by: openFor)
    }

    @Test(arguments: [1, 3])
    func aThousandCallersArrivingAsItTurnsHalfOpenRunAtMostTheConfiguredProbes(maximumProbes: Int) async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "stampede", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)),
            maximumProbes: maximumProbes, successesToClose: maximumProbes, clock: clock)
        await Self.tripAndWaitOut(breaker, clock: clock, openFor: .seconds(10))

        let callers = 1_000
        let gauge = ConcurrencyGauge()
        let arrived = Countdown()
        let gate = StartingGate()
        try await withThrowingTaskGroup(of: Outcome.self) { group in
            for _ in 0..<callers {
                group.addTask {
                    await gate.wait()
                    do {
                        try await breaker.execute {
                            gauge.enter()
                            arrived.increment()
                            try await clock.sleep(for: .seconds(1))
                            gauge.leave()
                        }
                        return .ran
                    } catch is CircuitBreakerOpenError {
                        arrived.increment()
                        return .rejected
                    }
                }
            }
            gate.open()
            // Every caller has either entered the operation or been rejected.
            await arrived.wait(untilReaching: callers)
            #expect(gauge.maximum == maximumProbes)
            #expect(gauge.current == maximumProbes)
            await clock.waitForSleepers(count: gauge.current)
            clock.advance(by: .seconds(1))

            var ran = 0
            var rejected = 0
            for try await outcome in group {
                switch outcome {
                case .ran: ran += 1
                case .rejected: rejected += 1
                }
            }
            #expect(ran == maximumProbes)
            #expect(rejected == callers - maximumProbes)
        }
        #expect(gauge.total == maximumProbes)
        #expect(breaker.state == .closed)
    }

    @Test func probesInFlightNeverExceedTheLimitAcrossWaves() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "waves", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)), maximumProbes: 3,
            successesToClose: 9, clock: clock)
        await Self.tripAndWaitOut(breaker, clock: clock, openFor: .seconds(10))
        let gauge = ConcurrencyGauge()

        for wave in 1...3 {
            let arrived = Countdown()
            let gate = StartingGate()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        await gate.wait()
                        do {
                            try await breaker.execute {
                                gauge.enter()
                                arrived.increment()
                                try await clock.sleep(for: .seconds(1))
                                gauge.leave()
                            }
                        } catch {
                            arrived.increment()
                        }
                    }
                }
                gate.open()
                // Every caller has either entered the operation or been rejected.
                await arrived.wait(untilReaching: 200)
                await clock.waitForSleepers(count: gauge.current)
                #expect(gauge.current <= 3)
                clock.advance(by: .seconds(1))
            }
            #expect(gauge.maximum == 3)
            #expect(gauge.total == wave * 3)
            #expect(breaker.snapshot().successfulProbes == (wave == 3 ? 0 : wave * 3))
        }
        #expect(breaker.state == .closed)
    }

    @Test func aProbeHangingPastItsLeaseLetsANewProbeIn() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "lease", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)),
            probeLease: .seconds(5), clock: clock)
        await Self.tripAndWaitOut(breaker, clock: clock, openFor: .seconds(10))

        let hung = Task {
            try await breaker.execute {
                try await clock.sleep(for: .seconds(3_600))
                throw ServiceFailure()
            }
        }
        await clock.waitForSleepers(count: 1)
        await #expect(throws: CircuitBreakerOpenError.self) {
            try await breaker.execute { "too early" }
        }
        clock.advance(by: .seconds(5))
        #expect(try await breaker.execute { "new probe" } == "new probe")
        #expect(breaker.state == .closed)

        // The hung probe finally fails; it belongs to a generation that has moved on.
        clock.advance(by: .seconds(3_600))
        await #expect(throws: ServiceFailure.self) { try await hung.value }
        #expect(breaker.state == .closed)
        #expect(breaker.snapshot().consecutiveFailures == 0)
    }

    @Test func aLateFailureFromTheClosedStateDoesNotReopenABreakerThatMovedOn() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(
            name: "late", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)), observer: observer,
            clock: clock)
        let slow = Task {
            try await breaker.execute {
                try await clock.sleep(for: .seconds(100))
                throw ServiceFailure()
            }
        }
        await clock.waitForSleepers(count: 1)
        await breaker.fail()
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(10))
        _ = try await breaker.execute { "probe" }
        #expect(breaker.state == .closed)

        clock.advance(by: .seconds(90))
        await #expect(throws: ServiceFailure.self) { try await slow.value }
        #expect(breaker.state == .closed)
        #expect(observer.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
    }

    @Test func aLateFailureWhileOpenDoesNotExtendTheOpenTime() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "late-open", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)), clock: clock)
        let slow = Task {
            try await breaker.execute {
                try await clock.sleep(for: .seconds(5))
                throw ServiceFailure()
            }
        }
        await clock.waitForSleepers(count: 1)
        await breaker.fail()
        clock.advance(by: .seconds(5))
        await #expect(throws: ServiceFailure.self) { try await slow.value }
        #expect(breaker.snapshot().remainingOpenTime == .seconds(5))
        #expect(breaker.snapshot().consecutiveTrips == 1)
    }

    @Test func aCancelledProbeReturnsItsSlot() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "cancelled-probe", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)),
            clock: clock)
        await Self.tripAndWaitOut(breaker, clock: clock, openFor: .seconds(10))
        let probe = Task {
            try await breaker.execute { try await clock.sleep(for: .seconds(60)) }
        }
        await clock.waitForSleepers(count: 1)
        #expect(breaker.snapshot().probesInFlight == 1)
        probe.cancel()
        await #expect(throws: CancellationError.self) { try await probe.value }
        #expect(breaker.state == .halfOpen)
        #expect(breaker.snapshot().probesInFlight == 0)
        #expect(try await breaker.execute { "next probe" } == "next probe")
        #expect(breaker.state == .closed)
    }

    @Test func aProbeThrowingAnUncountedErrorReturnsItsSlot() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "ignored-probe", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)),
            clock: clock)
        await Self.tripAndWaitOut(breaker, clock: clock, openFor: .seconds(10))
        await breaker.fail(with: HTTPFailure(status: 404))
        #expect(breaker.state == .halfOpen)
        #expect(breaker.snapshot().probesInFlight == 0)
        _ = try await breaker.execute { 1 }
        #expect(breaker.state == .closed)
    }

    @Test func concurrentFailuresAreEachCountedOnce() async throws {
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(
            name: "counted", tripRule: .consecutiveFailures(1_000), observer: observer, clock: TestClock())
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<999 {
                group.addTask { await breaker.fail() }
            }
        }
        #expect(breaker.snapshot().consecutiveFailures == 999)
        #expect(breaker.state == .closed)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask { await breaker.fail() }
            }
        }
        #expect(breaker.state == .open)
        #expect(observer.transitions == ["closed->open"])
    }
}
