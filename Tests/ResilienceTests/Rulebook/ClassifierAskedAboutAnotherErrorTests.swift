import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A CloudKit-shaped error as a value type, the way `CKError` is one: a partial failure
/// carrying its items' errors, each of the same type.
struct CloudKitShapedValueError: CustomNSError {
    static var errorDomain: String { CloudKitErrorCode.domain }
    let errorCode: Int
    let items: [CloudKitShapedValueError]
    var errorUserInfo: [String: Any] { [:] }
}

/// Asks the CloudKit classifier about the first item of a partial failure, with the context it was given.
struct FirstItemClassifier: RetryClassifier {
    func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        guard let batch = error as? CloudKitShapedValueError, let item = batch.items.first else { return nil }
        return CloudKitRetryClassifier().decision(for: item, context: context)
    }
}

@Suite("A classifier asked about another error of the same type judges that error")
struct ClassifierAskedAboutAnotherErrorTests {
    @Test("The CloudKit classifier judges the item it is asked about, not the policy's error")
    func theCloudKitClassifierJudgesTheItemItIsAskedAbout() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, classifier: FirstItemClassifier(),
            clock: clock)
        let item = CloudKitShapedValueError(errorCode: CloudKitErrorCode.zoneBusy.rawValue, items: [])
        let batch = CloudKitShapedValueError(errorCode: CloudKitErrorCode.partialFailure.rawValue, items: [item])
        // Outside any policy, the classifier reads the item.
        #expect(CloudKitRetryClassifier().decision(for: item, context: RetryContext(attempt: 1)) == .retry)
        let attempts = Counter()
        let value = try? await policy.execute {
            attempts.increment()
            if attempts.value == 1 { throw batch }
            return 1
        }
        #expect(value == 1)
        #expect(attempts.value == 2)
        #expect(await policy.statistics.stopReasons[.partialFailure] == nil)
    }
}
