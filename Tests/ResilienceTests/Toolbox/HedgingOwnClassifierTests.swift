import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A ``Hedging`` given a classifier of its own: it judges failed attempts with it, over a
/// pipeline's retry stage's, and reads its declared idempotency as a policy does.
@Suite("Hedging: a classifier of its own", .timeLimit(.minutes(5)))
struct HedgingOwnClassifierTests {
    typealias Shared = HedgingClassifierTests

    @Test func aFailureItsClassifierWillNotRetryStartsNoReplacement() async throws {
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, classifier: Shared.declining, clock: TestClock())
        let (result, runs) = await Shared.callFailingFirst(
            with: NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: Shared.DeclinedError()])
        ) { operation in
            try await hedging.execute(operation: operation)
        }
        #expect(runs == 1, "a declined request was sent \(runs) times")
        #expect(throws: (any Error).self) { try result.get() }
    }

    @Test func itsClassifierWinsOverThePipelinesRetryStage() async throws {
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, classifier: Shared.declining, clock: TestClock())
        // The retry stage would send a 404 again; the hedging stage's own classifier is asked.
        let retry = try RetryPolicy(maximumAttempts: 1, classifier: ClosureRetryClassifier { _, _ in .retry })
        let pipeline = ResiliencePipeline {
            hedging
            retry
        }
        let (result, runs) = await Shared.callFailingFirst(with: Shared.DeclinedError()) { operation in
            try await pipeline.execute(operation: operation)
        }
        #expect(runs == 1, "a declined request was sent \(runs) times")
        #expect(throws: Shared.DeclinedError()) { try result.get() }
    }

    @Test func aLostCloudKitResponseInAnUndeclaredCallIsNotSentAgainWithTheCloudKitClassifier() async throws {
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, classifier: CloudKitRetryClassifier(), clock: TestClock())
        let (result, runs) = await Shared.callFailingFirst(with: Shared.lostResponse) { operation in
            try await hedging.execute(operation: operation)
        }
        #expect(runs == 1, "a request CloudKit may have applied was sent \(runs) times")
        #expect(throws: Shared.lostResponse) { try result.get() }
    }

    /// The hard rule stays on top: a classifier that retries everything does not replace a 429.
    @Test(arguments: TooManyRequestsShape.allCases)
    func a429IsNeverReplacedWhateverItsClassifierSays(shape: TooManyRequestsShape) async throws {
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, classifier: ClosureRetryClassifier { _, _ in .retry },
            clock: TestClock())
        let (result, runs) = await Shared.callFailingFirst(with: shape.error) {
            operation in
            try await hedging.execute(operation: operation)
        }
        #expect(runs == 1, "\(shape): a 429 was sent again")
        #expect(throws: (any Error).self) { try result.get() }
    }

    /// A classifier made for a `POST` declares the calls that say nothing not idempotent, as a
    /// policy's does: they run once, and a 503 (which says nothing of the request itself) is not
    /// sent again.
    @Test func aClassifierMadeForAPOSTRunsAnUndeclaredCallOnce() async throws {
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, classifier: HTTPRetryClassifier(method: "POST"),
            clock: TestClock())
        let (result, runs) = await Shared.callFailingFirst(with: HTTPResponseError(statusCode: 503)) { operation in
            try await hedging.execute(operation: operation)
        }
        #expect(runs == 1, "a POST was sent \(runs) times")
        #expect(throws: (any Error).self) { try result.get() }
    }
}
