import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A zone CloudKit deleted because the person reset their encrypted data: no retry helps until
/// the app creates the zone again and uploads its data again.
@Suite struct CloudKitEncryptedDataResetTests {
    enum SyncError: Error {
        case cloudKit(any Error)
    }

    /// A value the flag may hold, as CloudKit or an app's copy of its error puts it.
    enum Flag: String, Sendable {
        case swiftTrue, numberTrue, numberOne, swiftFalse, numberFalse, text

        var value: Any {
            switch self {
            case .swiftTrue: true
            case .numberTrue: NSNumber(value: true)
            case .numberOne: NSNumber(value: 1)
            case .swiftFalse: false
            case .numberFalse: NSNumber(value: false)
            case .text: "yes"
            }
        }
    }

    private let context = RetryContext(attempt: 1)

    private func reset(_ code: CloudKitErrorCode = .zoneNotFound, flag: Flag = .numberTrue) -> NSError {
        cloudKitError(code, userInfo: [CloudKitErrorCode.userDidResetEncryptedDataKey: flag.value])
    }

    /// The shapes one CloudKit error may reach a policy in.
    private func shapes(of error: NSError) -> [(String, any Error)] {
        [
            ("direct", error),
            ("NSUnderlyingErrorKey", NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])),
            ("user enum", SyncError.cloudKit(error)),
        ]
    }

    private func policy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    @Test func theKeyIsCloudKits() {
        // The value of `CKErrorUserDidResetEncryptedDataKey`, which CloudKit's header declares.
        #expect(CloudKitErrorCode.userDidResetEncryptedDataKey == "CKUserDidResetEncryptedData")
    }

    /// CloudKit documents the flag on `zoneNotFound`, as a Boolean `NSNumber`.
    @Test(arguments: [Flag.swiftTrue, .numberTrue, .numberOne])
    func aResetZoneStopsAsSetupRequiredInEveryShape(flag: Flag) async throws {
        for (shape, error) in self.shapes(of: self.reset(flag: flag)) {
            let runs = Counter()
            let outcome = try await self.policy().outcome(idempotency: .notIdempotent) { () async throws -> Int in
                runs.increment()
                throw error
            }
            #expect(runs.value == 1, "\(shape)")
            #expect(outcome.stopReason == .setupRequired, "\(shape)")
            #expect(RetryAdvice(for: outcome)?.reason == .setupRequired, "\(shape)")
            #expect(RetryAdvice(for: error, idempotency: .notIdempotent).reason == .setupRequired, "\(shape)")
        }
    }

    /// The flag says the zone is gone, whatever code the error carries it on: the request cannot
    /// succeed before the zone is created again, so it is neither final nor worth a retry.
    @Test(arguments: [CloudKitErrorCode.serverRejectedRequest, .internalError, .zoneBusy])
    func theFlagMakesAnyCodeSetupRequired(code: CloudKitErrorCode) async throws {
        for (shape, error) in self.shapes(of: self.reset(code)) {
            #expect(
                CloudKitRetryClassifier().decision(for: error, context: self.context)
                    == .doNotRetry(because: .setupRequired), "\(shape)")
            #expect(
                DefaultRetryClassifier().decision(for: error, context: self.context)
                    == .doNotRetry(because: .setupRequired), "\(shape)")
            #expect(RetryAdvice(for: error).reason == .setupRequired, "\(shape)")
            let outcome = try await self.policy().outcome { () async throws -> Int in throw error }
            #expect(outcome.stopReason == .setupRequired, "\(shape)")
            #expect(outcome.attempts == 1, "\(shape)")
        }
    }

    /// Nothing was written to a zone that is gone: even a call that may not run twice stops for
    /// the zone, not as an unknown outcome.
    @Test func aResetZoneIsNotAnUnknownOutcome() {
        let error = self.reset(.serverRejectedRequest)
        #expect(FailureAnalysis(error).delivery == .refused)
        #expect(Rulebook.stopReason(for: FailureAnalysis(error), idempotency: .notIdempotent) == nil)
    }

    /// A flag that says no is no reset: the code decides, as without it.
    @Test(arguments: [Flag.swiftFalse, .numberFalse, .text])
    func aFlagThatIsNotTrueChangesNothing(flag: Flag) {
        let busy = self.reset(.zoneBusy, flag: flag)
        #expect(CloudKitRetryClassifier().decision(for: busy, context: self.context) == .retry)
        let rejected = self.reset(.serverRejectedRequest, flag: flag)
        #expect(RetryAdvice(for: rejected).reason == .permanent)
    }

    /// An item of a partial failure carrying the flag fails for good, as one the zone is missing for.
    @Test func aResetItemIsNotRetryable() throws {
        let classifier = CloudKitRetryClassifier()
        #expect(!classifier.isRetryable(itemError: self.reset(.zoneBusy)))
        let partial = cloudKitError(
            .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: ["a": self.reset(.zoneBusy)]])
        #expect(try #require(CloudKitPartialFailure(partial)).failedItemIDs(as: String.self) == ["a"])
    }
}
