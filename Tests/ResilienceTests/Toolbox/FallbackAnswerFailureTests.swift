import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A ``Fallback`` whose answer throws replaces the failure it handled, but not the rules that
/// failure called for: the strategies around it still never send again a request that got an
/// HTTP 429, or one that may not run twice and may have left, whatever their classifiers say.
@Suite(.timeLimit(.minutes(5))) struct FallbackAnswerFailureTests {
    struct AnswerFailed: Error, Equatable {}

    /// A policy that retries everything, with no wait to drive.
    static func eagerPolicy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
    }

    static let tooMany = HTTPResponseError(statusCode: 429, headers: ["retry-after": "3"])

    @Test func aPolicyAroundAFallbackWhoseAnswerThrowsDoesNotSendA429dRequestAgain() async throws {
        let policy = try Self.eagerPolicy(clock: TestClock())
        let fallback = Fallback<Int> { _ in throw AnswerFailed() }
        let sends = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            try await fallback.execute { () async throws -> Int in
                sends.increment()
                throw Self.tooMany
            }
        }
        #expect(sends.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
        // The error the caller catches is still the answer's.
        #expect(throws: AnswerFailed.self) { try outcome.result.get() }
    }

    @Test func twoPoliciesAroundTheFallbackBothStop() async throws {
        let clock = TestClock()
        let outer = try Self.eagerPolicy(clock: clock)
        let inner = try Self.eagerPolicy(clock: clock)
        let fallback = Fallback<Int> { _ in throw AnswerFailed() }
        let sends = Counter()
        let outcome = await outer.outcome { () async throws -> Int in
            try await inner.execute {
                try await fallback.execute { () async throws -> Int in
                    sends.increment()
                    throw Self.tooMany
                }
            }
        }
        #expect(sends.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
    }

    @Test func aPipelinesPolicyStageAroundItsFallbackStageDoesNotSendA429dRequestAgain() async throws {
        let policy = try Self.eagerPolicy(clock: TestClock())
        let pipeline = ResiliencePipeline {
            policy
            Fallback<Int> { _ in throw AnswerFailed() }
        }
        let sends = Counter()
        await #expect(throws: AnswerFailed.self) {
            try await pipeline.execute { () async throws -> Int in
                sends.increment()
                throw Self.tooMany
            }
        }
        #expect(sends.value == 1)
    }

    /// A call declared not idempotent whose request may have left: the answer fails offline,
    /// which proves only that the answer's own request never left.
    @Test func aNotIdempotentRequestThatMayHaveLeftIsNotSentAgainAfterTheAnswerFails() async throws {
        let policy = try Self.eagerPolicy(clock: TestClock())
        let fallback = Fallback<Int> { _ in throw URLError(.notConnectedToInternet) }
        let sends = Counter()
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () async throws -> Int in
            try await fallback.execute { () async throws -> Int in
                sends.increment()
                throw URLError(.networkConnectionLost)
            }
        }
        #expect(sends.value == 1)
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// A failure without a hard stop, answered by a failing answer, is retried as before.
    @Test func anOrdinaryFailureAnsweredByAFailingAnswerIsRetried() async throws {
        let policy = try Self.eagerPolicy(clock: TestClock())
        let fallback = Fallback<Int> { _ in throw AnswerFailed() }
        let sends = Counter()
        _ = await policy.outcome { () async throws -> Int in
            try await fallback.execute { () async throws -> Int in
                sends.increment()
                throw HTTPResponseError(statusCode: 503)
            }
        }
        #expect(sends.value == 3)
    }
}
