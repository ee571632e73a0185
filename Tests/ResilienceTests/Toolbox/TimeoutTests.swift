import Resilience
import ResilienceTesting
import Testing

@Suite("Timeout")
struct TimeoutTests {
    @Test func returnsTheValueAndStopsItsTimerWhenTheOperationFinishesInTime() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(5), clock: clock)
        let value = try await timeout.execute { 42 }
        #expect(value == 42)
        #expect(clock.sleeperCount == 0)  // the timer was cancelled, not left asleep
    }

    @Test func endsASlowOperationWithATimeoutErrorTheRulebookReadsAsATimeLimit() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), name: "profile", clock: clock)
        let call = Task {
            try await timeout.execute { try await clock.sleep(for: .seconds(10)) }
        }
        await clock.waitForSleepers(count: 2)  // the operation and the timer
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(error?.timeout == .seconds(1))
        #expect(error?.timeoutName == "profile")
        let analysis = FailureAnalysis(try #require(error))
        #expect(analysis.delivery == .mayHaveBeenSent)
        #expect(analysis.interruption == .timeLimit)
    }

    @Test func carriesTheDeclaredIdempotencySoNoOuterPolicyRepeatsIt() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            try await timeout.execute(idempotency: .notIdempotent) { try await clock.sleep(for: .seconds(10)) }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestIdempotency == .notIdempotent)
        #expect(Rulebook.stopReason(for: FailureAnalysis(error), idempotency: .idempotent) == .notIdempotent)
    }

    /// The same declaration reaches a policy inside, which sends its request once.
    @Test func handsTheDeclaredIdempotencyToAPolicyInside() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(60), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let sends = Counter()
        await #expect(throws: TimeoutError.self) {
            try await timeout.execute(idempotency: .notIdempotent) {
                try await policy.execute { () async throws -> Int in
                    sends.increment()
                    throw TimeoutError(timeoutName: "attempt", timeout: .seconds(1))  // may have been sent
                }
            }
        }
        #expect(sends.value == 1)
    }

    @Test func aBreakerInsideCountsTheTimeOutAsAFailure() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            try await timeout.execute {
                try await breaker.execute { try await clock.sleep(for: .seconds(10)) }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(breaker.snapshot().state == .open)
    }

    @Test func aBreakerInsideIgnoresTheCallersCancellation() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            try await timeout.execute {
                try await breaker.execute { try await clock.sleep(for: .seconds(10)) }
            }
        }
        await clock.waitForSleepers(count: 2)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().state == .closed)
    }

    @Test @MainActor func aMainActorCallerAddsATimeoutWithoutRewritingItsClosure() async throws {
        final class Screen {
            var loads = 0
        }
        let screen = Screen()  // not Sendable: only the main actor may touch it
        let timeout = try Timeout(.seconds(5), clock: TestClock())
        let loads = try await timeout.execute {
            MainActor.assertIsolated()
            screen.loads += 1
            return screen.loads
        }
        #expect(loads == 1)
    }

    @Test func anOperationThatIgnoresCancellationIsAwaitedAndItsLateValueReturned() async throws {
        let clock = TestClock()
        let gate = Gate()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            try await timeout.execute {
                await gate.wait()
                return "late"
            }
        }
        await gate.waitForWaiters(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        gate.open()
        #expect(try await call.value == "late")
    }

    @Test(arguments: [Duration.zero, .seconds(-1), .seconds(Int64.max)])
    func rejectsAnInvalidDurationNamingIt(_ duration: Duration) {
        #expect(rejectedSetting { _ = try Timeout(duration) } == "duration")
    }

    @Test func tenThousandConcurrentCallsAllReturnAndLeaveNoTimerAsleep() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10_000 {
                group.addTask { try await timeout.execute { index } }
            }
            return try await group.reduce(0, +)
        }
        #expect(sum == (0..<10_000).reduce(0, +))
        #expect(clock.sleeperCount == 0)
    }
}
