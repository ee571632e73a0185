import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// A clock that goes back (a wall clock set back, a custom clock) while a breaker counts on
/// it: the jump counts as no time elapsed, so an open breaker stays open for what was left of
/// its open time, counted from the readings after the jump, not for the jump on top of it.
@Suite(.timeLimit(.minutes(5))) struct CircuitBreakerClockJumpTests {
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

    static func slowCallBreaker(clock: some Clock<Duration> & Sendable) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "slow", tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(10)),
            openDuration: .fixed(.seconds(60)), clock: clock)
    }

    /// Another caller sees the jump, and (with `rebaseInBetween`) proves it, between this
    /// call's load of the re-base count and its reading of the clock: the reading is after the
    /// jump and not behind the breaker's new latest time. The call runs 2 s, and is not charged
    /// the 1,000 s jump.
    @Test(arguments: [false, true])
    func aCallAdmittedWhileAnotherCallerRebasesIsNotChargedTheJump(rebaseInBetween: Bool) async throws {
        let base = TestClock()
        base.advance(by: .seconds(1_000))
        let clock = HookedClock(base)
        let breaker = try Self.slowCallBreaker(clock: clock)
        _ = breaker.snapshot()  // the breaker's latest time: 1,000 s
        clock.beforeNextReading {
            base.rewind(by: .seconds(1_000))
            if rebaseInBetween { _ = breaker.snapshot() }  // proves the jump: 0 s reads as 1,000 s
        }
        let value = try await breaker.execute {
            base.advance(by: .seconds(2))
            return 7
        }
        #expect(value == 7)
        #expect(breaker.state == .closed, "2 s, not the jump")
    }

    /// Runs a call that spans `rebases` jumps back of the clock, each proved while it runs
    /// after 3 s on the breaker's time line, and ends `after` later: the breaker's state then.
    static func stateAfterACallSpanning(rebases: Int, after: Duration) async throws -> CircuitBreakerState {
        let clock = TestClock()
        clock.advance(by: .seconds(1_000))
        let breaker = try Self.slowCallBreaker(clock: clock)
        _ = breaker.snapshot()
        let value = try await breaker.execute {
            for _ in 0..<rebases {
                clock.advance(by: .seconds(3))
                _ = breaker.snapshot()  // the breaker's latest time
                clock.rewind(by: .seconds(100))
                _ = breaker.snapshot()  // proves the jump
            }
            clock.advance(by: after)
            return 7
        }
        #expect(value == 7)
        return breaker.state
    }

    /// A call that spans two re-bases, or as many as the breaker remembers, is timed on the
    /// breaker's time line from its start: 3 s per jump and 1 s after.
    @Test func aCallSpanningSeveralRebasesIsTimedOnTheBreakersTimeLine() async throws {
        #expect(try await Self.stateAfterACallSpanning(rebases: 2, after: .seconds(5)) == .open, "11 s")
        #expect(try await Self.stateAfterACallSpanning(rebases: 2, after: .seconds(4)) == .closed, "10 s")
        let remembered = Int(CircuitBreakerStateMachine.rememberedRebases)
        #expect(try await Self.stateAfterACallSpanning(rebases: remembered, after: .seconds(1)) == .open, "13 s")
    }

    /// A call that spans more re-bases than the breaker remembers is timed from where the
    /// earliest one it remembers placed the breaker's latest time: no longer than it ran. Here
    /// it runs 18 s over six jumps, then the time after; the earliest of the four remembered
    /// re-bases came 9 s in, so it is timed 9 s and the time after.
    @Test func aCallSpanningMoreRebasesThanRememberedIsTimedFromTheEarliestRemembered() async throws {
        #expect(CircuitBreakerStateMachine.rememberedRebases == 4)
        #expect(try await Self.stateAfterACallSpanning(rebases: 6, after: .seconds(2)) == .open, "timed 11 s")
        #expect(try await Self.stateAfterACallSpanning(rebases: 6, after: .seconds(1)) == .closed, "timed 10 s")
    }
}

/// A clock that reads a ``TestClock``, and runs a step once before its next reading.
private final class HookedClock: Clock, Sendable {
    private let base: TestClock
    private let step = Mutex<(@Sendable () -> Void)?>(nil)

    init(_ base: TestClock) { self.base = base }

    /// Runs `step` before the next reading; its own readings do not run it.
    func beforeNextReading(_ step: @escaping @Sendable () -> Void) {
        self.step.withLock { $0 = step }
    }

    var now: TestClock.Instant {
        let step = self.step.withLock { step in
            defer { step = nil }
            return step
        }
        step?()
        return self.base.now
    }

    var minimumResolution: Duration { .zero }

    func sleep(until deadline: TestClock.Instant, tolerance: Duration?) async throws {
        try await self.base.sleep(until: deadline, tolerance: tolerance)
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
