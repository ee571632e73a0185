import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A time limit around the library's gates (rate limiters, bulkheads) reports what it
/// cannot rule out: that the request may have been sent. A gate that let a POST out
/// earlier in the same call, or an unstructured task that inherited the limit, must not
/// make it read otherwise.
@Suite("A time limit around the library's gates", .timeLimit(.minutes(5)))
struct TimeLimitAroundGatesTests {
    /// Two gates: the first lets every attempt through at once, the second has spent its
    /// one permit and frees the next a minute later.
    static func gates(clock: TestClock) async throws -> (first: RateLimiter, second: RateLimiter) {
        let first = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), name: "send",
            maximumWait: .seconds(600), clock: clock)
        let second = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(60)), name: "after",
            maximumWait: .seconds(600), clock: clock)
        _ = try await second.execute { 0 }
        return (first, second)
    }

    @Test func aLimitThatFiresAtASecondGateAfterTheFirstLetThePOSTOutReportsItMayHaveBeenSent() async throws {
        let clock = TestClock()
        let (first, second) = try await Self.gates(clock: clock)
        let timeout = try Timeout(.seconds(5), clock: clock)
        let posted = Counter()
        let call = Task {
            try await timeout.execute(idempotency: .notIdempotent) {
                _ = try await first.execute { posted.increment() }  // the POST leaves here
                return try await second.execute { 1 }  // then the call waits here
            }
        }
        await clock.waitForSleepers(count: 2)  // the timeout's watcher and the second gate's wait
        #expect(posted.value == 1)
        clock.advance(by: .seconds(5))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .mayHaveBeenSent)
        // The attempt ended waiting at a gate, in front of the dependency: no breaker counts it.
        #expect(Rulebook.countsAsFailure(FailureAnalysis(error)) == false)
        #expect(Rulebook.stopReason(for: FailureAnalysis(error), idempotency: .notIdempotent) == .notIdempotent)
    }

    @Test func aPolicyDoesNotSendThePOSTAgainAfterALimitFiresAtALaterGate() async throws {
        let clock = TestClock()
        let (first, second) = try await Self.gates(clock: clock)
        let timeout = try Timeout(.seconds(5), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let posted = Counter()
        let call = Task {
            await policy.outcome(idempotency: .http(method: "POST")) {
                try await timeout.execute {
                    _ = try await first.execute { posted.increment() }
                    return try await second.execute { 1 }
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(5))
        // A policy that retried would wait its backoff, and the suite's time limit would end the test.
        let outcome = await call.value
        #expect(posted.value == 1, "the POST was sent \(posted.value) times")
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// Work an unstructured task started inside a timed call waits for at a gate is not the
    /// call's: the limit firing neither refuses it nor changes what the limit reports.
    @Test func aTaskStartedInsideATimeoutRunsItsGatedWorkOnceTheGateAdmitsIt() async throws {
        let clock = TestClock()
        let (_, limiter) = try await Self.gates(clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let ran = Counter()
        let (sides, side) = AsyncStream.makeStream(of: Task<Int, any Error>.self)
        let call = Task {
            try await timeout.execute(idempotency: .notIdempotent) {
                let task = Task {
                    try await limiter.execute {
                        ran.increment()
                        return 7
                    }
                }
                side.yield(task)
                try await clock.sleep(for: .seconds(10))  // the request, slow to answer
            }
        }
        // The timeout's watcher, the operation's sleep and the side task's wait at the gate.
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .seconds(1))
        let error = try #require(await #expect(throws: TimeoutError.self) { try await call.value })
        #expect(error.requestDelivery == .mayHaveBeenSent)
        #expect(Rulebook.stopReason(for: FailureAnalysis(error), idempotency: .notIdempotent) == .notIdempotent)
        clock.advance(by: .seconds(59))
        var iterator = sides.makeAsyncIterator()
        let task = try #require(await iterator.next())
        #expect(try await task.value == 7)
        #expect(ran.value == 1)
    }
}
