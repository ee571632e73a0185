import Resilience
import ResilienceTesting
import Testing

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
