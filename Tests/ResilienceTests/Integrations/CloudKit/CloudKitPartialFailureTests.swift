import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite struct CloudKitPartialFailureTests {
    private let context = RetryContext(attempt: 1)

    /// A typical atomic batch: A conflicts, B and C are collateral of it.
    private func conflictBatch() -> NSError {
        cloudKitError(
            .partialFailure,
            userInfo: [
                CloudKitErrorCode.partialErrorsKey: [
                    "A": cloudKitError(.serverRecordChanged),
                    "B": cloudKitError(.batchRequestFailed),
                    "C": cloudKitError(.batchRequestFailed),
                ]
            ])
    }

    @Test func splitsCollateralFromItemsThatFailedForGood() throws {
        let failure = try #require(CloudKitPartialFailure(self.conflictBatch()))
        #expect(Set(failure.retryableItemIDs(as: String.self)) == ["B", "C"])
        #expect(failure.failedItemIDs(as: String.self) == ["A"])
        #expect(CloudKitErrorCode(try #require(failure.failedItems["A"])) == .serverRecordChanged)
        #expect(!failure.isRetryable)
        #expect(failure.description == "partialFailure: 2 retryable, 1 failed")
    }

    @Test func transientItemsAreRetryableWithTheLongestHint() throws {
        let error = cloudKitError(
            .partialFailure,
            userInfo: [
                CloudKitErrorCode.partialErrorsKey: [
                    1: cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 2]),
                    2: cloudKitError(.networkFailure),
                    3: cloudKitError(.batchRequestFailed),
                    4: cloudKitError(.serviceUnavailable, userInfo: [ErrorHints.cloudKitRetryAfterKey: 5.0]),
                ]
            ])
        let failure = try #require(CloudKitPartialFailure(error))
        #expect(Set(failure.retryableItemIDs(as: Int.self)) == [1, 2, 3, 4])
        #expect(failure.failedItems.isEmpty)
        #expect(failure.isRetryable)
        #expect(failure.retryAfter == .seconds(5))
        // Even when every item may be retried, the batch is not re-sent whole: the items
        // that succeeded are in no error, and a whole-batch retry would send them again.
        #expect(
            CloudKitRetryClassifier().decision(for: error, context: self.context)
                == .doNotRetry(because: .partialFailure))
    }

    @Test func aBatchWithAPermanentItemIsNotRetriedWhole() {
        #expect(
            CloudKitRetryClassifier().decision(for: self.conflictBatch(), context: self.context)
                == .doNotRetry(because: .partialFailure))
        #expect(
            DefaultRetryClassifier().decision(for: self.conflictBatch(), context: self.context)
                == .doNotRetry(because: .partialFailure))
    }

    @Test func lostResponsesFollowTheClassifiersIdempotency() throws {
        let error = cloudKitError(
            .partialFailure,
            userInfo: [CloudKitErrorCode.partialErrorsKey: ["X": cloudKitError(.serverResponseLost)]])
        #expect(try #require(CloudKitPartialFailure(error)).failedItemIDs(as: String.self) == ["X"])
        let idempotent = CloudKitRetryClassifier(operationIsIdempotent: true)
        #expect(
            try #require(CloudKitPartialFailure(error, classifier: idempotent)).retryableItemIDs(as: String.self) == [
                "X"
            ])
    }

    @Test func itemErrorsFromOtherDomainsFailForGood() throws {
        let error = cloudKitError(
            .partialFailure,
            userInfo: [CloudKitErrorCode.partialErrorsKey: ["Z": NSError(domain: "Other", code: 4)]])
        #expect(try #require(CloudKitPartialFailure(error)).failedItemIDs(as: String.self) == ["Z"])
    }

    @Test func aPartialFailureWithoutItemsIsNotRetryable() throws {
        let failure = try #require(CloudKitPartialFailure(cloudKitError(.partialFailure)))
        #expect(failure.retryableItems.isEmpty && failure.failedItems.isEmpty)
        #expect(!failure.isRetryable)
        #expect(
            CloudKitRetryClassifier().decision(for: cloudKitError(.partialFailure), context: self.context)
                == .doNotRetry(because: .partialFailure))
    }

    @Test func otherErrorsAreNotPartialFailures() {
        #expect(CloudKitPartialFailure(cloudKitError(.zoneBusy)) == nil)
        #expect(CloudKitPartialFailure(NSError(domain: "Other", code: 2)) == nil)
    }

    @Test func retryingOnlyTheRetryableItemsSavesEachRecordOnce() async throws {
        // A fake atomic zone: record "A" conflicts on the first save, so the whole batch fails.
        let store = FakeZone(conflicting: ["A"])
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        do {
            try store.save(["A", "B", "C"])
            Issue.record("the first save should fail")
        } catch {
            let failure = try #require(CloudKitPartialFailure(error))
            let again = failure.retryableItemIDs(as: String.self).sorted()
            try await policy.execute { try store.save(again) }
        }
        #expect(store.saved == ["B", "C"])
        #expect(store.saveCalls == 2)
    }
}

/// An atomic record zone that rejects saves of conflicting records, as CloudKit does.
private final class FakeZone {
    let conflicting: Set<String>
    private(set) var saved: [String] = []
    private(set) var saveCalls = 0

    init(conflicting: Set<String>) {
        self.conflicting = conflicting
    }

    func save(_ ids: [String]) throws {
        self.saveCalls += 1
        let conflicts = ids.filter(self.conflicting.contains)
        guard conflicts.isEmpty else {
            var items: [String: NSError] = [:]
            for id in ids {
                items[id] = cloudKitError(self.conflicting.contains(id) ? .serverRecordChanged : .batchRequestFailed)
            }
            throw cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
        }
        self.saved.append(contentsOf: ids)
    }
}
