import Resilience
import Testing

/// The transition logic on plain instants: no clock, no tasks, no lock.
@Suite struct CircuitBreakerStateMachineTests {
    typealias Machine = CircuitBreakerStateMachine

    static func machine(
        tripRule: CircuitBreakerTripRule = .consecutiveFailures(3),
        slowCallRule: CircuitBreakerSlowCallRule? = nil,
        openDuration: CircuitBreakerOpenDuration = .fixed(.seconds(30)),
        maximumProbes: Int = 1,
        successesToClose: Int = 1,
        probeLease: Duration = .seconds(60)
    ) throws -> Machine {
        Machine(
            configuration: try CircuitBreakerConfiguration(
                tripRule: tripRule, slowCallRule: slowCallRule, openDuration: openDuration,
                maximumProbes: maximumProbes, successesToClose: successesToClose, probeLease: probeLease))
    }

    static func seconds(_ value: Double) -> Duration {
        .milliseconds(Int64(value * 1_000))
    }

    /// Admits a call that must be permitted.
    static func permit(_ machine: inout Machine, at now: Duration) throws -> CircuitBreakerPermit {
        let (admission, _) = machine.admit(at: now)
        guard case .permitted(let permit) = admission else {
            Issue.record("expected a permit at \(now), got \(admission)")
            throw CancellationError()
        }
        return permit
    }

    /// Runs one call start to finish at `now` and returns the transition its result caused.
    @discardableResult
    static func call(_ machine: inout Machine, _ result: Machine.CallResult, at now: Duration) throws
        -> Machine.Transition?
    {
        let permit = try self.permit(&machine, at: now)
        return machine.record(result, for: permit, at: now)
    }

    static let failure = Machine.CallResult.failure(pushback: nil)

    // MARK: - Closed

    @Test func opensAfterThreeConsecutiveFailures() throws {
        var machine = try Self.machine()
        #expect(try Self.call(&machine, Self.failure, at: .seconds(1)) == nil)
        #expect(try Self.call(&machine, Self.failure, at: .seconds(2)) == nil)
        #expect(machine.consecutiveFailures == 2)
        let transition = try #require(try Self.call(&machine, Self.failure, at: .seconds(3)))
        #expect(transition.from == .closed)
        #expect(transition.to == .open)
        #expect(transition.reason == .tripped)
        #expect(transition.openDuration == .seconds(30))
        #expect(transition.at == .seconds(3))
        #expect(machine.phase == .open(until: .seconds(33)))
        #expect(machine.openedAt == .seconds(3))
        #expect(machine.consecutiveTrips == 1)
    }

    @Test func aSuccessResetsTheRunOfFailures() throws {
        var machine = try Self.machine()
        try Self.call(&machine, Self.failure, at: .seconds(1))
        try Self.call(&machine, Self.failure, at: .seconds(2))
        try Self.call(&machine, .success, at: .seconds(3))
        #expect(machine.consecutiveFailures == 0)
        try Self.call(&machine, Self.failure, at: .seconds(4))
        try Self.call(&machine, Self.failure, at: .seconds(5))
        #expect(machine.state == .closed)
    }

    @Test func ignoredResultsNeitherCountNorBreakTheRun() throws {
        var machine = try Self.machine()
        try Self.call(&machine, Self.failure, at: .seconds(1))
        try Self.call(&machine, .ignored, at: .seconds(2))
        try Self.call(&machine, Self.failure, at: .seconds(3))
        #expect(machine.consecutiveFailures == 2)
        try Self.call(&machine, .ignored, at: .seconds(4))
        #expect(machine.state == .closed)
        try Self.call(&machine, Self.failure, at: .seconds(5))
        #expect(machine.state == .open)
    }

    // MARK: - Open

