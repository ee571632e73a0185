import ResilienceTesting
import Testing

@testable import Resilience

/// A clock that goes back (a wall clock set back, a custom clock) while a breaker counts on
/// it: the jump counts as no time elapsed, so an open breaker stays open for what was left of
/// its open time, counted from the readings after the jump, not for the jump on top of it.
@Suite(.timeLimit(.minutes(1))) struct CircuitBreakerClockJumpTests {
    static func breaker(
        clock: TestClock, tripRule: CircuitBreakerTripRule = .consecutiveFailures(1)
    ) throws -> CircuitBreaker {
        try CircuitBreaker(name: "jump", tripRule: tripRule, openDuration: .fixed(.seconds(60)), clock: clock)
    }

    /// A rejection without the lock counts no reading, so the breaker knows of no time after
    /// the last reading it counted (here, the trip): from the first reading after the jump, it
    /// stays open at most its open duration, never for the jump on top of it.
    @Test func aJumpBackBeforeTheOpenTimeKeepsItOpenAtMostItsOpenDuration() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(1_000))
        let breaker = try Self.breaker(clock: clock)
        await breaker.fail()
        clock.advance(by: .seconds(20))
        let before = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
        #expect(before?.retryAfter == .seconds(40))
        clock.rewind(by: .seconds(500))  // behind the time the breaker opened
        let rejection = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
        #expect(rejection?.retryAfter == .seconds(60))
        clock.advance(by: .seconds(10))
        let later = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
        #expect(later?.retryAfter == .seconds(50), "the lock-free rejection counts on from the new readings")
        clock.advance(by: .seconds(50))
        #expect(try await breaker.execute { 7 } == 7, "a probe 60 s after the jump, not 540")
        #expect(breaker.state == .closed)
    }

    /// A jump smaller than the time since the breaker opened leaves readings after the open
    /// time; it is still a jump, and still counts as no time elapsed.
    @Test func aJumpBackWithinTheOpenTimeCountsAsNoTimeElapsed() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock: clock)
        await breaker.fail()
        clock.advance(by: .seconds(30))
        #expect(breaker.snapshot().remainingOpenTime == .seconds(30))  // a reading the breaker counts
        clock.rewind(by: .seconds(10))
        #expect(breaker.snapshot().remainingOpenTime == .seconds(30))
        clock.advance(by: .seconds(29))
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(1))
        #expect(breaker.state == .halfOpen)
    }

    /// The calls counted before and after a jump are each counted once, and slide out of the
    /// window on the breaker's own time line, which the jump did not move.
    @Test func theTimeWindowNeitherLosesNorDoubleCountsCallsAcrossAJump() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(
            clock: clock,
            tripRule: .failureRate(threshold: 0.9, minimumCalls: 100, window: .time(.seconds(10), buckets: 10)))
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 2 }
        clock.advance(by: .seconds(5))
        await breaker.fail()
        clock.rewind(by: .seconds(100))
        await breaker.fail()
        _ = try await breaker.execute { 3 }
        var snapshot = breaker.snapshot()
        #expect(snapshot.recentCalls == 5)
        #expect(snapshot.recentFailures == 2)
        // After the jump was seen, successes are counted (lock-free) in the current bucket.
        _ = try await breaker.execute { 4 }
        _ = try await breaker.execute { 5 }
        #expect(breaker.snapshot().recentCalls == 7)
        // Five and a half seconds later on the clock, the first two calls have left the window.
        clock.advance(by: .milliseconds(5_500))
        snapshot = breaker.snapshot()
        #expect(snapshot.recentCalls == 5)
        #expect(snapshot.recentFailures == 2)
        clock.advance(by: .seconds(5))
        #expect(breaker.snapshot().recentCalls == 0)
        #expect(breaker.state == .closed)
    }

    /// A half-open breaker's probe lease runs on the breaker's time line too: a probe that
    /// hangs frees its slot one lease after it started, however the clock jumped meanwhile.
    @Test func aProbeLeaseRunsOnAfterAJump() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "lease", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(60)),
            maximumProbes: 1, probeLease: .seconds(10), clock: clock)
        await breaker.fail()
        clock.advance(by: .seconds(60))
        let probe = try breaker.admit()  // takes the one probe slot, and hangs
        clock.advance(by: .seconds(4))
        #expect(breaker.state == .halfOpen)  // a reading the breaker counts
        clock.rewind(by: .seconds(1_000))
        let rejection = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
        #expect(rejection?.retryAfter == .seconds(6))
        clock.advance(by: .seconds(6))
        #expect(try await breaker.execute { 1 } == 1, "the lease ran out six seconds later")
        breaker.recordSuccess(for: probe)  // too late to count
    }

    /// A closed breaker admits every call, so it sees no rejection to prove a jump by; its
    /// results do. Four failures 20 s apart are never four in a 10 s window: after the clock
    /// goes back, the window runs on from the new readings rather than counting them all at
    /// the time the breaker saw before the jump.
    static func failuresSpreadAfterAJump(snapshotAfterTheJump: Bool) async throws -> CircuitBreakerState {
        let clock = TestClock()
        clock.advance(by: .seconds(1_000))
        let breaker = try CircuitBreaker(
            name: "window",
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .time(.seconds(10), buckets: 10)),
            openDuration: .fixed(.seconds(60)), clock: clock)
        await breaker.fail()  // counted at 1,000 s
        clock.rewind(by: .seconds(1_000))
        if snapshotAfterTheJump { _ = breaker.snapshot() }
        for _ in 0..<3 {
            clock.advance(by: .seconds(20))
            await breaker.fail()
        }
        return breaker.state
    }

    /// A snapshot after the jump proves it too: whether one is taken, a read-only look, changes
    /// nothing.
    @Test func aClosedBreakersWindowRunsOnAfterAJumpWithOrWithoutASnapshot() async throws {
        #expect(try await Self.failuresSpreadAfterAJump(snapshotAfterTheJump: false) == .closed, "no snapshot")
        #expect(try await Self.failuresSpreadAfterAJump(snapshotAfterTheJump: true) == .closed, "a snapshot")
    }

    /// A call under a slow-call rule that spans a re-base is timed on the breaker's own time
    /// line: its start before the jump, its end after it, with the jump counting as no time.
    /// Here it runs 5 s before the jump and 10 s after: 15 s, slower than 10 s.
    @Test func aCallSpanningAJumpIsTimedOnTheBreakersTimeLine() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(1_000))
        let breaker = try CircuitBreaker(
            name: "slow", tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(10)),
            openDuration: .fixed(.seconds(60)), clock: clock)
        _ = breaker.snapshot()
        let value = try await breaker.execute {
            clock.advance(by: .seconds(5))
            _ = breaker.snapshot()  // the breaker's latest time: 1,005 s
            clock.rewind(by: .seconds(1_000))
            _ = breaker.snapshot()  // proves the jump: 5 s reads as 1,005 s
            clock.advance(by: .seconds(10))
            return 7
        }
        #expect(value == 7)
        #expect(breaker.state == .open, "15 s on the breaker's time line")
    }

    /// A call that starts after the jump, before the breaker has proved it, is timed from the
    /// breaker's latest time, as any reading behind it is: not from the early reading, which
    /// the re-base during the call would place the whole jump before the end.
    @Test func aCallStartedAfterAnUnprovedJumpIsNotTimedAcrossIt() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(1_000))
        let breaker = try CircuitBreaker(
            name: "slow", tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(10)),
            openDuration: .fixed(.seconds(60)), clock: clock)
        _ = breaker.snapshot()
        clock.rewind(by: .seconds(1_000))
        let value = try await breaker.execute {
            _ = breaker.snapshot()  // proves the jump
            clock.advance(by: .seconds(2))
            return 7
        }
        #expect(value == 7)
        #expect(breaker.state == .closed, "2 s, not the jump")
    }
}

