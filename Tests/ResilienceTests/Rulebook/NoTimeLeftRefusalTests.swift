import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A time-limited attempt refused because an enclosing deadline had passed
/// (``LimiterRejectionError/Reason/noTimeLeft``) is a deadline's outcome, not load
/// shedding: no reading of it counts it as a limiter's rejection, in any shape, yet it
/// still proves nothing was sent and says nothing against the dependency.
@Suite("A refusal for want of time is not a rejection", .timeLimit(.minutes(5)))
struct NoTimeLeftRefusalTests {
    static let refusal = LimiterRejectionError(limiterName: "inner", reason: .noTimeLeft)

    @Test(arguments: LocalRejectionShape.all)
    func noReadingCountsItAsARejection(shape: LocalRejectionShape) {
        let error = shape.wrap(Self.refusal)
        let analysis = FailureAnalysis(error)
        #expect(!analysis.isLocalRejection, "\(shape)")
        #expect(!FallbackContext(error: error, analysis: analysis).isRejection, "\(shape)")
        // Nothing was sent: a breaker still never holds it against the dependency.
        #expect(analysis.delivery == .notSent, "\(shape)")
        #expect(Rulebook.countsAsFailure(analysis) == false, "\(shape)")
        // And the default breaker classifier, asked directly, answers the same.
        #expect(DefaultCircuitBreakerFailureClassifier().countsAsFailure(error) == false, "\(shape)")
    }

    /// A limiter's own refusal, in the same shapes, stays a rejection.
    @Test(arguments: LocalRejectionShape.all)
    func aFullQueueStaysARejection(shape: LocalRejectionShape) {
        let error = shape.wrap(LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull, queued: 0))
        let analysis = FailureAnalysis(error)
        #expect(analysis.isLocalRejection, "\(shape)")
        #expect(FallbackContext(error: error, analysis: analysis).isRejection, "\(shape)")
    }

    @Test func itsBridgedFormHasACodeOfItsOwn() {
        let bridged = Self.refusal as NSError
        #expect(bridged.domain == LimiterRejectionError.errorDomain)
        #expect(bridged.code == 4)
    }

    /// A fallback around a nested time-limited call whose enclosing deadline passed answers
    /// for a deadline, not for a refusal.
    @Test func aFallbackAroundAPassedDeadlineSeesNoRejection() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 1, deadline: .seconds(5), clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let seen = Recorder<Bool>()
        let fallback = Fallback<Int> { context in
            seen.record(context.isRejection)
            return -1
        }
        let value = try await fallback.execute {
            try await outer.execute { () async throws -> Int in
                clock.advance(by: .seconds(6))  // the deadline passes before the nested call
                return try await inner.execute(attemptTimeout: .seconds(2)) { () async throws -> Int in 1 }
            }
        }
        #expect(value == -1)
        #expect(seen.values == [false])
    }
}
