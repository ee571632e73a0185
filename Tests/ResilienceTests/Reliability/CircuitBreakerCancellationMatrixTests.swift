import Resilience
import ResilienceTesting
import Testing

extension CircuitBreakerReliability {
    /// Cancellation at every point a call through a ``CircuitBreaker`` can wait, alone and
    /// nested with a ``RetryPolicy``: during a half-open probe, while the policy waits on the
    /// breaker's rejection hint, before the call (whose first attempt still runs, as a bare
    /// call's would), and during an attempt while closed. In each: the call returns without
    /// the test clock moving, no further attempt starts, a probe slot taken comes back
    /// without a transition, and the cancellation is never counted as a failure.
    @Suite("Circuit breaker cancellation matrix", .timeLimit(.minutes(5)))
    struct CancellationMatrixTests {
        /// Where a probe waits when it is cancelled.
        enum ProbeWait: String, Sendable, CaseIterable {
            /// Asleep on the test clock inside the operation.
            case clockSleep
            /// Suspended on a continuation inside the operation, resumed by its cancellation handler.
            case continuation
            /// In a retry policy's backoff, inside the breaker, after a failed first attempt.
            case policyBackoffInsideTheBreaker
        }

        /// How the caller enters.
        enum Entry: String, Sendable, CaseIterable {
            /// `breaker.execute { ... }`
            case breaker
            /// `policy.outcome { breaker.execute { ... } }`
            case retryAroundBreakerOutcome
            /// `policy.execute { breaker.execute { ... } }`
            case retryAroundBreakerExecute
        }

        struct ProbeCase: Sendable, CustomTestStringConvertible {
            var wait: ProbeWait
            var entry: Entry
            var testDescription: String { "\(self.wait.rawValue) via \(self.entry.rawValue)" }
        }

        static let probeCases: [ProbeCase] =
            [ProbeWait.clockSleep, .continuation].flatMap { wait in
                Entry.allCases.map { ProbeCase(wait: wait, entry: $0) }
            } + [ProbeCase(wait: .policyBackoffInsideTheBreaker, entry: .breaker)]

        @Test("Cancelling a half-open probe gives its slot to the next caller", arguments: probeCases)
        func cancellingAHalfOpenProbeGivesItsSlotToTheNextCaller(_ probeCase: ProbeCase) async throws {
            let fixture = try MatrixFixture(maximumProbes: 1)
            let halfOpen = try await fixture.tripAndWaitOut()
            let operationRuns = Counter()
            let parking = MatrixParking()

            let probe = Task {
                await fixture.call(probeCase.entry) {
                    operationRuns.increment()
                    switch probeCase.wait {
                    case .clockSleep:
                        try await fixture.clock.sleep(for: .seconds(3_600))
                    case .continuation:
                        try await parking.park()
                    case .policyBackoffInsideTheBreaker:
                        try await fixture.innerPolicy.execute {
                            if operationRuns.value == 1 { throw ServiceFailure() }
                            operationRuns.increment()
                        }
                    }
                    return "unreachable"
                }
            }
            switch probeCase.wait {
            case .clockSleep, .policyBackoffInsideTheBreaker: await fixture.clock.waitForSleepers(count: 1)
            case .continuation: await parking.waitForParked(count: 1)
            }
            #expect(fixture.breaker.snapshot().probesInFlight == 1)
            // The one slot is taken: another caller is turned away.
            await #expect(throws: CircuitBreakerOpenError.self) { try await fixture.breaker.execute { "crowded" } }

            probe.cancel()
            let ending = await probe.value
            #expect(ending.isCancellation, "\(ending)")
            #expect(operationRuns.value == 1, "no further attempt after the cancellation")
            #expect(fixture.clock.now.offset == halfOpen.takenAt, "returned without the clock moving")
            let after = fixture.breaker.snapshot()
            #expect(after.state == .halfOpen)
            #expect(after.generation == halfOpen.generation, "the slot came back without a transition")
            #expect(after.probesInFlight == 0)
            #expect(after.successfulProbes == 0)

            // The next caller probes, and its success closes the breaker.
            #expect(try await fixture.breaker.execute { "next probe" } == "next probe")
            #expect(fixture.breaker.state == .closed)
            #expect(fixture.observer.transitions == ["closed->open", "open->halfOpen", "halfOpen->closed"])
        }

