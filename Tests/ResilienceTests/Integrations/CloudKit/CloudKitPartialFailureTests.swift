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

/// The batch helper, when a partial failure does not say which items failed, and when an item's
/// response was lost.
extension CloudKitPartialFailureTests {
    private func policy(
        maximumAttempts: Int = 3, classifier: (any RetryClassifier)? = nil
    ) throws -> RetryPolicy {
        guard let classifier else {
            return try RetryPolicy(
                maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        }
        return try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none, classifier: classifier,
            clock: TestClock())
    }

    /// Sends items A and B through a policy whose classifier says `classifierSays` of a lost
    /// response: the first batch comes back with B's response lost, and every later one is saved.
    /// Returns the recorder of the batches sent, in order, and the result.
    private func sendAAndBLosingBsFirstResponse(
        idempotency: Idempotency?, classifierSays: Bool
    ) async throws -> (sent: Recorder<[String]>, result: CloudKitBatchResult<String>) {
        let policy = try self.policy(classifier: CloudKitRetryClassifier(operationIsIdempotent: classifierSays))
        let sent = Recorder<[String]>()
        let result = try await policy.retryingFailedItems(["A", "B"], idempotency: idempotency) { ids in
            sent.record(ids)
            if sent.values.count == 1 {
                throw cloudKitError(
                    .partialFailure,
                    userInfo: [CloudKitErrorCode.partialErrorsKey: ["B": cloudKitError(.serverResponseLost)]])
            }
        }
        return (sent, result)
    }

    /// A partial failure whose per-item errors cannot be read (no `CKPartialErrors` entry, as
    /// when an app re-creates the error from its domain and code) says some items failed but
    /// not which: no item may be reported as saved.
    @Test func aPartialFailureWithoutReadableItemsDoesNotReportEveryItemSent() async throws {
        let policy = try self.policy(maximumAttempts: 1)
        let result = try await policy.retryingFailedItems(["A", "B"]) { _ in
            throw cloudKitError(.partialFailure)
        }
        #expect(result.sentItems.isEmpty, "reported sent: \(result.sentItems), stop: \(result.stopReason)")
        #expect(Set(result.failedItems.keys) == ["A", "B"])
        #expect(result.failedItems.values.allSatisfy { CloudKitErrorCode($0) == .partialFailure })
        #expect(result.stopReason == .partialFailure)
    }

    /// It may have been partly saved: a batch not declared idempotent is not sent again.
    @Test func aPartialFailureWithoutReadableItemsIsNotSentAgainUnlessIdempotent() async throws {
        let sent = Recorder<[String]>()
        let result = try await self.policy().retryingFailedItems(["A", "B"]) { ids in
            sent.record(ids)
            throw cloudKitError(.partialFailure)
        }
        #expect(sent.values == [["A", "B"]])
        #expect(result.attempts == 1)
        #expect(result.stopReason == .partialFailure)
    }

    /// Sending an item of an idempotent batch twice is harmless: the whole batch is sent again.
    @Test func aPartialFailureWithoutReadableItemsOfAnIdempotentBatchIsSentAgain() async throws {
        let sent = Recorder<[String]>()
        let result = try await self.policy().retryingFailedItems(["A", "B"], idempotency: .idempotent) { ids in
            sent.record(ids)
            if sent.values.count == 1 { throw cloudKitError(.partialFailure) }
        }
        #expect(sent.values == [["A", "B"], ["A", "B"]])
        #expect(result.sentItems == ["A", "B"])
        #expect(result.stopReason == .succeeded)
    }

    /// Per-item errors keyed by IDs of another kind (record names for `CKRecord.ID`s) name none
    /// of the items sent: as unreadable as none at all.
    @Test func aPartialFailureNamingNoneOfTheItemsSentIsNoReportOfSuccess() async throws {
        let result = try await self.policy().retryingFailedItems([1, 2]) { _ in
            throw cloudKitError(
                .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: ["1": cloudKitError(.zoneBusy)]])
        }
        #expect(result.sentItems.isEmpty)
        #expect(Set(result.failedItems.keys) == [1, 2])
    }

    /// The batch is declared idempotent and the policy's classifier says a lost response of an
    /// idempotent operation is worth retrying: the item whose response was lost is sent again.
    @Test func aLostResponseItemOfAnIdempotentBatchIsSentAgain() async throws {
        let (sent, result) = try await self.sendAAndBLosingBsFirstResponse(
            idempotency: .idempotent, classifierSays: true)
        #expect(sent.values == [["A", "B"], ["B"]], "sent \(sent.values)")
        #expect(result.failedItems.isEmpty, "failed: \(Array(result.failedItems.keys))")
    }

    /// The call's declaration decides, whatever the policy's classifier says; with none, the
    /// classifier's flag does, as for a whole call.
    @Test(arguments: [(Idempotency?.some(.idempotent), false), (nil, true)])
    func aLostResponseItemIsSentAgainOnEitherWord(declared: Idempotency?, classifierSays: Bool) async throws {
        let (sent, result) = try await self.sendAAndBLosingBsFirstResponse(
            idempotency: declared, classifierSays: classifierSays)
        #expect(sent.values == [["A", "B"], ["B"]], "sent \(sent.values)")
        #expect(result.failedItems.isEmpty)
    }

    /// A batch declared not idempotent never sends a lost-response item again, whatever the
    /// policy's classifier says; one that declares nothing does not when the flag is off.
    @Test(arguments: [(Idempotency?.some(.notIdempotent), true), (.notIdempotent, false), (nil, false)])
    func aLostResponseItemIsNotSentAgainWithoutAWordThatItMay(
        declared: Idempotency?, classifierSays: Bool
    ) async throws {
        let (sent, result) = try await self.sendAAndBLosingBsFirstResponse(
            idempotency: declared, classifierSays: classifierSays)
        #expect(sent.values == [["A", "B"]], "sent \(sent.values)")
        #expect(Array(result.failedItems.keys) == ["B"])
        #expect(result.sentItems == ["A"])
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
