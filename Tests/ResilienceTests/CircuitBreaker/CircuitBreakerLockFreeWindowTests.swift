import ResilienceTesting
import Testing

@testable import Resilience

/// Closed-state successes under a time-window rule are counted outside the breaker's
/// lock; these pin that none is lost, that they count toward the trip rule, and that
/// they land in the right bucket as time moves.
@Suite struct CircuitBreakerLockFreeWindowTests {
    static func breaker(clock: TestClock) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "window",
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 20, window: .time(.seconds(10), buckets: 10)),
            clock: clock)
    }

    /// A breaker that opens when half of at least four calls in the last minute failed.
    static func halfOfFourCallsBreaker(
        slowCallRule: CircuitBreakerSlowCallRule? = nil, observer: RecordingBreakerObserver? = nil, clock: TestClock
    ) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "rate",
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .time(.seconds(60), buckets: 6)),
            slowCallRule: slowCallRule, observer: observer, clock: clock)
    }

    @Test func successesCountedWithoutTheLockReachTheWindowAndTheTripRule() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock: clock)
        for _ in 0..<10 { _ = try await breaker.execute { 1 } }
        #expect(breaker.snapshot().recentCalls == 10)
        #expect(breaker.snapshot().recentFailures == 0)
        for _ in 0..<9 { await breaker.fail() }
        #expect(breaker.state == .closed, "9 of 19 calls failed, under the minimum of 20 calls")
        await breaker.fail()
        #expect(breaker.state == .open, "10 of 20 calls failed")
    }

    @Test func successesLandInTheBucketOfTheirTimeAndLeaveTheWindowWithIt() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock: clock)
        for _ in 0..<5 { _ = try await breaker.execute { 1 } }
        clock.advance(by: .seconds(1))
        for _ in 0..<7 { _ = try await breaker.execute { 1 } }
        #expect(breaker.snapshot().recentCalls == 12)
        clock.advance(by: .seconds(9))  // the first second's bucket leaves the window
        #expect(breaker.snapshot().recentCalls == 7)
        clock.advance(by: .seconds(1))
        #expect(breaker.snapshot().recentCalls == 0)
    }

    @Test func concurrentSuccessesAreAllCounted() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock: clock)
        let tasks = 16
        let callsPerTask = 500
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    for _ in 0..<callsPerTask { _ = try? await breaker.execute { 1 } }
                }
            }
        }
        #expect(breaker.snapshot().recentCalls == tasks * callsPerTask)
    }

    /// The trip rule's documentation: the rule is judged after every call it counts, success
    /// or failure. Two failures then two successes meet 50% of 4 calls on the last success,
    /// which a closed breaker with no run of failures to reset would count without the lock.
    @Test func aSuccessThatCompletesMinimumCallsOpensATimeWindowBreaker() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try Self.halfOfFourCallsBreaker(observer: observer, clock: clock)
        await breaker.fail()
        await breaker.fail()
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 1 }
        #expect(observer.transitions == ["closed->open"], "opened by the last success, without another call")
        #expect(observer.changes.last?.reason == .tripped)
        #expect(breaker.snapshot().state == .open)
    }

    /// The same sequence over a count window, whose successes always take the lock.
    @Test func aSuccessThatCompletesMinimumCallsOpensACountWindowBreaker() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "rate", tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(10)), clock: clock)
        await breaker.fail()
        await breaker.fail()
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 1 }
        #expect(breaker.snapshot().state == .open)
    }

    /// Under a slow-call rule a fast success is counted without the lock on a path of its own;
    /// it is judged too.
    @Test func aFastSuccessThatCompletesMinimumCallsOpensABreakerWithASlowCallRule() async throws {
        let clock = TestClock()
        let breaker = try Self.halfOfFourCallsBreaker(slowCallRule: .slowerThan(.seconds(2)), clock: clock)
        await breaker.fail()
        _ = try await breaker.execute { () async -> Int in
            clock.advance(by: .seconds(3))  // slow: a failure
            return 1
        }
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 1 }
        #expect(breaker.snapshot().state == .open)
    }

    /// A window that cannot reach the threshold whatever successes come keeps counting them
    /// without the lock, and a window past `minimumCalls` under the threshold does too: a
    /// success there only lowers the rate.
    @Test func successesThatCannotMeetTheRuleAreCountedWithoutTheLock() async throws {
        let clock = TestClock()
        let breaker = try Self.halfOfFourCallsBreaker(clock: clock)
        await breaker.fail()
        _ = try await breaker.execute { 1 }  // takes the lock: a run of failures to reset
        for _ in 0..<6 { _ = try await breaker.execute { 1 } }
        #expect(breaker.storage.pendingSuccessCount == 6, "1 failure in 4 calls or more is under 50%")
        await breaker.fail()
        await breaker.fail()
        _ = try await breaker.execute { 1 }
        for _ in 0..<3 { _ = try await breaker.execute { 1 } }
        #expect(breaker.storage.pendingSuccessCount == 3, "3 failures in 12 calls or more is under 50%")
        #expect(breaker.snapshot().recentCalls == 14)
        #expect(breaker.state == .closed)
    }

    @Test func aResetForgetsSuccessesCountedWithoutTheLock() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock: clock)
        for _ in 0..<10 { _ = try await breaker.execute { 1 } }
        breaker.reset()
        #expect(breaker.snapshot().recentCalls == 0)
        _ = try await breaker.execute { 1 }
        _ = try await breaker.execute { 1 }
        #expect(breaker.snapshot().recentCalls == 2)
    }
}