        @Test("Cancelling one of two probes frees exactly one slot while the other keeps running")
        func cancellingOneOfTwoProbesFreesExactlyOneSlot() async throws {
            let fixture = try MatrixFixture(maximumProbes: 2, successesToClose: 2)
            let halfOpen = try await fixture.tripAndWaitOut()
            let first = Task { try await fixture.breaker.execute { try await fixture.clock.sleep(for: .seconds(60)) } }
            let second = Task { try await fixture.breaker.execute { try await fixture.clock.sleep(for: .seconds(60)) } }
            await fixture.clock.waitForSleepers(count: 2)
            #expect(fixture.breaker.snapshot().probesInFlight == 2)

            first.cancel()
            await #expect(throws: CancellationError.self) { try await first.value }
            // Required: with the slot still taken, the third caller below would never get to sleep.
            try #require(fixture.breaker.snapshot().probesInFlight == 1)
            // One new caller fits in the freed slot; a second does not.
            let third = Task { try await fixture.breaker.execute { try await fixture.clock.sleep(for: .seconds(60)) } }
            await fixture.clock.waitForSleepers(count: 2)
            #expect(fixture.breaker.snapshot().probesInFlight == 2)
            await #expect(throws: CircuitBreakerOpenError.self) { try await fixture.breaker.execute { "crowded" } }

            fixture.clock.advance(by: .seconds(60))
            try await second.value
            try await third.value
            #expect(fixture.breaker.state == .closed)
            #expect(fixture.breaker.snapshot().generation == halfOpen.generation + 1)
        }

        @Test(
            "Cancelling while the policy waits out the breaker's open time stops at once, without another attempt",
            arguments: [Entry.retryAroundBreakerOutcome, .retryAroundBreakerExecute])
        func cancellingWhileThePolicyWaitsOnTheBreakersHintStopsAtOnce(_ entry: Entry) async throws {
            let fixture = try MatrixFixture(maximumProbes: 1)
            await fixture.breaker.fail()
            let opened = fixture.breaker.snapshot()
            #expect(opened.state == .open)
            let operationRuns = Counter()

            let call = Task {
                await fixture.call(entry) {
                    operationRuns.increment()
                    return "unreachable"
                }
            }
            // The first attempt is rejected; the policy waits the 30 seconds the rejection carries.
            await fixture.clock.waitForSleepers(count: 1)
            #expect(fixture.clock.sleepRequests == [.seconds(30)])
            call.cancel()
            let ending = await call.value
            #expect(ending.isCancellation, "\(ending)")
            if entry == .retryAroundBreakerOutcome {
                #expect(ending.attempts == 1)
                #expect(ending.stopReason == .cancelled)
            }
            #expect(operationRuns.value == 0)
            #expect(fixture.observer.rejections.count == 1, "no further attempt reached the breaker")
            #expect(fixture.clock.now.offset == opened.takenAt, "returned without the clock moving")
            #expect(fixture.clock.sleeperCount == 0)
            #expect(fixture.breaker.snapshot().remainingOpenTime == .seconds(30))
        }

        @Test(
            "Cancelling while the policy backs off from a full half-open breaker leaves the running probe alone",
            arguments: [Entry.retryAroundBreakerOutcome, .retryAroundBreakerExecute])
        func cancellingWhileBackingOffFromAFullHalfOpenBreakerLeavesTheProbeAlone(_ entry: Entry) async throws {
            let fixture = try MatrixFixture(maximumProbes: 1, probeLease: .seconds(50))
            let halfOpen = try await fixture.tripAndWaitOut()
            let parking = MatrixParking()
            let probe = Task { try await fixture.breaker.execute { try await parking.park() } }
            await parking.waitForParked(count: 1)

            // The one slot is taken, so the next caller is turned away (checked first, so that a
            // breaker letting it in fails here instead of leaving the test waiting for a sleep).
            let crowded = await #expect(throws: CircuitBreakerOpenError.self) {
                try await fixture.breaker.execute { "crowded" }
            }
            try #require(crowded?.state == .halfOpen)

