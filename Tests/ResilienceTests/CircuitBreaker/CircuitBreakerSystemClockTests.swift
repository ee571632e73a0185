import Resilience
import Synchronization
import Testing

/// The system's clocks as Linux has them, simulated: a boot-time clock that counts
/// suspensions, a monotonic clock that does not, a wall clock that can be set, and coarse
/// readings of the last two at the last tick. Time moves only when a test says so.
final class SimulatedSystemClocks: Sendable {
    /// Nanoseconds of running (not suspended) time.
    private let running = Atomic<Int64>(1_000_000_000_000)
    private let suspended = Atomic<Int64>(0)
    /// The wall clock's offset from the boot-time clock.
    private let wallOffset = Atomic<Int64>(1_700_000_000_000_000_000)
    let tick: Int64 = 4_000_000

    var boot: Int64 { self.running.load(ordering: .relaxed) + self.suspended.load(ordering: .relaxed) }
    var monotonic: Int64 { self.running.load(ordering: .relaxed) }
    var realtime: Int64 { self.boot + self.wallOffset.load(ordering: .relaxed) }
    /// How much further the coarse clocks trail than back to the last tick, in nanoseconds.
    private let extraLag = Atomic<Int64>(0)
    /// How far the coarse clocks trail: back to the last tick of running time, and the extra lag.
    private var sinceTick: Int64 { self.monotonic % self.tick + self.extraLag.load(ordering: .relaxed) }

    /// Makes the coarse clocks trail by `duration` more: what a reading published a tick late,
    /// by an interrupt that itself came late, looks like.
    func delayCoarseClocks(by duration: Duration) {
        self.extraLag.store(Self.nanoseconds(duration), ordering: .relaxed)
    }

    /// Runs for `duration`.
    func advance(by duration: Duration) {
        self.running.add(Self.nanoseconds(duration), ordering: .relaxed)
    }

    /// Suspends the system for `duration`: the boot-time and wall clocks move, the monotonic one does not.
    func suspend(for duration: Duration) {
        self.suspended.add(Self.nanoseconds(duration), ordering: .relaxed)
    }

    /// Sets the wall clock forward (or back, for a negative `duration`).
    func stepWallClock(by duration: Duration) {
        self.wallOffset.add(Self.nanoseconds(duration), ordering: .relaxed)
    }

    /// A source that reads these clocks.
    func source() -> SystemClockSource {
        SystemClockSource(
            simulating: .init(
                boot: { self.boot }, monotonic: { self.monotonic }, realtime: { self.realtime },
                monotonicCoarse: { self.monotonic - self.sinceTick },
                realtimeCoarse: { self.realtime - self.sinceTick }, tick: self.tick))
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        Int64(duration.attoseconds / 1_000_000_000)
    }
}

/// The breaker over the system's clock reads cheap coarse bounds where it can (a time-window
/// success, a rejection while open); these pin that the bounds stay bounds when the system is
/// suspended or its wall clock is set.
@Suite struct CircuitBreakerSystemClockTests {
    static func breaker(
        on clocks: SimulatedSystemClocks, tripRule: CircuitBreakerTripRule,
        openDuration: CircuitBreakerOpenDuration = .fixed(.seconds(30))
    ) throws -> CircuitBreaker {
        CircuitBreaker(
            name: "system",
            configuration: try CircuitBreakerConfiguration(tripRule: tripRule, openDuration: openDuration),
            observer: nil, elapsedClock: ElapsedClock(simulating: clocks.source()))
    }

    static let windowRule = CircuitBreakerTripRule.failureRate(
        threshold: 0.5, minimumCalls: 20, window: .time(.seconds(10), buckets: 10))

    @Test func successesAfterASuspensionCountInTheBucketOfTheirTime() async throws {
        let clocks = SimulatedSystemClocks()
        let breaker = try Self.breaker(on: clocks, tripRule: Self.windowRule)
        clocks.advance(by: .milliseconds(500))
        for _ in 0..<10 { _ = try await breaker.execute { 1 } }
        clocks.suspend(for: .seconds(3_600))
        clocks.advance(by: .milliseconds(100))
        // No locked update since the suspension: the bucket published before it is still
        // published, and a bound that missed the suspension would fall inside it.
        for _ in 0..<10 { _ = try await breaker.execute { 1 } }
        #expect(breaker.snapshot().recentCalls == 10, "the ten successes since the suspension")
        for _ in 0..<9 { await breaker.fail() }
        #expect(breaker.state == .closed, "9 of 19 calls failed")
        await breaker.fail()
        #expect(breaker.state == .open, "10 of 20 calls failed")
    }

