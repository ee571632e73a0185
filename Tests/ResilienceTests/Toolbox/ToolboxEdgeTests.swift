import Resilience
import ResilienceTesting
import Testing

@Suite("Toolbox edges")
struct ToolboxEdgeTests {
    @Test func anInnerTimeoutInsideAnOuterOneLetsTheOuterReportItsOwnLimit() async throws {
        let clock = TestClock()
        let outer = try Timeout(.seconds(1), name: "total", clock: clock)
        let inner = try Timeout(.seconds(5), name: "attempt", clock: clock)
        let call = Task {
            try await outer.execute {
                try await inner.execute { try await clock.sleep(for: .seconds(10)) }
            }
        }
        await clock.waitForSleepers(count: 3)  // the operation and both timers
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(error?.timeoutName == "total")
    }

    @Test func aTimeoutUnderAClockJumpFarForwardFiresOnce() async throws {
        let clock = TestClock()
        let log = EventLog()
        let timeout = try Timeout(.seconds(1), observer: log, clock: clock)
        // The operation sleeps on a clock no one advances, so the jump wakes the timer alone.
        let stillClock = TestClock()
        let call = Task { try await timeout.execute { try await stillClock.sleep(for: .seconds(10)) } }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(86_400 * 365 * 50))
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(log.kinds.values == [.timedOut])
    }

    @Test func aQueueTimeoutUnderAClockJumpFarForwardRefusesTheCallerAndReportsIt() async throws {
        let clock = TestClock()
        let log = EventLog()
        let limiter = try ConcurrencyLimiter(
            limit: 1, queueLimit: 1, queueTimeout: .seconds(1), observer: log, clock: clock)
        let gate = Gate()
        let first = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        let second = Task { try await limiter.execute { 2 } }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(86_400 * 365 * 50))
        let error = await #expect(throws: LimiterRejectionError.self) { try await second.value }
        #expect(error?.reason == .queueTimedOut)
        gate.open()
        try await first.value
        #expect(log.kinds.values == [.queued, .rejected])
        #expect(limiter.inFlight == 0 && limiter.queued == 0)
    }

    @Test func aRateLimiterReportsEachRefusalWithItsRetryAfter() async throws {
        let clock = TestClock()
        let log = EventLog()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(2)), observer: log, clock: clock)
        _ = try await limiter.execute { 1 }
        _ = try? await limiter.execute { 1 }
        #expect(log.kinds.values == [.rejected])
    }

    @Test func hedgingReportsEachHedgeItStarts() async throws {
        let clock = TestClock()
        let log = EventLog()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), observer: log, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                let attempt = attempts.increment()
                if attempt == 1 { try await clock.sleep(for: .seconds(10)) }
                return attempt
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        #expect(try await call.value == 2)
        #expect(log.kinds.values == [.hedged])
    }

    @Test func aRetryPolicyAroundALimiterWaitsTheRejectionsRetryAfter() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(3)), clock: clock)
        _ = try await limiter.execute { 0 }
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let call = Task { try await policy.execute { try await limiter.execute { 1 } } }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests.last == .seconds(3))
        clock.advance(by: .seconds(3))
        #expect(try await call.value == 1)
    }

    @Test func cancellingAHedgedCallCancelsEveryAttemptAndCountsNothing() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let call = Task {
            try await hedging.execute {
                try await breaker.execute { try await clock.sleep(for: .seconds(10)) }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        await clock.waitForSleepers(count: 2)  // both attempts asleep
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().state == .closed)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aTimeoutCalledFromACancelledTaskEndsWithTheCancellationNotATimeout() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await timeout.execute { try await clock.sleep(for: .seconds(10)) }
        }
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(clock.sleeperCount == 0)
    }
}