    @Test func openRejectsWithTheRemainingOpenTime() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .seconds(10))
        let (admission, transition) = machine.admit(at: .seconds(25))
        #expect(admission == .rejected(state: .open, retryAfter: .seconds(15)))
        #expect(transition == nil)
        let (last, _) = machine.admit(at: Self.seconds(39.999))
        #expect(last == .rejected(state: .open, retryAfter: .milliseconds(1)))
    }

    @Test func openTurnsHalfOpenWhenTheOpenTimeHasPassed() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .seconds(10))
        let generation = machine.generation
        let (admission, transition) = machine.admit(at: .seconds(40))
        guard case .permitted(let permit) = admission else {
            Issue.record("expected a probe, got \(admission)")
            return
        }
        #expect(permit.isProbe)
        #expect(permit.generation == generation + 1)
        #expect(transition?.from == .open)
        #expect(transition?.to == .halfOpen)
        #expect(transition?.reason == .openDurationElapsed)
        #expect(machine.state == .halfOpen)
    }

    @Test func advanceAloneTurnsAnExpiredOpenBreakerHalfOpen() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .zero)
        #expect(machine.advance(to: .seconds(29)) == nil)
        #expect(machine.state == .open)
        #expect(machine.advance(to: .seconds(30))?.to == .halfOpen)
        #expect(machine.probesInFlight == 0)
    }

    // MARK: - Half-open

    @Test func halfOpenAdmitsAtMostTheConfiguredProbes() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1), maximumProbes: 2)
        try Self.call(&machine, Self.failure, at: .zero)
        _ = try Self.permit(&machine, at: .seconds(30))
        _ = try Self.permit(&machine, at: .seconds(31))
        let (third, _) = machine.admit(at: .seconds(32))
        // The first probe's 60 s lease, taken at 30 s, runs out at 90 s: 58 s from now.
        #expect(third == .rejected(state: .halfOpen, retryAfter: .seconds(58)))
        #expect(machine.probesInFlight == 2)
    }

    @Test func theConfiguredNumberOfSuccessfulProbesClosesIt() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1), maximumProbes: 1, successesToClose: 3)
        try Self.call(&machine, Self.failure, at: .zero)
        #expect(try Self.call(&machine, .success, at: .seconds(30)) == nil)
        #expect(try Self.call(&machine, .success, at: .seconds(31)) == nil)
        #expect(machine.successfulProbes == 2)
        let transition = try #require(try Self.call(&machine, .success, at: .seconds(32)))
        #expect(transition.from == .halfOpen)
        #expect(transition.to == .closed)
        #expect(transition.reason == .probesSucceeded)
        #expect(machine.consecutiveTrips == 0)
        #expect(machine.openedAt == nil)
    }

    @Test func aFailedProbeReopensTheBreaker() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1), successesToClose: 2)
        try Self.call(&machine, Self.failure, at: .zero)
        try Self.call(&machine, .success, at: .seconds(30))
        let transition = try #require(try Self.call(&machine, Self.failure, at: .seconds(31)))
        #expect(transition.from == .halfOpen)
        #expect(transition.to == .open)
        #expect(transition.reason == .probeFailed)
        #expect(machine.phase == .open(until: .seconds(61)))
        #expect(machine.consecutiveTrips == 2)
    }

    @Test func anIgnoredProbeFreesItsSlotWithoutCounting() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .zero)
        #expect(try Self.call(&machine, .ignored, at: .seconds(30)) == nil)
        #expect(machine.state == .halfOpen)
        #expect(machine.probesInFlight == 0)
        #expect(try Self.call(&machine, .success, at: .seconds(31))?.to == .closed)
    }

    @Test func aProbeWhoseLeaseExpiredGivesItsSlotToTheNextCaller() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1), probeLease: .seconds(10))
        try Self.call(&machine, Self.failure, at: .zero)
        let hung = try Self.permit(&machine, at: .seconds(30))
        #expect(
            machine.admit(at: Self.seconds(39.999)).0 == .rejected(state: .halfOpen, retryAfter: .milliseconds(1)))
        let fresh = try Self.permit(&machine, at: .seconds(40))
        #expect(fresh.ticket != hung.ticket)
        // The hung probe's late failure no longer counts; the fresh probe decides.
        #expect(machine.record(Self.failure, for: hung, at: .seconds(41)) == nil)
        #expect(machine.state == .halfOpen)
        #expect(machine.record(.success, for: fresh, at: .seconds(42))?.to == .closed)
    }

    // MARK: - Generations

    @Test func aLateResultFromAnEarlierGenerationIsIgnored() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        let late = try Self.permit(&machine, at: .zero)
        try Self.call(&machine, Self.failure, at: .seconds(1))
        #expect(machine.phase == .open(until: .seconds(31)))
        // While open: it neither extends nor re-opens.
        #expect(machine.record(Self.failure, for: late, at: .seconds(2)) == nil)
        #expect(machine.phase == .open(until: .seconds(31)))
        // After recovery: it does not re-open the closed breaker.
        try Self.call(&machine, .success, at: .seconds(31))
        #expect(machine.state == .closed)
        #expect(machine.record(Self.failure, for: late, at: .seconds(32)) == nil)
        #expect(machine.state == .closed)
        #expect(machine.consecutiveFailures == 0)
    }

    @Test func everyTransitionStartsANewGeneration() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        var generations = [machine.generation]
        try Self.call(&machine, Self.failure, at: .zero)
        generations.append(machine.generation)
        _ = machine.advance(to: .seconds(30))
        generations.append(machine.generation)
        try Self.call(&machine, .success, at: .seconds(31))
        generations.append(machine.generation)
        _ = machine.isolate(at: .seconds(32))
        generations.append(machine.generation)
        _ = machine.reset(at: .seconds(33))
        generations.append(machine.generation)
        #expect(generations == [0, 1, 2, 3, 4, 5])
    }

    // MARK: - Open duration

    @Test func theOpenDurationGrowsWithConsecutiveTripsAndStartsOverAfterClosing() throws {
        var machine = try Self.machine(
            tripRule: .consecutiveFailures(1),
            openDuration: .growing(initial: .seconds(5), multiplier: 2, maximum: .seconds(40)))
        var now = Duration.zero
        var durations: [Duration?] = []
        durations.append(try Self.call(&machine, Self.failure, at: now)?.openDuration)
        for _ in 0..<4 {
            guard case .open(let until) = machine.phase else { break }
            now = until
            durations.append(try Self.call(&machine, Self.failure, at: now)?.openDuration)
        }
        #expect(durations == [.seconds(5), .seconds(10), .seconds(20), .seconds(40), .seconds(40)])
        #expect(machine.consecutiveTrips == 5)

        guard case .open(let until) = machine.phase else { return }
        try Self.call(&machine, .success, at: until)
        #expect(machine.state == .closed)
        #expect(try Self.call(&machine, Self.failure, at: until + .seconds(1))?.openDuration == .seconds(5))
    }

    @Test func openDurationScheduleNeverOverflows() {
        let growing = CircuitBreakerOpenDuration.growing(initial: .seconds(1), multiplier: 10, maximum: .seconds(600))
        #expect(growing.duration(forTrip: 1) == .seconds(1))
        #expect(growing.duration(forTrip: 3) == .seconds(100))
        #expect(growing.duration(forTrip: .max) == .seconds(600))
        #expect(CircuitBreakerOpenDuration.fixed(.seconds(7)).duration(forTrip: 1_000) == .seconds(7))
    }

    // MARK: - Manual controls

    @Test func isolateHoldsItOpenUntilReset() throws {
        var machine = try Self.machine()
        let isolated = machine.isolate(at: .seconds(1))
        let transition = try #require(isolated)
        #expect(transition.from == .closed)
        #expect(transition.to == .isolated)
        #expect(transition.reason == .isolated)
        #expect(machine.admit(at: .seconds(2)).0 == .rejected(state: .isolated, retryAfter: nil))
        #expect(machine.advance(to: .seconds(1_000_000)) == nil)
        #expect(machine.admit(at: .seconds(1_000_000)).0 == .rejected(state: .isolated, retryAfter: nil))
        #expect(machine.isolate(at: .seconds(1_000_001)) == nil)

        let resetTransition = machine.reset(at: .seconds(1_000_002))
        let reset = try #require(resetTransition)
        #expect(reset.from == .isolated)
        #expect(reset.to == .closed)
        #expect(reset.reason == .reset)
        #expect(try Self.call(&machine, .success, at: .seconds(1_000_003)) == nil)
    }

    @Test func isolateTakesOverFromOpenAndHalfOpen() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .zero)
        #expect(machine.isolate(at: .seconds(1))?.from == .open)
        #expect(machine.admit(at: .seconds(31)).0 == .rejected(state: .isolated, retryAfter: nil))

        _ = machine.reset(at: .seconds(32))
        try Self.call(&machine, Self.failure, at: .seconds(33))
        let probe = try Self.permit(&machine, at: .seconds(63))
        #expect(machine.isolate(at: .seconds(64))?.from == .halfOpen)
        #expect(machine.record(.success, for: probe, at: .seconds(65)) == nil)
        #expect(machine.state == .isolated)
    }

    @Test func resetClosesForgetsTripsAndIgnoresCallsInFlight() throws {
        var machine = try Self.machine(
            tripRule: .consecutiveFailures(2),
            openDuration: .growing(initial: .seconds(5), maximum: .seconds(60)))
        try Self.call(&machine, Self.failure, at: .zero)
        let inFlight = try Self.permit(&machine, at: .zero)
        // Reset while closed: no transition, but counts and calls in flight are forgotten.
        #expect(machine.reset(at: .seconds(1)) == nil)
        #expect(machine.consecutiveFailures == 0)
        #expect(machine.record(Self.failure, for: inFlight, at: .seconds(2)) == nil)
        #expect(machine.consecutiveFailures == 0)

        try Self.call(&machine, Self.failure, at: .seconds(3))
        try Self.call(&machine, Self.failure, at: .seconds(4))
        #expect(machine.consecutiveTrips == 1)
        #expect(machine.reset(at: .seconds(5))?.from == .open)
        #expect(machine.consecutiveTrips == 0)
        try Self.call(&machine, Self.failure, at: .seconds(6))
        #expect(try Self.call(&machine, Self.failure, at: .seconds(7))?.openDuration == .seconds(5))
    }

    // MARK: - Pushback

    @Test func pushbackOpensForTheHintBeforeTheRuleTrips() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(5))
        let transition = try #require(
            try Self.call(&machine, .failure(pushback: .seconds(5)), at: .seconds(10)))
        #expect(transition.reason == .pushback)
        #expect(transition.openDuration == .seconds(5))
        #expect(machine.phase == .open(until: .seconds(15)))
    }

    @Test func aTripWithALongerHintStaysOpenForTheHint() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        let tripped = try #require(try Self.call(&machine, .failure(pushback: .seconds(90)), at: .zero))
        #expect(tripped.reason == .tripped)
        #expect(tripped.openDuration == .seconds(90))

        var shortHint = try Self.machine(tripRule: .consecutiveFailures(1))
        #expect(try Self.call(&shortHint, .failure(pushback: .seconds(2)), at: .zero)?.openDuration == .seconds(30))
    }

    @Test func aProbeFailingWithAHintReopensForTheHint() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .zero)
        let transition = try #require(try Self.call(&machine, .failure(pushback: .seconds(120)), at: .seconds(30)))
        #expect(transition.reason == .probeFailed)
        #expect(transition.openDuration == .seconds(120))
    }

    // MARK: - Failure-rate rules

    @Test func countWindowTripsAtTheThresholdOnceItHoldsTheMinimumCalls() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(4)))
        try Self.call(&machine, Self.failure, at: .seconds(1))
        try Self.call(&machine, Self.failure, at: .seconds(2))
        try Self.call(&machine, .success, at: .seconds(3))
        #expect(machine.state == .closed)  // 2 of 3 failed, but fewer than 4 calls
        // 2 of 4 = 0.5: the success that completes the minimum meets the rule, and trips.
        let transition = try #require(try Self.call(&machine, .success, at: .seconds(4)))
        #expect(transition.reason == .tripped)
        #expect(transition.openDuration == .seconds(30))
        #expect(machine.phase == .open(until: .seconds(34)))
    }

    @Test func aSuccessThatCompletesTheMinimumCallsTripsWhenTheRateIsMet() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(10)))
        for second in 1...3 {
            #expect(try Self.call(&machine, Self.failure, at: .seconds(second)) == nil)
        }
        let transition = try #require(try Self.call(&machine, .success, at: .seconds(4)))  // 3 of 4 failed
        #expect(transition.from == .closed)
        #expect(transition.to == .open)
        #expect(transition.reason == .tripped)
        #expect(transition.at == .seconds(4))
        #expect(machine.consecutiveTrips == 1)
    }

    @Test func aSuccessThatLeavesTheRateBelowTheThresholdKeepsTheBreakerClosed() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(10)))
        #expect(try Self.call(&machine, Self.failure, at: .seconds(1)) == nil)
        for second in 2...6 {
            #expect(try Self.call(&machine, .success, at: .seconds(second)) == nil)
        }
        #expect(machine.state == .closed)
        #expect(machine.snapshot(name: "m", at: .seconds(6)).failureRate == 1.0 / 6.0)
    }

    @Test func aSuccessTripsWhenOlderSuccessesHaveLeftATimeWindow() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.6, minimumCalls: 3, window: .time(.seconds(10), buckets: 10)))
        try Self.call(&machine, .success, at: .zero)
        try Self.call(&machine, .success, at: .seconds(1))
        try Self.call(&machine, Self.failure, at: .seconds(5))
        #expect(try Self.call(&machine, Self.failure, at: .seconds(6)) == nil)  // 2 of 4
        // At 11.5 s both early successes have left the window: 2 failures of 3 calls.
        let transition = try #require(try Self.call(&machine, .success, at: Self.seconds(11.5)))
        #expect(transition.reason == .tripped)
    }

    @Test func aSuccessUnderTheConsecutiveRuleNeverTrips() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(2))
        try Self.call(&machine, Self.failure, at: .seconds(1))
        #expect(try Self.call(&machine, .success, at: .seconds(2)) == nil)
        #expect(machine.state == .closed)
    }

    @Test func countWindowSlidesSoOldFailuresLeave() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(4)))
        // F S S S: 1 of 4. Then F: the window is S S S F, still 1 of 4.
        for (second, result) in [Self.failure, .success, .success, .success, Self.failure].enumerated() {
            _ = try Self.call(&machine, result, at: .seconds(second))
        }
        let snapshot = machine.snapshot(name: "m", at: .seconds(5))
        #expect(snapshot.recentCalls == 4)
        #expect(snapshot.recentFailures == 1)
        #expect(snapshot.failureRate == 0.25)
        #expect(machine.state == .closed)
        // S S F F: 2 of 4.
        #expect(try Self.call(&machine, Self.failure, at: .seconds(6))?.reason == .tripped)
    }

    @Test func timeWindowForgetsCallsOlderThanItsSpan() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 2, window: .time(.seconds(10), buckets: 10)))
        try Self.call(&machine, Self.failure, at: .zero)
        // Eleven seconds later the first failure has left the window: one call, below the minimum.
        try Self.call(&machine, Self.failure, at: .seconds(11))
        #expect(machine.state == .closed)
        #expect(machine.snapshot(name: "m", at: .seconds(11)).recentCalls == 1)
        #expect(try Self.call(&machine, Self.failure, at: Self.seconds(11.5))?.reason == .tripped)
    }

    @Test func timeWindowCountsEveryBucketWithinTheSpan() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 10, window: .time(.seconds(10), buckets: 10)))
        for second in 0..<9 {
            try Self.call(&machine, second.isMultiple(of: 2) ? .success : Self.failure, at: .seconds(second))
        }
        let snapshot = machine.snapshot(name: "m", at: .seconds(9))
        #expect(snapshot.recentCalls == 9)
        #expect(snapshot.recentFailures == 4)
        #expect(try Self.call(&machine, Self.failure, at: .seconds(9))?.reason == .tripped)  // 5 of 10
    }

    @Test func timeWindowCountsCallsInTheSameBucketAfterAReset() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 10, window: .time(.seconds(10), buckets: 10)))
        try Self.call(&machine, .success, at: Self.seconds(1.1))
        try Self.call(&machine, Self.failure, at: Self.seconds(1.2))
        _ = machine.isolate(at: Self.seconds(1.3))
        _ = machine.reset(at: Self.seconds(1.4))
        // The bucket of 1 s..<2 s was emptied by the reset; calls still inside it count from zero.
        try Self.call(&machine, Self.failure, at: Self.seconds(1.5))
        try Self.call(&machine, .success, at: Self.seconds(1.6))
        try Self.call(&machine, .success, at: Self.seconds(1.7))
        let snapshot = machine.snapshot(name: "m", at: Self.seconds(1.8))
        #expect(snapshot.recentCalls == 3)
        #expect(snapshot.recentFailures == 1)
    }

    @Test func timeWindowMovesOnAtEachBucketBoundary() throws {
        var machine = try Self.machine(
            tripRule: .failureRate(threshold: 0.9, minimumCalls: 10, window: .time(.seconds(10), buckets: 10)))
        // One call just before and one at each of the boundaries 1 s, 2 s, ..., 12 s.
        for second in 1...12 {
            try Self.call(&machine, Self.failure, at: .seconds(second) - .nanoseconds(1))
            try Self.call(&machine, .success, at: .seconds(second))
        }
        // At 12 s the window holds the buckets 3 s..<4 s through 12 s..<13 s: the call at
        // 3 s - 1 ns belongs to the bucket 2 s..<3 s, which has left it.
        let snapshot = machine.snapshot(name: "m", at: .seconds(12))
        #expect(snapshot.recentCalls == 19)
        #expect(snapshot.recentFailures == 9)
    }

    // MARK: - Slow calls

    @Test func aSlowSuccessCountsAsAFailure() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(2), slowCallRule: .slowerThan(.seconds(2)))
        let fast = try Self.permit(&machine, at: .zero)
        #expect(machine.record(.success, for: fast, at: .seconds(2)) == nil)
        #expect(machine.consecutiveFailures == 0)
        let slow1 = try Self.permit(&machine, at: .seconds(10))
        let slow2 = try Self.permit(&machine, at: .seconds(10))
        #expect(machine.record(.success, for: slow1, at: Self.seconds(12.001)) == nil)
        #expect(machine.record(.success, for: slow2, at: .seconds(13))?.reason == .tripped)
    }

    @Test func aSlowProbeReopensTheBreaker() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(1)))
        try Self.call(&machine, Self.failure, at: .zero)
        let probe = try Self.permit(&machine, at: .seconds(30))
        #expect(machine.record(.success, for: probe, at: .seconds(32))?.reason == .probeFailed)
    }

    // MARK: - Time and the fast-path word

    @Test func anEarlierInstantThanOneSeenCountsAsTheLatest() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(1))
        try Self.call(&machine, Self.failure, at: .seconds(10))
        _ = machine.advance(to: .seconds(40))
        #expect(machine.state == .halfOpen)
        let (admission, transition) = machine.admit(at: .seconds(20))
        guard case .permitted(let probe) = admission else {
            Issue.record("a caller that read the clock earlier still finds it half-open, got \(admission)")
            return
        }
        #expect(transition == nil)
        #expect(probe.isProbe)
        #expect(machine.latest == .seconds(40))
    }

    @Test func theFastPathWordPublishesGenerationClosedAndPendingFailures() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(2))
        #expect(machine.fastPathWord == Machine.closedBit)
        try Self.call(&machine, Self.failure, at: .zero)
        #expect(machine.fastPathWord == Machine.closedBit | Machine.pendingFailuresBit)
        try Self.call(&machine, .success, at: .zero)
        #expect(machine.fastPathWord == Machine.closedBit)
        try Self.call(&machine, Self.failure, at: .zero)
        try Self.call(&machine, Self.failure, at: .zero)
        #expect(machine.fastPathWord == 1 << 2)  // generation 1, open
    }

    @Test func snapshotReportsStateCountsAndOpenTimes() throws {
        var machine = try Self.machine(tripRule: .consecutiveFailures(2))
        try Self.call(&machine, Self.failure, at: .seconds(1))
        var snapshot = machine.snapshot(name: "db", at: .seconds(1))
        #expect(snapshot.name == "db")
        #expect(snapshot.state == .closed)
        #expect(snapshot.consecutiveFailures == 1)
        #expect(snapshot.failureRate == nil)
        #expect(snapshot.openedAt == nil)
        try Self.call(&machine, Self.failure, at: .seconds(2))
        snapshot = machine.snapshot(name: "db", at: .seconds(12))
        #expect(snapshot.state == .open)
        #expect(snapshot.openedAt == .seconds(2))
        #expect(snapshot.remainingOpenTime == .seconds(20))
        #expect(snapshot.takenAt == .seconds(12))
        #expect(snapshot.consecutiveTrips == 1)
        #expect(snapshot.generation == 1)
    }
}
