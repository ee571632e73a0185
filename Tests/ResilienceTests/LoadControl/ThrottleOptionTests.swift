import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite("Adaptive throttling as an option of policies and breakers")
struct ThrottleOptionTests {
    /// A throttle; `floor` lets a test's few failures through without any rejection.
    private func throttle(
        clock: TestClock, multiplier: Double = 2, floor: Int = 0, seed: UInt64 = 7
    ) throws -> AdaptiveThrottle {
        try AdaptiveThrottle(
            multiplier: multiplier, window: .seconds(120), floor: floor, clock: clock,
            generator: SeededRandomNumberGenerator(seed: seed))
    }

    private func policy(
        throttle: AdaptiveThrottle?, attempts: Int = 3, budget: RetryBudget? = nil, clock: TestClock
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: attempts, backoff: .constant(.milliseconds(10)), jitter: .none, budget: budget,
            throttle: throttle, clock: clock)
    }

    // MARK: - RetryPolicy

    @Test func aPolicyCountsEveryAttemptItSendsAndEverySuccess() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, floor: 10)
        let policy = try self.policy(throttle: throttle, clock: clock)
        let outcome = await driveThroughEveryWait(clock) {
            await policy.outcome { throw HTTPResponseError(statusCode: 503) }
        }
        #expect(outcome.attempts == 3)
        #expect(outcome.stopReason == .exhausted)
        #expect(throttle.counts == (3, 0))
        _ = try await policy.execute { 1 }
        _ = try? await policy.execute { throw HTTPResponseError(statusCode: 404) }  // answered: accepted
        #expect(throttle.counts == (5, 2))
    }

    @Test func aPolicyWithoutAThrottleCountsNothingAnywhere() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock)
        let policy = try self.policy(throttle: nil, clock: clock)
        _ = await driveThroughEveryWait(clock) { await policy.outcome { throw HTTPResponseError(statusCode: 503) } }
        _ = try await policy.execute { 1 }
        #expect(policy.throttle == nil)
        #expect(throttle.counts == (0, 0))
    }

    @Test func aLocallyThrottledFirstAttemptEndsTheCallWithoutRunningOrWaiting() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, multiplier: 1)
        for _ in 0..<10_000 { throttle.recordRejected() }
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try self.policy(throttle: throttle, budget: budget, clock: clock)
        let ran = Counter()
        let outcome = await policy.outcome { _ = ran.increment() }
        #expect(ran.value == 0)
        #expect(outcome.stopReason == .throttled)
        #expect(outcome.attempts == 1)
        #expect(clock.sleepRequests.isEmpty)
        #expect(budget.tokens == 10)
        guard case .failure(let error) = outcome.result else {
            Issue.record("a throttled call must fail")
            return
        }
        let rejection = try #require(error as? AdaptiveThrottleRejection)
        #expect(FailureAnalysis(rejection).delivery == .notSent)
        #expect(throttle.counts == (10_001, 0))  // the local rejection counts, beside the server's failures
    }

    @Test func aRetryTheThrottleRejectsEndsTheCallAfterItsBackoffWithoutFurtherAttempts() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, seed: 3)
        let policy = try self.policy(throttle: throttle, attempts: 5, clock: clock)
        let ran = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await policy.outcome {
                _ = ran.increment()
                // Meanwhile the rest of the client, sharing the throttle, sees the server fail everything.
                for _ in 0..<10_000 { throttle.recordRejected() }
                throw HTTPResponseError(statusCode: 503)
            }
        }
        #expect(ran.value == 1)
        #expect(outcome.attempts == 2)
        #expect(outcome.stopReason == .throttled)
        #expect(clock.sleepRequests == [.milliseconds(10)])
    }

    /// A throttle's rejection asks for less traffic, so a policy never retries it: not when the
    /// throttle is another layer's (a breaker's, a pipeline's) and the rejection reaches the
    /// policy wrapped in an app's error, under `NSUnderlyingErrorKey`, or bridged to `NSError`.
    @Test(arguments: LibraryErrorShape.allCases)
    func aThrottlesRejectionAnywhereInTheChainIsNotRetried(shape: LibraryErrorShape) async throws {
        let clock = TestClock()
        let policy = try self.policy(throttle: nil, attempts: 3, clock: clock)
        let rejection = shape.wrap(AdaptiveThrottleRejection(rejectionProbability: 0.9))
        let ran = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await policy.outcome { () async throws -> Int in
                _ = ran.increment()
                throw rejection
            }
        }
        #expect(ran.value == 1, "\(shape)")
        #expect(outcome.stopReason == .throttled, "\(shape)")
        #expect(clock.sleepRequests.isEmpty, "\(shape)")
    }

    /// A limiter's rejection is not a throttle's: the policy judges it as before (and retries it).
    @Test(arguments: LibraryErrorShape.allCases)
    func aLimitersRejectionIsNotReadAsAThrottles(shape: LibraryErrorShape) async throws {
        let clock = TestClock()
        let policy = try self.policy(throttle: nil, attempts: 3, clock: clock)
        let rejection = shape.wrap(LimiterRejectionError(limiterName: "uploads", reason: .queueFull))
        let outcome = await driveThroughEveryWait(clock) {
            await policy.outcome { () async throws -> Int in throw rejection }
        }
        #expect(outcome.stopReason != .throttled, "\(shape)")
    }

    @Test func aCancelledCallIsNotCountedAndCancellationDuringTheBackoffEndsIt() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, floor: 10)
        let policy = try self.policy(throttle: throttle, clock: clock)
        let cancelled = await policy.outcome { throw CancellationError() }
        #expect(cancelled.stopReason == .cancelled)
        #expect(throttle.counts == (0, 0))

        let task = Task { await policy.outcome { throw HTTPResponseError(statusCode: 503) } }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        let outcome = await task.value
        #expect(outcome.stopReason == .cancelled)
        #expect(throttle.counts == (1, 0))  // the one attempt sent
    }

    @Test func aForwardClockJumpReopensTheThrottleAndABackwardOneKeepsItsCounts() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, multiplier: 1)
        let policy = try self.policy(throttle: throttle, attempts: 1, clock: clock)
        for _ in 0..<10_000 { throttle.recordRejected() }
        clock.rewind(by: .seconds(60))
        let ran = Counter()
        let rejected = await policy.outcome { _ = ran.increment() }
        #expect(rejected.stopReason == .throttled)
        #expect(ran.value == 0)
        clock.advance(by: .seconds(60 + 121))
        let admitted = await policy.outcome { _ = ran.increment() }
        #expect(admitted.stopReason == .succeeded)
        #expect(ran.value == 1)
        #expect(throttle.counts == (1, 1))
    }

    // MARK: - CircuitBreaker

    @Test func aBreakerDoesNotCountAThrottledCallAsAFailure() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, multiplier: 1)
        for _ in 0..<10_000 { throttle.recordRejected() }
        let breaker = try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(3), throttle: throttle, clock: clock)
        let (ran, throttled) = await sendFailingCalls(20, through: breaker)
        #expect(throttled >= 18)
        #expect(ran + throttled == 20)
        #expect(ran < 3)
        #expect(breaker.state == .closed)
    }

    @Test func aThrottleDoesNotCountACallTheBreakerRejects() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, floor: 10)
        let breaker = try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(1), throttle: throttle, clock: clock)
        _ = try? await breaker.execute { throw HTTPResponseError(statusCode: 503) }
        #expect(breaker.state == .open)
        #expect(throttle.counts == (1, 0))
        await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute {} }
        #expect(throttle.counts == (1, 0))
    }

    @Test func aBreakerCountsWhatRunsThroughItsThrottle() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, floor: 10)
        let breaker = CircuitBreaker(name: "api", configuration: .default, throttle: throttle, clock: clock)
        #expect(breaker.throttle === throttle)
        for _ in 0..<4 { _ = try await breaker.execute { 1 } }
        _ = try? await breaker.execute { throw HTTPResponseError(statusCode: 502) }
        #expect(throttle.counts == (5, 4))
    }

    @Test func aBreakerAsAPipelineStageAsksAndFeedsItsThrottle() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, floor: 10)
        let breaker = CircuitBreaker(name: "api", configuration: .default, throttle: throttle, clock: clock)
        let pipeline = ResiliencePipeline { breaker }
        for _ in 0..<3 { _ = try await pipeline.execute { 1 } }
        _ = try? await pipeline.execute { () async throws -> Int in throw HTTPResponseError(statusCode: 502) }
        #expect(throttle.counts == (4, 3))
        let shut = try self.throttle(clock: clock, multiplier: 1, seed: 11)
        for _ in 0..<10_000 { shut.recordRejected() }
        let throttled = CircuitBreaker(name: "shut", configuration: .default, throttle: shut, clock: clock)
        let ran = Counter()
        var rejected = 0
        for _ in 0..<20 {
            do {
                _ = try await ResiliencePipeline { throttled }.execute { ran.increment() }
            } catch is AdaptiveThrottleRejection {
                rejected += 1
            }
        }
        #expect(rejected >= 18)
        #expect(ran.value + rejected == 20)
    }

    @Test func aBreakerAroundAThrottledPolicyDoesNotCountTheThrottlesRejection() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, multiplier: 1)
        for _ in 0..<10_000 { throttle.recordRejected() }
        let policy = try self.policy(throttle: throttle, clock: clock)
        let breaker = try CircuitBreaker(name: "api", tripRule: .consecutiveFailures(1), clock: clock)
        await #expect(throws: AdaptiveThrottleRejection.self) {
            try await breaker.execute { try await policy.execute { 1 } }
        }
        #expect(breaker.state == .closed)
    }

    // MARK: - Sharing

    @Test func aPolicyAndABreakerSideBySideShareOneThrottle() async throws {
        let clock = TestClock()
        let throttle = try self.throttle(clock: clock, seed: 11)
        let breaker = try CircuitBreaker(
            name: "search", tripRule: .consecutiveFailures(1_000), throttle: throttle, clock: clock)
        let policy = try self.policy(throttle: throttle, attempts: 1, clock: clock)
        // The breaker's endpoint fails everything; the throttle learns the server is down.
        let sentByBreaker = Counter()
        for _ in 0..<200 {
            _ = try? await breaker.execute {
                _ = sentByBreaker.increment()
                throw HTTPResponseError(statusCode: 503)
            }
        }
        #expect(sentByBreaker.value > 0 && sentByBreaker.value < 50)
        #expect(throttle.counts == (200, 0))  // every call it was asked for, sent or rejected locally
        #expect(throttle.rejectionProbability > 0.9)
        #expect(breaker.state == .closed)
        // The policy's calls to another endpoint of the same server are now mostly rejected locally.
        let ran = Counter()
        var throttled = 0
        for _ in 0..<50 {
            let outcome = await policy.outcome { _ = ran.increment() }
            if outcome.stopReason == .throttled { throttled += 1 }
        }
        #expect(throttled > 40)
        #expect(ran.value == 50 - throttled)
        #expect(throttle.counts == (250, ran.value))
    }
}
