import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A partial failure whose every item lacks its zone asks the app to create the zone, as one such
/// error does; one that mixes zone errors with other final errors stays a partial failure.
@Suite struct CloudKitZonePartialFailureTests {
    private func partialFailure(_ items: [String: NSError]) -> NSError {
        cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
    }

    private func reset(_ code: CloudKitErrorCode) -> NSError {
        cloudKitError(code, userInfo: [CloudKitErrorCode.userDidResetEncryptedDataKey: NSNumber(value: true)])
    }

    /// The partial failure as CloudKit throws it, and wrapped in `NSUnderlyingErrorKey`.
    private func shapes(of error: NSError) -> [(String, any Error)] {
        [
            ("direct", error),
            ("NSUnderlyingErrorKey", NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])),
        ]
    }

    private func outcome(failingWith error: any Error, classifier: any RetryClassifier) async throws
        -> (RetryOutcome<Int>, runs: Int)
    {
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: classifier, clock: TestClock())
        let runs = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            runs.increment()
            throw error
        }
        return (outcome, runs.value)
    }

    private var classifiers: [(String, any RetryClassifier)] {
        [("default", DefaultRetryClassifier()), ("CloudKit", CloudKitRetryClassifier(operationIsIdempotent: true))]
    }

    @Test func everyItemAZoneErrorStopsAsSetupRequired() async throws {
        let zoneOnly = self.partialFailure([
            "a": cloudKitError(.zoneNotFound),
            "b": cloudKitError(.userDeletedZone),
            "c": self.reset(.serverRejectedRequest),
            // An item's zone error wrapped in its own error is read through its chain.
            "d": NSError(domain: "App", code: 2, userInfo: [NSUnderlyingErrorKey: cloudKitError(.zoneNotFound)]),
        ])
        for (shape, error) in self.shapes(of: zoneOnly) {
            for (name, classifier) in self.classifiers {
                let (outcome, runs) = try await self.outcome(failingWith: error, classifier: classifier)
                #expect(runs == 1, "\(shape), \(name)")
                #expect(outcome.stopReason == .setupRequired, "\(shape), \(name)")
                #expect(
                    RetryAdvice(for: outcome, classifier: classifier)?.reason == .setupRequired, "\(shape), \(name)")
                #expect(RetryAdvice(for: error, classifier: classifier).reason == .setupRequired, "\(shape), \(name)")
                #expect(
                    classifier.decision(for: error, context: RetryContext(attempt: 1))
                        == .doNotRetry(because: .setupRequired), "\(shape), \(name)")
            }
        }
    }

    /// A conflict, a full quota or a missing record beside the zone errors needs more than the zone: the
    /// batch stops as a partial failure, whose items say what each needs.
    @Test(arguments: [CloudKitErrorCode.serverRecordChanged, .quotaExceeded, .unknownItem])
    func aMixStaysAPartialFailure(other: CloudKitErrorCode) async throws {
        let mixed = self.partialFailure(["a": cloudKitError(.zoneNotFound), "b": cloudKitError(other)])
        for (shape, error) in self.shapes(of: mixed) {
            for (name, classifier) in self.classifiers {
                let (outcome, runs) = try await self.outcome(failingWith: error, classifier: classifier)
                #expect(runs == 1, "\(shape), \(name)")
                #expect(outcome.stopReason == .partialFailure, "\(shape), \(name)")
                #expect(RetryAdvice(for: outcome, classifier: classifier)?.reason == .permanent, "\(shape), \(name)")
                #expect(RetryAdvice(for: error, classifier: classifier).reason == .permanent, "\(shape), \(name)")
            }
        }
    }

    /// A reset flag set to false, or a partial failure that names no item, says nothing of a zone.
    @Test func noZoneErrorNoSetup() async throws {
        let notReset = self.partialFailure([
            "a": cloudKitError(
                .serverRejectedRequest, userInfo: [CloudKitErrorCode.userDidResetEncryptedDataKey: false])
        ])
        let unnamed = cloudKitError(.partialFailure)
        for error in [notReset, unnamed] {
            let (outcome, _) = try await self.outcome(failingWith: error, classifier: DefaultRetryClassifier())
            #expect(outcome.stopReason == .partialFailure)
            #expect(RetryAdvice(for: error).reason == .permanent)
        }
    }
}
