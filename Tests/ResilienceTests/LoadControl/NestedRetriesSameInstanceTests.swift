import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// One policy instance nested in itself: an app-wide `static let policy` used by an API client's
/// helper and by a caller that wraps a sequence of those helpers. Its layers send what layers of
/// two instances send: the innermost retries, the others stop because it did, and a request that
/// may not run twice is sent once.
@Suite("Nested retries: one policy instance nested in itself", .timeLimit(.minutes(5)))
struct NestedRetriesSameInstanceTests {
    private typealias Sent = NestedSend

    /// Runs `operation` inside `layers` calls of `policy`, the outermost through `outcome`;
    /// `between` wraps each call below the outermost (a breaker, a time limit), the identity by default.
    private static func send(
        layers: Int, policy: RetryPolicy, clock: TestClock,
        between: @escaping @Sendable (@escaping @Sendable () async throws -> Void) async throws -> Void = {
            try await $0()
        },
        operation: @escaping @Sendable () async throws -> Void
    ) async -> RetryStopReason? {
        @Sendable func wrapped(_ depth: Int) async throws {
            guard depth > 1 else { return try await policy.execute { try await operation() } }
            try await policy.execute { try await between { try await wrapped(depth - 1) } }
        }
        return await driveThroughEveryWait(clock) { () -> RetryStopReason? in
            await policy.outcome { try await between { try await wrapped(layers - 1) } }.stopReason
        }
    }

    @Test(arguments: [2, 3])
    func layersOfOneInstanceSendWhatTheInnermostSends(layers: Int) async throws {
        let clock = TestClock()
        let policy = try NestedSend.policy(clock)
        let attempts = Counter()
        let stop = await Self.send(layers: layers, policy: policy, clock: clock) {
            attempts.increment()
            throw TransientError(id: 71)
        }
        #expect(Sent(attempts: attempts.value, stop: stop) == NestedSend.nested)
    }

    /// Through `execute` at every layer: the caller gets the innermost error after three requests.
    @Test func theOuterExecuteThrowsAfterThreeRequests() async throws {
        let clock = TestClock()
        let policy = try NestedSend.policy(clock)
        let attempts = Counter()
        let thrown = await driveThroughEveryWait(clock) { () -> (any Error)? in
            do {
                try await policy.execute {
                    try await policy.execute {
                        attempts.increment()
                        throw TransientError(id: 72)
                    }
                }
                return nil
            } catch {
                return error
            }
        }
        #expect(attempts.value == 3)
        #expect(thrown as? TransientError == TransientError(id: 72))
    }

    @Test(arguments: [2, 3])
    func aBreakerBetweenTheLayersChangesNothing(layers: Int) async throws {
        let clock = TestClock()
        let policy = try NestedSend.policy(clock)
        // Never opens here: the error goes through it unchanged.
        let breaker = try CircuitBreaker(name: "same-instance", tripRule: .consecutiveFailures(1_000), clock: clock)
        let attempts = Counter()
        let stop = await Self.send(
            layers: layers, policy: policy, clock: clock,
            between: { operation in try await breaker.execute { try await operation() } },
            operation: {
                attempts.increment()
                throw URLError(.timedOut)
            })
        #expect(Sent(attempts: attempts.value, stop: stop) == NestedSend.nested)
    }

    @Test(arguments: [2, 3])
    func aTimeoutBetweenTheLayersChangesNothing(layers: Int) async throws {
        let clock = TestClock()
        let policy = try NestedSend.policy(clock)
        // On a clock of its own that never moves: the limit never fires.
        let timeout = try Timeout(.seconds(60), clock: TestClock())
        let attempts = Counter()
        let stop = await Self.send(
            layers: layers, policy: policy, clock: clock,
            between: { operation in try await timeout.execute { try await operation() } },
            operation: {
                attempts.increment()
                throw TransientError(id: 73)
            })
        #expect(Sent(attempts: attempts.value, stop: stop) == NestedSend.nested)
    }

    /// A `POST` the inner call declares not idempotent is sent once, and no layer of the same
    /// instance around it sends it again.
    @Test(arguments: [2, 3])
    func aPostDeclaredInsideIsSentOnce(layers: Int) async throws {
        let clock = TestClock()
        let policy = try NestedSend.policy(clock)
        let posts = Counter()
        @Sendable func wrapped(_ depth: Int) async throws {
            guard depth > 1 else {
                return try await policy.execute(idempotency: .notIdempotent) {
                    posts.increment()
                    throw TransientError(id: 74)
                }
            }
            try await policy.execute { try await wrapped(depth - 1) }
        }
        let stop = await driveThroughEveryWait(clock) { () -> RetryStopReason? in
            await policy.outcome { try await wrapped(layers - 1) }.stopReason
        }
        #expect(Sent(attempts: posts.value, stop: stop) == Sent(attempts: 1, stop: .notIdempotent))
    }

    /// An outer call that hands a scope down (a deadline) around a plain call of the same
    /// instance, and the same instance called so again and again in one task with one stored
    /// error value: three requests each time.
    @Test func theSameNestingCalledAgainWithAStoredErrorSendsThreeEachTime() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(10)), jitter: .none, deadline: .seconds(60),
            clock: clock)
        let stored: any Error = NSError(domain: "stored", code: 503)
        let sent = await driveThroughEveryWait(clock) { () -> [Sent] in
            var sent: [Sent] = []
            for _ in 0..<4 {
                let attempts = Counter()
                let outcome = await policy.outcome {
                    try await policy.execute {
                        attempts.increment()
                        throw stored
                    }
                }
                sent.append(Sent(attempts: attempts.value, stop: outcome.stopReason))
            }
            return sent
        }
        #expect(sent == Array(repeating: NestedSend.nested, count: 4))
    }

    /// Two instances nested in each other send the same: the instance is not what the ledger
    /// tells layers apart by.
    @Test func twoInstancesSendTheSame() async throws {
        let clock = TestClock()
        let (outer, inner) = (try NestedSend.policy(clock), try NestedSend.policy(clock))
        let attempts = Counter()
        let stop = await driveThroughEveryWait(clock) { () -> RetryStopReason? in
            await outer.outcome {
                try await inner.execute {
                    attempts.increment()
                    throw TransientError(id: 75)
                }
            }.stopReason
        }
        #expect(Sent(attempts: attempts.value, stop: stop) == NestedSend.nested)
    }
}