            // Rejected as half-open, with the time until the probe's 50-second lease runs out
            // as its hint: the policy waits that long rather than its own 2-second backoff.
            let call = Task { await fixture.call(entry) { "unreachable" } }
            await fixture.clock.waitForSleepers(count: 1)
            #expect(fixture.clock.sleepRequests == [.seconds(50)])
            call.cancel()
            let ending = await call.value
            #expect(ending.isCancellation, "\(ending)")
            #expect(fixture.observer.rejections.count == 2)
            #expect(fixture.observer.rejections.allSatisfy { $0.state == .halfOpen })
            let during = fixture.breaker.snapshot()
            #expect(during.generation == halfOpen.generation)
            #expect(during.probesInFlight == 1, "the running probe keeps its slot")

            parking.resumeAll()
            try await probe.value
            #expect(fixture.breaker.state == .closed)
        }

        @Test(
            "A task cancelled before the call runs its first attempt as a bare call would, and its failure is not counted",
            arguments: Entry.allCases)
        func aCancelledTaskRunsTheFirstAttemptAndItsFailureIsNotCounted(_ entry: Entry) async throws {
            let fixture = try MatrixFixture(maximumProbes: 1)
            let halfOpen = try await fixture.tripAndWaitOut()
            let operationRuns = Counter()
            let ending = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await fixture.call(entry) {
                    operationRuns.increment()
                    throw ServiceFailure()
                }
            }.value
            #expect(operationRuns.value == 1, "the first attempt runs, and no retry follows")
            #expect(throws: ServiceFailure.self) { try ending.result.get() }
            if entry == .retryAroundBreakerOutcome {
                #expect(ending.attempts == 1)
                #expect(ending.stopReason == .cancelled)
            }
            #expect(fixture.observer.rejections.isEmpty)
            let after = fixture.breaker.snapshot()
            #expect(after.generation == halfOpen.generation, "the cancelled probe's failure did not re-open it")
            #expect(after.probesInFlight == 0)
            #expect(fixture.clock.sleepRequests.isEmpty)
        }

        @Test("A breaker and a policy treat a task cancelled before the call alike: the operation runs once")
        func theBreakerAndThePolicyAgreeOnAnAlreadyCancelledTask() async throws {
            let fixture = try MatrixFixture(maximumProbes: 1)
            let runs = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                let bare = Counter()
                let throughPolicy = Counter()
                let throughBreaker = Counter()
                _ = try? await { () async throws -> String in
                    bare.increment()
                    return "bare"
                }()
                _ = try? await fixture.innerPolicy.execute { () async throws -> String in
                    throughPolicy.increment()
                    return "policy"
                }
                _ = try? await fixture.breaker.execute { () async throws -> String in
                    throughBreaker.increment()
                    return "breaker"
                }
                return [bare.value, throughPolicy.value, throughBreaker.value]
            }.value
            #expect(runs == [1, 1, 1])
        }

        @Test("A breaker around a policy, called from a cancelled task, runs the attempt once as its probe")
        func aBreakerAroundAPolicyInACancelledTaskRunsTheAttemptOnce() async throws {
            let fixture = try MatrixFixture(maximumProbes: 1)
            _ = try await fixture.tripAndWaitOut()
            let operationRuns = Counter()
            let result = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await Result {
                    try await fixture.breaker.execute {
                        try await fixture.innerPolicy.execute { () async throws -> String in
                            operationRuns.increment()
                            return "probed"
                        }
                    }
                }
            }.value
            #expect(try result.get() == "probed")
            #expect(operationRuns.value == 1)
            #expect(fixture.breaker.state == .closed, "the probe's success closed the breaker")
        }

        /// How a cancelled attempt in the closed state ends.
        enum ClosedAttemptEnding: String, Sendable, CaseIterable {
            /// The operation's sleep throws `CancellationError`.
            case throwsCancellationError
            /// The operation turns the cancellation into an error that would otherwise count,
            /// as networking libraries do.
            case throwsCountedErrorOnceCancelled
        }

        @Test(
            "Cancelling an attempt while closed is not counted as a failure, through the breaker or a policy around it",
            arguments: ClosedAttemptEnding.allCases, [Entry.breaker, .retryAroundBreakerOutcome])
        func cancellingAnAttemptWhileClosedIsNotCounted(_ ending: ClosedAttemptEnding, _ entry: Entry) async throws {
            let fixture = try MatrixFixture(
                maximumProbes: 1,
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 1, window: .time(.seconds(60))))
            let operationRuns = Counter()
            let call = Task {
                await fixture.call(entry) {
                    operationRuns.increment()
                    do {
                        try await fixture.clock.sleep(for: .seconds(60))
                    } catch {
                        if ending == .throwsCountedErrorOnceCancelled { throw ServiceFailure() }
                        throw error
                    }
                    return "unreachable"
                }
            }
            await fixture.clock.waitForSleepers(count: 1)
            call.cancel()
            let result = await call.value
            if entry == .retryAroundBreakerOutcome {
                #expect(result.stopReason == .cancelled)
                #expect(result.attempts == 1)
            }
            #expect(operationRuns.value == 1)
            let after = fixture.breaker.snapshot()
            #expect(after.state == .closed, "a minimum of one call at a 50% threshold would have tripped")
            #expect(after.recentCalls == 0, "a cancelled call does not enter the window")
            #expect(after.consecutiveFailures == 0)
            #expect(fixture.observer.changes.isEmpty)
            // A real failure is still counted, and trips the breaker.
            await fixture.breaker.fail()
            #expect(fixture.breaker.state == .open)
        }

        @Test("A cancelled call neither breaks nor extends a run of consecutive failures")
        func aCancelledCallNeitherBreaksNorExtendsARunOfFailures() async throws {
            let fixture = try MatrixFixture(maximumProbes: 1, tripRule: .consecutiveFailures(3))
            await fixture.breaker.fail()
            await fixture.breaker.fail()
            let ending = await Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await Result { try await fixture.breaker.execute { throw ServiceFailure() } }
            }.value
            #expect(throws: ServiceFailure.self) { try ending.get() }
            #expect(fixture.breaker.snapshot().consecutiveFailures == 2)
            #expect(fixture.breaker.state == .closed)
            await fixture.breaker.fail()
            #expect(fixture.breaker.state == .open)
        }

        @Test("Concurrent first uses of a registry key from many tasks share one breaker, and lose no result")
        func concurrentFirstUsesOfAKeyShareOneBreaker() async throws {
            let keys = ["alpha", "beta", "gamma", "delta"]
            let tasksPerKey = 250
            let made = Lock<[String: Int]>([:])
            let clock = TestClock()
            let configuration = try CircuitBreakerConfiguration(tripRule: .consecutiveFailures(1_000_000))
            let registry = try CircuitBreakerRegistry<String>(maximumCount: 16) { key in
                made.withLock { $0[key, default: 0] += 1 }
                return CircuitBreaker(name: key, configuration: configuration, clock: clock)
            }
            let gate = StartingGate()
            let handed = await withTaskGroup(of: (String, CircuitBreaker).self) { group in
                for index in 0..<(keys.count * tasksPerKey) {
                    group.addTask {
                        let key = keys[index % keys.count]
                        await gate.wait()
                        let breaker = registry.breaker(for: key)
                        // Every task's failure must land on the one breaker the registry keeps.
                        await breaker.fail()
                        return (key, breaker)
                    }
                }
                gate.open()
                var handed: [(String, CircuitBreaker)] = []
                for await pair in group { handed.append(pair) }
                return handed
            }
            #expect(handed.count == keys.count * tasksPerKey)
            #expect(registry.count == keys.count)
            for key in keys {
                let kept = try #require(registry.existingBreaker(for: key))
                let forKey = handed.filter { $0.0 == key }.map(\.1)
                #expect(forKey.count == tasksPerKey)
                #expect(forKey.allSatisfy { $0 === kept }, "\(key) was handed more than one breaker")
                #expect(kept.snapshot().consecutiveFailures == tasksPerKey, "\(key) lost a failure")
                #expect(registry.breaker(for: key) === kept)
            }
            // Racing first uses may make a spare breaker, but never hand one out.
            #expect(made.withLock { $0.keys.sorted() } == keys.sorted())
        }
    }
}