/// The storage's guard against a reading taken before a jump and counted after it.
@Suite struct CircuitBreakerRebaseCountTests {
    @Test func aReadingTakenBeforeARebaseCountsAsNoTimeElapsed() throws {
        let configuration = try CircuitBreakerConfiguration(
            tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(60)))
        let storage = CircuitBreakerStorage(CircuitBreakerStateMachine(configuration: configuration))
        func reading(_ seconds: Int64, rebases: UInt64 = 0) -> CircuitBreakerStorage.Reading {
            .init(rebases: rebases, elapsed: .seconds(seconds))
        }
        let (admission, _) = storage.update(at: reading(100)) { $0.admit(at: $1) }.result
        guard case .permitted(let permit) = admission else { throw CancellationError() }
        _ = storage.update(at: reading(100)) { $0.record(.failure(pushback: nil), for: permit, at: $1) }
        let lateReading = reading(150)  // read before the jump, counted after it
        // The clock goes back to 10: the first step cannot tell; a second reading proves it.
        let first = storage.update(at: reading(10)) { $0.admit(at: $1) }
        #expect(first.behind == .seconds(100))
        let second = storage.update(at: reading(11), rebasingFrom: .seconds(100)) { $0.admit(at: $1) }
        #expect(second.result.0 == .rejected(state: .open, retryAfter: .seconds(60)))
        // Under the old count, the reading from before the jump counts as the latest time; taken
        // as it stands, it would run 89 s ahead of the breaker's time and end the open time.
        let late = storage.update(at: lateReading) { $0.admit(at: $1) }
        #expect(late.result.0 == .rejected(state: .open, retryAfter: .seconds(60)))
        let current = storage.update(at: reading(70, rebases: 1)) { $0.admit(at: $1) }
        #expect(current.result.0 == .rejected(state: .open, retryAfter: .seconds(1)))
    }
}