    /// On the system clock a success is placed in its bucket by a cheap bound, without the
    /// lock; one that completes `minimumCalls` at a rate at the threshold is judged all the same.
    @Test func aSuccessThatCompletesMinimumCallsOpensTheBreaker() async throws {
        let clocks = SimulatedSystemClocks()
        let breaker = try Self.breaker(
            on: clocks, tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .time(.seconds(60), buckets: 6))
        )
        clocks.advance(by: .milliseconds(500))
        await breaker.fail()
        await breaker.fail()
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 1 }
        #expect(breaker.state == .open, "2 of 4 calls failed")
    }

    @Test func aStepOfTheWallClockNeitherLosesNorMisplacesSuccesses() async throws {
        let clocks = SimulatedSystemClocks()
        let breaker = try Self.breaker(on: clocks, tripRule: Self.windowRule)
        clocks.advance(by: .milliseconds(500))
        for _ in 0..<4 { _ = try await breaker.execute { 1 } }
        clocks.stepWallClock(by: .seconds(-3_600))
        for _ in 0..<4 { _ = try await breaker.execute { 1 } }
        clocks.stepWallClock(by: .seconds(7_200))
        for _ in 0..<4 { _ = try await breaker.execute { 1 } }
        #expect(breaker.snapshot().recentCalls == 12)
        clocks.advance(by: .seconds(10))  // the bucket of all twelve leaves the window
        for _ in 0..<3 { _ = try await breaker.execute { 1 } }
        #expect(breaker.snapshot().recentCalls == 3)
    }

    @Test func anOpenTimeThatEndedDuringASuspensionLetsAProbeThrough() async throws {
        let clocks = SimulatedSystemClocks()
        let breaker = try Self.breaker(on: clocks, tripRule: .consecutiveFailures(1))
        await breaker.fail()
        clocks.advance(by: .seconds(10))
        await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
        clocks.suspend(for: .seconds(3_600))
        let value = try await breaker.execute { 7 }
        #expect(value == 7, "the probe ran")
        #expect(breaker.state == .closed)
    }

    @Test func aRejectionsWaitIsNeverShorterThanTheOpenTimeLeftNorLongerThanATickMore() async throws {
        let clocks = SimulatedSystemClocks()
        let breaker = try Self.breaker(on: clocks, tripRule: .consecutiveFailures(1))
        await breaker.fail()
        let steps: [(String, (SimulatedSystemClocks) -> Void)] = [
            ("1 ms", { $0.advance(by: .milliseconds(1)) }), ("2.5 ms", { $0.advance(by: .microseconds(2_500)) }),
            ("a 5 s suspension", { $0.suspend(for: .seconds(5)) }),
            ("12.345678 ms", { $0.advance(by: .nanoseconds(12_345_678)) }),
            ("a 2 s suspension", { $0.suspend(for: .seconds(2)) }), ("20 s", { $0.advance(by: .seconds(20)) }),
        ]
        for (step, event) in steps {
            event(clocks)
            let error = try #require(await Self.rejection(breaker))
            let retryAfter = try #require(error.retryAfter)
            #expect(retryAfter >= breaker.openTimeLeft(clocks), "after a further \(step)")
            #expect(
                retryAfter <= breaker.openTimeLeft(clocks) + .nanoseconds(2 * clocks.tick) + .milliseconds(1),
                "after a further \(step)")
            #expect(retryAfter.attoseconds % 1_000_000_000_000_000 == 0, "whole milliseconds")
        }
    }

    @Test func anObserverHearsOfEveryRejectionWithTheErrorThrown() async throws {
        let clocks = SimulatedSystemClocks()
        let observer = RecordingBreakerObserver()
        let breaker = CircuitBreaker(
            name: "system",
            configuration: try CircuitBreakerConfiguration(
                tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30))),
            observer: observer, elapsedClock: ElapsedClock(simulating: clocks.source()))
        await breaker.fail()
        var thrown: [CircuitBreakerOpenError] = []
        for step in 0..<3 {
            // Twice in one tick (the thread's cached box thrown again), then a tick later.
            clocks.advance(by: .nanoseconds(step == 1 ? 0 : 2 * clocks.tick))
            thrown.append(try #require(await Self.rejection(breaker)))
        }
        breaker.isolate()
        thrown.append(try #require(await Self.rejection(breaker)))
        let heard = observer.rejections.map {
            CircuitBreakerOpenError(breakerName: $0.breakerName, state: $0.state, retryAfter: $0.retryAfter)
        }
        #expect(heard == thrown)
        #expect(thrown.map(\.state) == [.open, .open, .open, .isolated])
        #expect(thrown[0] == thrown[1] && thrown[1] != thrown[2], "a tick later, a shorter wait")
    }

    @Test func theCoarseBoundsEncloseTheBootTimeClockAcrossSuspensionsAndSteps() throws {
        let clocks = SimulatedSystemClocks()
        let clock = ElapsedClock(simulating: clocks.source())
        let events: [(SimulatedSystemClocks) -> Void] = [
            { $0.advance(by: .nanoseconds(3_999_999)) }, { $0.suspend(for: .seconds(60)) },
            { $0.stepWallClock(by: .seconds(-30)) }, { $0.advance(by: .milliseconds(1)) },
            { $0.stepWallClock(by: .seconds(90)) }, { $0.suspend(for: .milliseconds(5)) },
        ]
        for event in events {
            event(clocks)
            let precise = try #require(clock.nanoseconds())
            let bounds = try #require(clock.coarseBoundsNanoseconds())
            #expect(bounds.lower <= precise)
            #expect(bounds.upper >= precise)
            #expect(try #require(clock.upperBoundNanoseconds()) >= precise)
        }
    }

    static func rejection(_ breaker: CircuitBreaker) async -> CircuitBreakerOpenError? {
        do {
            _ = try await breaker.execute { 1 }
            return nil
        } catch {
            return error as? CircuitBreakerOpenError
        }
    }
}

