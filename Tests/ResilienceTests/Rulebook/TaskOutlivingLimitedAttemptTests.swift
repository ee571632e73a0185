import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A task the operation of a timed-out call started (a background refresh, `Task { … }`)
/// inherits the call's task-locals, the fired limit's signal among them. The limit's attempt
/// has ended by the time the task's owner cancels it: that cancellation is the caller's, not
/// the limit's, for every reader of the signal.
@Suite("A task that outlives a limited attempt", .serialized, .timeLimit(.minutes(5)))
struct TaskOutlivingLimitedAttemptTests {
    struct Unavailable: Error, HTTPStatusReporting { var httpStatusCode: Int? { 503 } }

    /// How the call the background task was started in is limited.
    enum Limit: CaseIterable, Sendable { case timeout, attemptTimeout }

    /// Runs a call limited by `limit` around an operation that starts `background` in an
    /// unstructured task and then hangs; lets the limit fire; returns the background task,
    /// still running, after the call ended.
    static func backgroundTaskOfATimedOutCall(
        _ limit: Limit, clock: TestClock, sleepers: Int, _ background: @escaping @Sendable () async -> String
    ) async throws -> Task<String, Never> {
        let started = Lock<Task<String, Never>?>(nil)
        let operation = { @Sendable () async throws -> Int in
            started.withLock { $0 = Task { await background() } }
            try await clock.sleep(for: .seconds(3_600))
            return 0
        }
        let call: Task<Int, any Error>
        switch limit {
        case .timeout:
            let timeout = try Timeout(.seconds(1), clock: clock)
            call = Task { try await timeout.execute(operation: operation) }
        case .attemptTimeout:
            let policy = try RetryPolicy(
                maximumAttempts: 1, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
            call = Task { try await policy.execute(attemptTimeout: .seconds(1), operation: operation) }
        }
        // The hung operation, the limit's timer and the background task's own sleepers.
        await clock.waitForSleepers(count: 2 + sleepers)
        clock.advance(by: .seconds(1))
        let result = await call.result
        #expect(throws: (any Error).self, "\(limit): the limit did not end the call") { try result.get() }
        return try #require(started.withLock { $0 })
    }

    @Test(arguments: Limit.allCases)
    func aBreakerInABackgroundTaskDoesNotCountItsOwnersCancellation(limit: Limit) async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "refresh", tripRule: .consecutiveFailures(1), clock: clock)
        let background = try await Self.backgroundTaskOfATimedOutCall(limit, clock: clock, sleepers: 1) {
            do {
                try await breaker.execute { try await clock.sleep(for: .seconds(3_600)) }
                return "finished"
            } catch {
                return "\(type(of: error))"
            }
        }
        background.cancel()  // the owner gives up on the background work: the caller's cancellation
        let seen = await background.value
        #expect(seen == "CancellationError", "\(limit), seen: \(seen)")
        #expect(breaker.state == .closed, "\(limit): the owner's cancellation was counted as a time-out")
    }

    @Test(arguments: Limit.allCases)
    func aPolicyInABackgroundTaskCancelledWhileWaitingThrowsCancellationError(limit: Limit) async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(60)), jitter: .none, clock: clock)
        let outcomeReason = Lock<RetryStopReason?>(nil)
        let background = try await Self.backgroundTaskOfATimedOutCall(limit, clock: clock, sleepers: 1) {
            let outcome = await policy.outcome { () throws -> Int in throw Unavailable() }
            outcomeReason.withLock { $0 = outcome.stopReason }
            do {
                _ = try outcome.get()
                return "value"
            } catch {
                return "\(type(of: error))"
            }
        }
        background.cancel()  // cancelled while it waits to retry
        let seen = await background.value
        #expect(seen == "CancellationError", "\(limit), seen: \(seen)")
        #expect(outcomeReason.withLock { $0 } == .cancelled, "\(limit)")
    }

    @Test(arguments: Limit.allCases)
    func aFallbackInABackgroundTaskDoesNotAnswerItsOwnersCancellation(limit: Limit) async throws {
        let clock = TestClock()
        let fallback = Fallback<String>.value("fallback")
        let background = try await Self.backgroundTaskOfATimedOutCall(limit, clock: clock, sleepers: 1) {
            do {
                return try await fallback.execute {
                    try await clock.sleep(for: .seconds(3_600))
                    return "finished"
                }
            } catch {
                return "\(type(of: error))"
            }
        }
        background.cancel()
        let seen = await background.value
        #expect(seen == "CancellationError", "\(limit), seen: \(seen)")
    }

    @Test(arguments: Limit.allCases)
    func aLimiterQueueWaitInABackgroundTaskCancelledByItsOwnerThrowsCancellationError(limit: Limit) async throws {
        let clock = TestClock()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 1, clock: clock)
        let holder = Task { try await limiter.execute { try await clock.sleep(for: .seconds(7_200)) } }
        await clock.waitForSleepers(count: 1)
        let background = try await Self.backgroundTaskOfATimedOutCall(limit, clock: clock, sleepers: 1) {
            do {
                return try await limiter.execute { "ran" }
            } catch {
                return "\(type(of: error))"
            }
        }
        background.cancel()  // the owner gives up while it waits in the queue
        let seen = await background.value
        #expect(seen == "CancellationError", "\(limit), seen: \(seen)")
        holder.cancel()
        _ = await holder.result
    }

    /// A limit the background task sets up itself still counts when it fires.
    @Test func aTimeoutInsideTheBackgroundTaskStillCountsForABreakerInIt() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "refresh", tripRule: .consecutiveFailures(1), clock: clock)
        let own = try Timeout(.seconds(5), clock: clock)
        let background = try await Self.backgroundTaskOfATimedOutCall(.timeout, clock: clock, sleepers: 2) {
            do {
                try await own.execute {
                    try await breaker.execute { try await clock.sleep(for: .seconds(3_600)) }
                }
                return "finished"
            } catch {
                return "\(type(of: error))"
            }
        }
        await clock.waitForSleepers(count: 2)  // the breaker's operation and its own limit's timer
        clock.advance(by: .seconds(5))
        let seen = await background.value
        #expect(seen == "TimeoutError", "seen: \(seen)")
        #expect(breaker.state == .open, "the background task's own time-out was not counted")
    }

    /// Control: the same background task started outside any limit.
    @Test func aBreakerInAPlainBackgroundTaskDoesNotCountItsOwnersCancellation() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "refresh", tripRule: .consecutiveFailures(1), clock: clock)
        let background = Task {
            do {
                try await breaker.execute { try await clock.sleep(for: .seconds(3_600)) }
                return "finished"
            } catch {
                return "\(type(of: error))"
            }
        }
        await clock.waitForSleepers(count: 1)
        background.cancel()
        let seen = await background.value
        #expect(seen == "CancellationError", "seen: \(seen)")
        #expect(breaker.state == .closed)
    }
}
