import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A CloudKit-shaped error, as CloudKit hands it over bridged to `NSError`.
func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
    NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
}

@Suite struct CloudKitRetryClassifierTests {
    private let context = RetryContext(attempt: 1)

    @Test func rawValuesMatchApplesHeader() {
        #expect(CloudKitErrorCode.partialFailure.rawValue == 2)
        #expect(CloudKitErrorCode.networkUnavailable.rawValue == 3)
        #expect(CloudKitErrorCode.networkFailure.rawValue == 4)
        #expect(CloudKitErrorCode.serviceUnavailable.rawValue == 6)
        #expect(CloudKitErrorCode.requestRateLimited.rawValue == 7)
        #expect(CloudKitErrorCode.notAuthenticated.rawValue == 9)
        #expect(CloudKitErrorCode.serverRecordChanged.rawValue == 14)
        #expect(CloudKitErrorCode.batchRequestFailed.rawValue == 22)
        #expect(CloudKitErrorCode.zoneBusy.rawValue == 23)
        #expect(CloudKitErrorCode.limitExceeded.rawValue == 27)
        #expect(CloudKitErrorCode.serverResponseLost.rawValue == 34)
        #expect(CloudKitErrorCode.accountTemporarilyUnavailable.rawValue == 36)
    }

    @Test(arguments: [
        CloudKitErrorCode.networkUnavailable, .networkFailure, .serviceUnavailable, .requestRateLimited, .zoneBusy,
        .batchRequestFailed,
    ])
    func transientCodesAreRetried(code: CloudKitErrorCode) {
        #expect(CloudKitRetryClassifier().decision(for: cloudKitError(code), context: self.context) == .retry)
    }

    @Test(arguments: [
        CloudKitErrorCode.internalError, .badContainer, .missingEntitlement, .permissionFailure, .unknownItem,
        .invalidArguments, .serverRecordChanged, .serverRejectedRequest, .constraintViolation,
        .changeTokenExpired, .quotaExceeded, .limitExceeded, .accountTemporarilyUnavailable,
    ])
    func codesThatNeedTheAppToActAreFinal(code: CloudKitErrorCode) {
        #expect(CloudKitRetryClassifier().decision(for: cloudKitError(code), context: self.context) == .doNotRetry)
    }

    /// A deleted or missing zone stops too, but as a failure that passes once the app creates the zone again.
    @Test(arguments: [CloudKitErrorCode.userDeletedZone, .zoneNotFound])
    func aMissingZoneStopsWithSetupRequired(code: CloudKitErrorCode) {
        #expect(
            CloudKitRetryClassifier().decision(for: cloudKitError(code), context: self.context)
                == .doNotRetry(because: .setupRequired))
        #expect(FailureAnalysis(cloudKitError(code)).delivery == .refused, "there was no zone to write to")
    }

    /// Collateral of an atomic batch was rolled back with it: the request had no effect.
    @Test func collateralOfAnAtomicBatchProvesItHadNoEffect() {
        let delivery = FailureAnalysis(cloudKitError(.batchRequestFailed)).delivery
        #expect(delivery == .refused)
        #expect(delivery.provesNotSent)
    }

    @Test func notAuthenticatedStopsWithAuthenticationRequired() {
        let decision = CloudKitRetryClassifier().decision(for: cloudKitError(.notAuthenticated), context: self.context)
        #expect(decision == .doNotRetry(because: .authenticationRequired))
    }

    @Test func operationCancelledStopsAsCancelled() {
        let decision = CloudKitRetryClassifier().decision(
            for: cloudKitError(.operationCancelled), context: self.context)
        #expect(decision == .doNotRetry(because: .cancelled))
    }

    @Test func lostResponseIsRetriedOnlyForIdempotentOperations() {
        let lost = cloudKitError(.serverResponseLost)
        // Not sent again, and said to be of unknown outcome: it may have been applied.
        #expect(
            CloudKitRetryClassifier().decision(for: lost, context: self.context) == .doNotRetry(because: .notIdempotent)
        )
        #expect(
            CloudKitRetryClassifier(operationIsIdempotent: true).decision(for: lost, context: self.context) == .retry)
    }

    @Test func errorsFromOtherDomainsAreLeftToTheNextClassifier() {
        let other = NSError(domain: "SomeOtherDomain", code: 7)
        #expect(CloudKitRetryClassifier().decision(for: other, context: self.context) == nil)
        #expect(CloudKitErrorCode(other) == nil)
        #expect(CloudKitErrorCode(cloudKitError(.zoneBusy)) == .zoneBusy)
    }

    @Test func defaultClassifierFollowsTheCloudKitRules() {
        let classifier = DefaultRetryClassifier()
        #expect(classifier.decision(for: cloudKitError(.zoneBusy), context: self.context) == .retry)
        #expect(classifier.decision(for: cloudKitError(.permissionFailure), context: self.context) == .doNotRetry)
        #expect(
            classifier.decision(for: cloudKitError(.serverResponseLost), context: self.context)
                == .doNotRetry(because: .notIdempotent))
    }

    @Test func policyWaitsForCloudKitsRetryAfterOnARateLimit() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(100)), jitter: .none,
            classifier: CloudKitRetryClassifier(), clock: clock)
        let attempts = Counter()
        let call = Task {
            try await policy.execute {
                if attempts.increment() == 1 {
                    throw cloudKitError(.requestRateLimited, userInfo: [ErrorHints.cloudKitRetryAfterKey: 3.5])
                }
                return "saved"
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.milliseconds(3_500)])
        clock.advance(by: .milliseconds(3_500))
        #expect(try await call.value == "saved")
        #expect(attempts.value == 2)
    }

    @Test func policyStopsAtOnceOnAPermissionFailure() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, classifier: CloudKitRetryClassifier(), clock: TestClock())
        let outcome = await policy.outcome { () async throws -> Int in throw cloudKitError(.permissionFailure) }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notRetryable)
    }
}