// MARK: - Fixture

/// How one call through the matrix ended.
private struct MatrixEnding: Sendable, CustomStringConvertible {
    var result: Result<String, any Error>
    var attempts: Int?
    var stopReason: RetryStopReason?

    /// Whether the call ended as cancelled: a `CancellationError`, or a `cancelled` stop reason.
    var isCancellation: Bool {
        if self.stopReason == .cancelled { return true }
        if case .failure(let error) = self.result { return error is CancellationError }
        return false
    }

    var description: String {
        "\(self.result), attempts \(String(describing: self.attempts)), stop \(String(describing: self.stopReason))"
    }
}

/// A breaker that opens on one failure for 30 s, a policy around it, and a policy for inside it.
private struct MatrixFixture: Sendable {
    let clock = TestClock()
    let observer = RecordingBreakerObserver()
    let breaker: CircuitBreaker
    /// Goes around the breaker: waits out open times up to 60 s, backs off 2 s otherwise.
    let outerPolicy: RetryPolicy
    /// Goes inside the breaker: retries after 5 s.
    let innerPolicy: RetryPolicy

    init(
        maximumProbes: Int,
        successesToClose: Int = 1,
        tripRule: CircuitBreakerTripRule = .consecutiveFailures(1),
        probeLease: Duration = .seconds(3_600)
    ) throws {
        self.breaker = try CircuitBreaker(
            name: "matrix", tripRule: tripRule, openDuration: .fixed(.seconds(30)), maximumProbes: maximumProbes,
            successesToClose: successesToClose, probeLease: probeLease, observer: self.observer,
            clock: self.clock)
        self.outerPolicy = try RetryPolicy(
            maximumAttempts: 5, backoff: .constant(.seconds(2)), jitter: .none, maximumRetryAfter: .seconds(60),
            clock: self.clock)
        self.innerPolicy = try RetryPolicy(
            maximumAttempts: 5, backoff: .constant(.seconds(5)), jitter: .none, clock: self.clock)
    }

