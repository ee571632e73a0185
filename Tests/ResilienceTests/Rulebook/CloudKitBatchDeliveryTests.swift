import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A batch that may not be sent twice is judged item by item: an item whose own error proves it
/// had no effect is sent again even when another item of the same attempt may have been applied,
/// and an item that may have been applied is held back and reported as such.
@Suite(.timeLimit(.minutes(5))) struct CloudKitBatchDeliveryTests {
    private func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    private func policy(maximumAttempts: Int = 3, maximumRetryAfter: Duration = .seconds(60)) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none,
            maximumRetryAfter: maximumRetryAfter, clock: TestClock())
    }

    /// How an item's error sits in the partial failure's dictionary.
    enum ItemShape: String, CaseIterable, Sendable {
        /// As CloudKit puts it there: the CloudKit error itself.
        case direct
        /// An error of the app's domain with the CloudKit error in `NSUnderlyingErrorKey`.
        case underlying
    }

    /// How the partial failure reaches the batch helper.
    enum FailureShape: String, CaseIterable, Sendable {
        /// As CloudKit throws it.
        case direct
        /// Wrapped in an error of the app's domain, under `NSUnderlyingErrorKey`.
        case underlying
    }

    private func item(_ error: NSError, _ shape: ItemShape) -> NSError {
        switch shape {
        case .direct: error
        case .underlying: NSError(domain: "App.Sync", code: 7, userInfo: [NSUnderlyingErrorKey: error])
        }
    }

    private func partialFailure(
        _ items: [String: NSError], items shape: ItemShape, failure: FailureShape
    ) -> NSError {
        let partial = self.cloudKitError(
            .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items.mapValues { self.item($0, shape) }])
        switch failure {
        case .direct: return partial
        case .underlying: return NSError(domain: "App.Sync", code: 1, userInfo: [NSUnderlyingErrorKey: partial])
        }
    }

    static let shapes: [(ItemShape, FailureShape)] = ItemShape.allCases.flatMap { item in
        FailureShape.allCases.map { (item, $0) }
    }

    /// A and C may have reached CloudKit (a dropped connection, a lost response); B was rolled back
    /// with its atomic batch and D never left the device: B and D are sent again, A and C are not.
    @Test(arguments: Self.shapes)
    func itemsThatProvablyHadNoEffectAreSentAgainBesideOnesThatMayHave(
        items: ItemShape, failure: FailureShape
    ) async throws {
        let sent = Recorder<[String]>()
        let result = try await self.policy().retryingFailedItems(
            ["A", "B", "C", "D", "E"], idempotency: .notIdempotent
        ) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw self.partialFailure(
                [
                    "A": self.cloudKitError(.networkFailure),
                    "B": self.cloudKitError(.batchRequestFailed),
                    "C": self.cloudKitError(.serverResponseLost),
                    "D": self.cloudKitError(.networkUnavailable),
                ], items: items, failure: failure)
        }
        let shape = "\(items) items, \(failure) failure"
        #expect(sent.values == [["A", "B", "C", "D", "E"], ["B", "D"]], "\(shape): sent \(sent.values)")
        #expect(result.sentItems == ["B", "D", "E"], "\(shape)")
        #expect(Set(result.failedItems.keys) == ["A", "C"], "\(shape)")
        #expect(result.stopReason == .notIdempotent, "\(shape): A and C are held back, unreconciled")
        #expect(result.attempts == 2, "\(shape)")
    }

    /// The items held back are reported as such: each keeps its own error, and its reason says it
    /// was not sent again because it may have been applied.
    @Test(arguments: Self.shapes)
    func itemsThatMayHaveBeenAppliedAreReportedAsNotSentAgain(items: ItemShape, failure: FailureShape) async throws {
        let result = try await self.policy().retryingFailedItems(["A", "B", "C"], idempotency: .notIdempotent) { ids in
            guard ids.contains("A") else { return }
            throw self.partialFailure(
                [
                    "A": self.cloudKitError(.networkFailure),
                    "B": self.cloudKitError(.batchRequestFailed),
                    "C": self.cloudKitError(.serverResponseLost),
                ], items: items, failure: failure)
        }
        let shape = "\(items) items, \(failure) failure"
        #expect(result.failureReasons == ["A": .notIdempotent, "C": .notIdempotent], "\(shape)")
        #expect(CloudKitErrorCode(try #require(result.failedItems["A"]?.cloudKitItem)) == .networkFailure, "\(shape)")
        #expect(
            CloudKitErrorCode(try #require(result.failedItems["C"]?.cloudKitItem)) == .serverResponseLost, "\(shape)")
        #expect(result.sentItems == ["B"], "\(shape)")
    }

    /// When every item left to send may have been applied, nothing is sent again, and the call still
    /// returns what it learnt rather than stopping the batch as a whole.
    @Test func aBatchWhoseOnlyItemsLeftMayHaveBeenAppliedSendsNothingAgain() async throws {
        let sends = Counter()
        let result = try await self.policy().retryingFailedItems(["A", "B"], idempotency: .notIdempotent) { _ in
            sends.increment()
            throw self.cloudKitError(
                .partialFailure,
                userInfo: [CloudKitErrorCode.partialErrorsKey: ["A": self.cloudKitError(.networkFailure)]])
        }
        #expect(sends.value == 1)
        #expect(result.sentItems == ["B"])
        #expect(result.failureReasons == ["A": .notIdempotent])
        #expect(result.retryAfter == nil, "nothing is left to send later")
    }

    /// An item held back has no say in the wait before the others are sent again: its hour-long
    /// hint neither delays them nor makes the policy give them up.
    @Test func anItemHeldBackDoesNotSetTheWaitForTheOthers() async throws {
        let sent = Recorder<[String]>()
        let policy = try self.policy(maximumRetryAfter: .seconds(10))
        let result = try await policy.retryingFailedItems(["A", "B"], idempotency: .notIdempotent) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw self.cloudKitError(
                .partialFailure,
                userInfo: [
                    CloudKitErrorCode.partialErrorsKey: [
                        "A": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 3_600]),
                        "B": self.cloudKitError(.batchRequestFailed),
                    ]
                ])
        }
        #expect(sent.values == [["A", "B"], ["B"]], "sent \(sent.values), stop \(result.stopReason)")
        #expect(result.failureReasons == ["A": .notIdempotent])
        #expect(result.stopReason == .notIdempotent)
    }

    /// A batch that may be sent twice sends every retryable item again, as before.
    @Test func anIdempotentBatchSendsTheItemsThatMayHaveBeenAppliedAgain() async throws {
        let sent = Recorder<[String]>()
        let result = try await self.policy().retryingFailedItems(["A", "B", "C"], idempotency: .idempotent) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw self.cloudKitError(
                .partialFailure,
                userInfo: [
                    CloudKitErrorCode.partialErrorsKey: [
                        "A": self.cloudKitError(.networkFailure),
                        "B": self.cloudKitError(.batchRequestFailed),
                        "C": self.cloudKitError(.serverResponseLost),
                    ]
                ])
        }
        #expect(sent.values == [["A", "B", "C"], ["A", "B", "C"]])
        #expect(result.failedItems.isEmpty)
        #expect(result.failureReasons.isEmpty)
    }

    /// Every failed item has a reason: the rule that held it back, what its own error asks for, or,
    /// for an item still to send when the policy gave up, why the call stopped.
    @Test func everyFailedItemHasAReason() async throws {
        let result = try await self.policy(maximumAttempts: 2).retryingFailedItems(
            ["conflict", "zone", "reset", "signIn", "busy", "saved"]
        ) { ids in
            var items: [String: NSError] = [:]
            for id in ids where id != "saved" {
                items[id] =
                    switch id {
                    case "conflict": self.cloudKitError(.serverRecordChanged)
                    case "zone": self.cloudKitError(.userDeletedZone)
                    case "reset":
                        self.cloudKitError(
                            .zoneNotFound, userInfo: [CloudKitErrorCode.userDidResetEncryptedDataKey: true])
                    case "signIn": self.cloudKitError(.notAuthenticated)
                    default: self.cloudKitError(.zoneBusy)
                    }
            }
            throw self.cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
        }
        #expect(
            result.failureReasons == [
                "conflict": .notRetryable, "zone": .setupRequired, "reset": .setupRequired,
                "signIn": .authenticationRequired, "busy": .exhausted,
            ])
        #expect(result.sentItems == ["saved"])
        #expect(result.stopReason == .exhausted)
    }
}

extension Error {
    /// The CloudKit error an item's error is or wraps in `NSUnderlyingErrorKey`.
    fileprivate var cloudKitItem: NSError? {
        let error = self as NSError
        if error.domain == CloudKitErrorCode.domain { return error }
        return error.userInfo[NSUnderlyingErrorKey] as? NSError
    }
}