extension CircuitBreaker {
    /// The open time left on the simulated clocks, for a breaker opened at their
    /// start (boot time 1,000 s) for 30 s.
    fileprivate func openTimeLeft(_ clocks: SimulatedSystemClocks) -> Duration {
        .nanoseconds(1_000_000_000_000 + 30_000_000_000 - clocks.boot)
    }
}

/// The question the rate limiter asks when it settles a loan past its span: can a bound read
/// during the loan have trailed the precise clock?
@Suite struct SystemClockBoundTokenTests {
    @Test func boundsHeldWhenTheSystemRanWithoutSuspension() {
        let clocks = SimulatedSystemClocks()
        let clock = ElapsedClock(simulating: clocks.source())
        let token = clock.upperBoundMargin()!
        clocks.advance(by: .seconds(2))
        #expect(clock.upperBoundsHeld(below: 1_000_000_000, sinceMargin: token))
    }

    @Test func boundsMayHaveTrailedAfterASuspensionTheMarginDoesNotCover() {
        let clocks = SimulatedSystemClocks()
        let clock = ElapsedClock(simulating: clocks.source())
        let token = clock.upperBoundMargin()!
        clocks.suspend(for: .seconds(5))
        clocks.advance(by: .milliseconds(1))
        #expect(!clock.upperBoundsHeld(below: 1_000_000_000, sinceMargin: token))
        // The margins were measured again, so a new token names margins that cover it.
        let next = clock.upperBoundMargin()!
        #expect(next > token)
        clocks.advance(by: .seconds(2))
        #expect(clock.upperBoundsHeld(below: 7_000_000_000, sinceMargin: next))
    }

    @Test func boundsHoldWhileTheCoarseClocksTrailByTwoTicksAndAHalf() throws {
        // A coarse reading was measured to trail the precise one by between one and two ticks,
        // and by a little over two when the tick interrupt came late. Here it trails by up to
        // two ticks and a half, less two nanoseconds.
        let clocks = SimulatedSystemClocks()
        clocks.delayCoarseClocks(by: .nanoseconds(clocks.tick / 2 * 3 - 1))
        let clock = ElapsedClock(simulating: clocks.source())
        let token = try #require(clock.upperBoundMargin())
        for step in 0..<200 {
            clocks.advance(by: .nanoseconds(Int64(step) * 37_501 % clocks.tick + 1))
            let precise = try #require(clock.nanoseconds())
            #expect(try #require(clock.upperBoundNanoseconds()) >= precise, "step \(step)")
            #expect(try #require(clock.coarseBoundsNanoseconds()).upper >= precise, "step \(step)")
        }
        // No suspension, so the margins in force since the token still cover every bound read.
        #expect(clock.upperBoundsHeld(below: 0, sinceMargin: token))
    }

    @Test func aTokenOtherThanTheEvenCountInForceNeverHolds() {
        let clocks = SimulatedSystemClocks()
        let source = clocks.source()
        let token = source.marginToken()
        #expect(token % 2 == 0)
        clocks.advance(by: .seconds(2))
        #expect(source.upperBoundsHeld(below: 0, since: token))
        #expect(!source.upperBoundsHeld(below: 0, since: token + 1))
    }

    @Test func aMeasurementOfTheMarginsSinceTheTokenAnswersThatBoundsMayHaveTrailed() {
        let clocks = SimulatedSystemClocks()
        let clock = ElapsedClock(simulating: clocks.source())
        let token = clock.upperBoundMargin()!
        clock.recalibrateUpperBound()
        clocks.advance(by: .seconds(2))
        #expect(!clock.upperBoundsHeld(below: 1_000_000_000, sinceMargin: token))
        #expect(clock.upperBoundsHeld(below: 3_000_000_000, sinceMargin: token))  // still below: nothing to check
    }
}
