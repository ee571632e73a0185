import Foundation
import Resilience
import ResilienceTesting
import Synchronization
import Testing

@Suite("Adaptive throttle")
struct AdaptiveThrottleTests {
    private func makeThrottle(
        clock: TestClock, multiplier: Double = 2, window: Duration = .seconds(120), floor: Int = 0, seed: UInt64 = 7
    ) throws -> AdaptiveThrottle {
        try AdaptiveThrottle(
            multiplier: multiplier, window: window, floor: floor, clock: clock,
            generator: SeededRandomNumberGenerator(seed: seed))
    }

    @Test func admitsEverythingWhileTheServerAcceptsEverything() throws {
        let throttle = try self.makeThrottle(clock: TestClock())
        for _ in 0..<1_000 {
            #expect(throttle.admit())
            throttle.recordAccepted()
        }
        #expect(throttle.rejectionProbability == 0)
        #expect(throttle.counts == (1_000, 1_000))
    }

    @Test func localRejectionsCountAsRequestsBesideAServerFailure() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock, multiplier: 1)
        for _ in 0..<1_000 { throttle.recordRejected() }
        var rejected = 0
        for _ in 0..<100 where !throttle.admit() { rejected += 1 }
        #expect(rejected > 90)
        #expect(throttle.counts == (1_000 + rejected, 0))
    }

    @Test func localRejectionsInASpanWithoutAServerFailureAreLeftOut() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock, multiplier: 1)
        for _ in 0..<1_000 { throttle.recordRejected() }
        // The next span (a twelfth of the window): the server has failed nothing in it yet.
        clock.advance(by: .seconds(10))
        var rejected = 0
        for _ in 0..<100 where !throttle.admit() { rejected += 1 }
        #expect(rejected > 90)
        #expect(throttle.counts == (1_000, 0))
        // One failure in this span brings its local rejections into the count.
        throttle.recordRejected()
        #expect(throttle.counts == (1_001 + rejected, 0))
    }

    /// A server that accepts one request a second, offered fifty: counting local rejections holds it near its
    /// capacity (counting only what was sent would let through about `sqrt(2 × 50)`, 10 a second).
    @Test func holdsAnOverloadedServerNearItsCapacity() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock, seed: 5)
        var credit = 0.0
        var sentInSecondHalf = 0
        let step = Duration.milliseconds(20)
        for tick in 0..<60_000 {  // 20 minutes
            clock.advance(by: step)
            credit = Swift.min(credit + 0.02, 1)
            guard throttle.admit() else { continue }
            if tick >= 30_000 { sentInSecondHalf += 1 }
            if credit >= 1 {
                credit -= 1
                throttle.recordAccepted()
            } else {
                throttle.recordRejected()
            }
        }
        let perSecond = Double(sentInSecondHalf) / 600
        #expect(perSecond > 0.5)
        #expect(perSecond < 3)
    }

    @Test func rejectionProbabilityFollowsTheFormula() throws {
        let throttle = try self.makeThrottle(clock: TestClock())
        for _ in 0..<10 { throttle.recordAccepted() }
        for _ in 0..<30 { throttle.recordRejected() }
        // requests 40, accepts 10: (40 - 2 * 10) / 41
        #expect(abs(throttle.rejectionProbability - 20.0 / 41.0) < 1e-12)
    }

    @Test func floorToleratesRequestsBeforeRejecting() throws {
        let throttle = try self.makeThrottle(clock: TestClock(), floor: 5)
        for _ in 0..<5 { throttle.recordRejected() }
        #expect(throttle.rejectionProbability == 0)
        throttle.recordRejected()
        #expect(abs(throttle.rejectionProbability - 1.0 / 7.0) < 1e-12)
    }

    @Test func deadServerSeesOnlyATrickle() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock)
        var sent = 0
        for _ in 0..<2_000 {
            clock.advance(by: .milliseconds(50))
            if throttle.admit() {
                sent += 1
                throttle.recordRejected()
            }
        }
        // 2,000 requests in 100 s against a server that accepts none: at most a tenth reach it.
        #expect(sent < 200)
        #expect(sent > 0)
    }

    @Test func recoversOnceTheServerAcceptsAgain() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock, window: .seconds(10))
        for _ in 0..<500 {
            clock.advance(by: .milliseconds(20))
            if throttle.admit() { throttle.recordRejected() }
        }
        #expect(throttle.rejectionProbability > 0.9)
        // The server is back: every admitted request is accepted; within one window traffic is full again.
        for _ in 0..<500 {
            clock.advance(by: .milliseconds(20))
            if throttle.admit() { throttle.recordAccepted() }
        }
        #expect(throttle.rejectionProbability == 0)
    }

    @Test func forwardClockJumpAgesOutTheWindow() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock)
        for _ in 0..<100 { throttle.recordRejected() }
        #expect(throttle.rejectionProbability > 0.9)
        clock.advance(by: .seconds(121))
        #expect(throttle.rejectionProbability == 0)
        #expect(throttle.counts == (0, 0))
        #expect(throttle.admit())
    }

    @Test func backwardClockJumpKeepsTheWindowWhereItWas() throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock)
        clock.advance(by: .seconds(300))
        for _ in 0..<100 { throttle.recordRejected() }
        clock.rewind(by: .seconds(200))
        // The counts stay: time does not run back for the window.
        #expect(throttle.counts == (100, 0))
        throttle.recordRejected()
        #expect(throttle.counts == (101, 0))
        clock.advance(by: .seconds(200 + 121))
        #expect(throttle.counts == (0, 0))
    }

    @Test func sameSeedGivesTheSameDecisions() throws {
        func decisions() throws -> [Bool] {
            let throttle = try self.makeThrottle(clock: TestClock(), seed: 42)
            for _ in 0..<10 { throttle.recordRejected() }
            return (0..<50).map { _ in throttle.admit() }
        }
        let first = try decisions()
        #expect(first == (try decisions()))
        #expect(first.contains(true) && first.contains(false))
    }

    @Test func executeRejectsLocallyWithAnErrorThatSaysNotSent() async throws {
        let throttle = try self.makeThrottle(clock: TestClock(), multiplier: 1, seed: 1)
        for _ in 0..<10_000 { throttle.recordRejected() }
        let ran = Counter()
        var rejections = 0
        for _ in 0..<20 {
            do {
                try await throttle.execute { _ = ran.increment() }
            } catch let error as AdaptiveThrottleRejection {
                rejections += 1
                #expect(FailureAnalysis(error).delivery == .notSent)
            }
        }
        #expect(rejections >= 19)
        #expect(ran.value + rejections == 20)
    }

    @Test func executeCountsFailuresByWhatTheServerDid() async throws {
        let throttle = try self.makeThrottle(clock: TestClock())
        _ = try? await throttle.execute { throw HTTPResponseError(statusCode: 404) }
        _ = try? await throttle.execute { throw HTTPResponseError(statusCode: 503) }
        _ = try? await throttle.execute { throw HTTPResponseError(statusCode: 429) }
        #expect(throttle.counts == (3, 1))
    }

    @Test func aBreakersLocalRejectionIsNotCounted() async throws {
        let clock = TestClock()
        let throttle = try self.makeThrottle(clock: clock, floor: 10)
        let breaker = try CircuitBreaker(name: "api", tripRule: .consecutiveFailures(1), clock: clock)
        _ = try? await throttle.execute { try await breaker.execute { throw HTTPResponseError(statusCode: 503) } }
        _ = try? await throttle.execute { try await breaker.execute {} }
        #expect(throttle.counts == (1, 0))
    }

    /// A breaker's, another throttle's or a limiter's rejection reached no server, in whatever
    /// shape it arrives: wrapped in an app's error, under `NSUnderlyingErrorKey`, bridged.
    @Test(arguments: LibraryErrorShape.allCases)
    func aLocalRejectionAnywhereInTheChainIsNotRecorded(shape: LibraryErrorShape) throws {
        let rejections: [any Error] = [
            CircuitBreakerOpenError(breakerName: "api", state: .open, retryAfter: .seconds(5)),
            CircuitBreakerOpenError(breakerName: "api", state: .isolated, retryAfter: nil),
            AdaptiveThrottleRejection(rejectionProbability: 0.9),
            LimiterRejectionError(limiterName: "uploads", reason: .queueFull),
        ]
        for rejection in rejections {
            let throttle = try self.makeThrottle(clock: TestClock())
            throttle.record(shape.wrap(rejection))
            #expect(throttle.counts == (0, 0), "\(shape): \(rejection)")
        }
        // The same shapes around a server's failure are recorded.
        let throttle = try self.makeThrottle(clock: TestClock())
        throttle.record(shape.wrap(HTTPResponseError(statusCode: 503)))
        #expect(throttle.counts == (1, 0), "\(shape)")
    }

    @Test func callerCancellationIsNotCounted() async throws {
        let throttle = try self.makeThrottle(clock: TestClock())
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await throttle.execute { throw CancellationError() }
        }
        _ = await task.result
        #expect(throttle.counts == (0, 0))
    }

    @Test func retryPolicyStopsAtALocalRejection() async throws {
        let throttle = try self.makeThrottle(clock: TestClock(), multiplier: 1, seed: 3)
        for _ in 0..<10_000 { throttle.recordRejected() }
        let policy = try RetryPolicy(maximumAttempts: 5, clock: TestClock())
        var outcome = await policy.outcome { try await throttle.execute {} }
        for _ in 0..<5 where outcome.stopReason == .succeeded {
            outcome = await policy.outcome { try await throttle.execute {} }
        }
        #expect(outcome.stopReason == .throttled)
        #expect(outcome.attempts == 1)
    }

    /// The injected generator is user code: the throttle holds no lock while it runs, so a
    /// generator that asks the throttle again, from its own thread or another, is answered.
    ///
    /// The probe asks from another thread and waits for the answer at most a bounded time,
    /// which a lock held across the draw would use up (the other thread then finishes once the
    /// draw returns); only when that answer came does it ask again from its own thread, which
    /// would deadlock on such a lock.
    @Test func theGeneratorRunsWithNoLockOfTheThrottleHeld() throws {
        let probe = ReentrantProbe()
        let throttle = try AdaptiveThrottle(
            clock: TestClock(), generator: ProbingGenerator(probe: probe, base: SeededRandomNumberGenerator(seed: 5)))
        probe.throttle.withLock { $0 = throttle }
        for _ in 0..<10 { throttle.recordRejected() }
        for _ in 0..<20 { _ = throttle.admit() }
        let (draws, fromAnotherThread, fromItsOwnThread) = probe.results.withLock { ($0.draws, $0.other, $0.own) }
        #expect(draws == 20, "the calls back into the throttle drew from the system's generator")
        #expect(fromAnotherThread == 20, "another thread's admit() was answered during every draw")
        #expect(fromItsOwnThread == 20, "a reentrant admit() was answered during every draw")
    }

    /// Drawing outside the lock changes nothing for one caller at a time: the decisions are the
    /// injected generator's, as when it was drawn under the lock.
    @Test func oneCallerAtATimeDrawsTheInjectedGeneratorsSequence() throws {
        let throttle = try self.makeThrottle(clock: TestClock(), seed: 42)
        for _ in 0..<10 { throttle.recordRejected() }
        var reference = SeededRandomNumberGenerator(seed: 42)
        for index in 0..<200 {
            let probability = throttle.rejectionProbability
            let expected = Double.random(in: 0..<1, using: &reference) >= probability
            #expect(throttle.admit() == expected, "decision \(index)")
        }
    }

    @Test(arguments: [
        (0.5, Duration.seconds(1), 0, "multiplier"), (.nan, .seconds(1), 0, "multiplier"),
        (2, .zero, 0, "window"), (2, .seconds(1), -1, "floor"),
    ])
    func rejectsInvalidSettings(multiplier: Double, window: Duration, floor: Int, setting: String) {
        #expect(throws: ConfigurationError.self) {
            try AdaptiveThrottle(multiplier: multiplier, window: window, floor: floor, clock: TestClock())
        }
        do {
            _ = try AdaptiveThrottle(multiplier: multiplier, window: window, floor: floor, clock: TestClock())
        } catch {
            #expect(error.setting == setting)
        }
    }

    @Test func concurrentRecordingLosesNoCount() async throws {
        let throttle = try self.makeThrottle(clock: TestClock())
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for _ in 0..<1_000 {
                        if task.isMultiple(of: 2) { throttle.recordAccepted() } else { throttle.recordRejected() }
                    }
                }
            }
        }
        #expect(throttle.counts == (8_000, 4_000))
    }
}

