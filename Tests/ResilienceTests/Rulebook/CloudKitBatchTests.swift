import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite struct CloudKitBatchTests {
    private func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    @Test func onlyTheItemsThatFailedRetryablyAreSentAgain() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let sent = Recorder<[String]>()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b", "c", "d"]) { ids in
                sent.record(ids)
                guard sent.values.count == 1 else { return }
                throw self.cloudKitError(
                    .partialFailure,
                    userInfo: [
                        CloudKitErrorCode.partialErrorsKey: [
                            "b": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 2]),
                            "c": self.cloudKitError(.serverRecordChanged),
                        ]
                    ])
            }
        }
        await clock.waitForSleepers()
        #expect(clock.sleepRequests == [.seconds(2)], "the items' hint is honoured")
        clock.advance(by: .seconds(2))
        let result = try await call.value
        #expect(sent.values == [["a", "b", "c", "d"], ["b"]], "a and d succeeded and are not sent again")
        #expect(result.sentItems == ["a", "b", "d"])
        #expect(Array(result.failedItems.keys) == ["c"])
        #expect(result.attempts == 2)
    }

    @Test func anItemAnsweredWith429EndsTheBatch() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let calls = Counter()
        let result = try await policy.retryingFailedItems([1, 2]) { _ in
            calls.increment()
            throw self.cloudKitError(
                .partialFailure,
                userInfo: [CloudKitErrorCode.partialErrorsKey: [2: HTTPResponseError(statusCode: 429)]])
        }
        #expect(calls.value == 1)
        #expect(result.stopReason == .tooManyRequests)
        #expect(result.sentItems == [1])
        #expect(result.failedItems[2] is HTTPResponseError)
    }

    @Test func aWholeBatchFailureIsRetriedAndThenThrown() async throws {
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let calls = Counter()
        await #expect(throws: NSError.self) {
            try await policy.retryingFailedItems([1, 2]) { _ in
                calls.increment()
                throw self.cloudKitError(.networkUnavailable)
            }
        }
        #expect(calls.value == 2)
    }

    /// In an atomic zone the items that were fine fail as `batchRequestFailed`, rolled back with the batch:
    /// they had no effect, so even a batch that may not be sent twice sends them again.
    @Test func theCollateralOfAnAtomicBatchIsSentAgainWhenTheBatchIsNotIdempotent() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let sent = Recorder<[String]>()
        let result = try await policy.retryingFailedItems(["A", "B", "C"], idempotency: .notIdempotent) { names in
            sent.record(names)
            guard names.contains("A") else { return }
            var items: [String: NSError] = [:]
            for name in names {
                items[name] = self.cloudKitError(name == "A" ? .serverRecordChanged : .batchRequestFailed)
            }
            throw self.cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
        }
        #expect(sent.values == [["A", "B", "C"], ["B", "C"]])
        #expect(result.stopReason == .succeeded)
        #expect(result.sentItems == ["B", "C"])
        #expect(Array(result.failedItems.keys) == ["A"])
    }
}