    /// Trips the breaker and waits out its open time; returns the half-open snapshot.
    func tripAndWaitOut() async throws -> CircuitBreakerSnapshot {
        await self.breaker.fail()
        #expect(self.breaker.state == .open)
        self.clock.advance(by: .seconds(30))
        let snapshot = self.breaker.snapshot()
        try #require(snapshot.state == .halfOpen)
        return snapshot
    }

    /// Runs `operation` through the breaker, entered as `entry` says.
    func call(_ entry: CircuitBreakerReliability.CancellationMatrixTests.Entry, operation: () async throws -> String)
        async -> MatrixEnding
    {
        switch entry {
        case .breaker:
            return MatrixEnding(result: await Result { try await self.breaker.execute(operation: operation) })
        case .retryAroundBreakerOutcome:
            let outcome = await self.outerPolicy.outcome { try await self.breaker.execute(operation: operation) }
            return MatrixEnding(result: outcome.result, attempts: outcome.attempts, stopReason: outcome.stopReason)
        case .retryAroundBreakerExecute:
            return MatrixEnding(
                result: await Result {
                    try await self.outerPolicy.execute { try await self.breaker.execute(operation: operation) }
                })
        }
    }
}

/// Parks tasks on continuations; a parked task's cancellation resumes it with `CancellationError`.
private final class MatrixParking: Sendable {
    private struct State {
        var nextID = 0
        var parked: [Int: CheckedContinuation<Void, any Error>] = [:]
        var cancelledEarly: Set<Int> = []
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Lock(State())

    func park() async throws {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (cancelled, ready) = self.state.withLock { state in
                    if state.cancelledEarly.remove(id) != nil { return (true, [CheckedContinuation<Void, Never>]()) }
                    state.parked[id] = continuation
                    let count = state.parked.count
                    let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
                    state.waiters.removeAll { $0.count <= count }
                    return (false, ready)
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
                for waiter in ready { waiter.resume() }
            }
        } onCancel: {
            let continuation = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
                if let continuation = state.parked.removeValue(forKey: id) { return continuation }
                state.cancelledEarly.insert(id)
                return nil
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Returns once `count` tasks are parked.
    func waitForParked(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state in
                if state.parked.count >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Lets every parked task go on.
    func resumeAll() {
        let parked = self.state.withLock { state in
            defer { state.parked = [:] }
            return Array(state.parked.values)
        }
        for continuation in parked { continuation.resume() }
    }
}