@Suite("Adaptive throttle as a pipeline stage")
struct AdaptiveThrottleStageTests {
    @Test func aPipelineStageRejectsLocallyOnceTheServerKeepsFailing() async throws {
        let clock = TestClock()
        let throttle = try AdaptiveThrottle(clock: clock, generator: SeededRandomNumberGenerator(seed: 3))
        let pipeline = ResiliencePipeline { throttle }
        let reached = Counter()
        var rejected = 0
        for _ in 0..<200 {
            do {
                _ = try await pipeline.execute { () throws -> Int in
                    reached.increment()
                    throw HTTPResponseError(statusCode: 503)
                }
            } catch is AdaptiveThrottleRejection {
                rejected += 1
            } catch {}
        }
        #expect(rejected > 100, "a dead server should see a trickle, not every request")
        #expect(reached.value + rejected == 200)
        let analysis = FailureAnalysis(AdaptiveThrottleRejection(rejectionProbability: 0.9))
        #expect(analysis.delivery == .notSent)
    }
}

/// What ``ProbingGenerator`` saw: its draws, and how many calls back into the throttle were answered.
final class ReentrantProbe: Sendable {
    struct Results {
        var draws = 0
        var other = 0
        var own = 0
        var probing = false
        /// Set once an answer did not come in time: later draws are not probed.
        var gaveUp = false
    }

    let throttle = Mutex<AdaptiveThrottle?>(nil)
    let results = Mutex(Results())

    /// Asks the throttle from another thread, waiting a bounded time, then from this thread.
    func check() {
        let skip = self.results.withLock { results -> Bool in
            results.draws += 1
            if results.probing || results.gaveUp { return true }
            results.probing = true
            return false
        }
        // A draw made by the probe's own call to the throttle is not probed again.
        guard !skip, let throttle = self.throttle.withLock({ $0 }) else { return }
        defer { self.results.withLock { $0.probing = false } }
        let answered = DispatchSemaphore(value: 0)
        Thread {
            _ = throttle.admit()
            answered.signal()
        }.start()
        guard answered.wait(timeout: .now() + .seconds(5)) == .success else {
            self.results.withLock { $0.gaveUp = true }
            return
        }
        self.results.withLock { $0.other += 1 }
        _ = throttle.admit()
        self.results.withLock { $0.own += 1 }
    }
}

/// A generator whose every draw calls back into the throttle it decides for.
struct ProbingGenerator: RandomNumberGenerator, Sendable {
    let probe: ReentrantProbe
    var base: SeededRandomNumberGenerator

    mutating func next() -> UInt64 {
        self.probe.check()
        return self.base.next()
    }
}
