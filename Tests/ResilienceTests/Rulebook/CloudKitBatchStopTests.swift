import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The batch helper's wait is set by the items it sends again, and a call that stops, cancelled or given
/// up by the policy, still says which items were saved once an attempt has reported on them.
@Suite(.timeLimit(.minutes(5))) struct CloudKitBatchStopTests {
    private func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    private func partialFailure(_ items: [String: NSError]) -> NSError {
        self.cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
    }

    /// The wait before re-sending is the longest retry-after hint among the retryable items: an item
    /// that failed for good, and is not sent again, has no say in it.
    @Test func anItemThatFailedForGoodDoesNotSetTheWaitForTheOthers() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, maximumRetryAfter: .seconds(7_200),
            clock: clock)
        let sent = Recorder<[String]>()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b", "c"]) { ids in
                sent.record(ids)
                guard sent.values.count == 1 else { return }
                throw self.partialFailure([
                    "b": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 2]),
                    "c": self.cloudKitError(.quotaExceeded, userInfo: [ErrorHints.cloudKitRetryAfterKey: 3_600]),
                ])
            }
        }
        await clock.waitForSleepers()
        #expect(clock.sleepRequests == [.seconds(2)], "only b is sent again, and b asked for 2 s")
        clock.advance(by: .seconds(3_600))
        let result = try await call.value
        #expect(sent.values == [["a", "b", "c"], ["b"]])
        #expect(result.stopReason == .succeeded)
    }

    /// With the default `maximumRetryAfter` (60 s), a failed item's hour-long hint would give the retryable item up.
    @Test func anItemThatFailedForGoodDoesNotGiveUpTheOthers() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let sent = Recorder<[String]>()
        let result = try await policy.retryingFailedItems(["a", "b", "c"]) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw self.partialFailure([
                "b": self.cloudKitError(.zoneBusy),
                "c": self.cloudKitError(.quotaExceeded, userInfo: [ErrorHints.cloudKitRetryAfterKey: 3_600]),
            ])
        }
        #expect(sent.values == [["a", "b", "c"], ["b"]], "b asked for no wait at all")
        #expect(result.stopReason == .succeeded)
        #expect(Set(result.failedItems.keys) == ["c"])
    }

    /// A policy that gives up on an hour-long wait still tells the caller when to send the rest:
    /// the partial failure's own hint (top level) and its retryable items' travel with the result.
    @Test func aBatchGivenUpOnALongWaitReturnsTheAdvice() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let result = try await policy.retryingFailedItems(["a", "b", "c"]) { _ in
            throw self.cloudKitError(
                .partialFailure,
                userInfo: [
                    ErrorHints.cloudKitRetryAfterKey: 3_600,
                    CloudKitErrorCode.partialErrorsKey: [
                        "b": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 5])
                    ],
                ])
        }
        #expect(result.attempts == 1, "the default maximumRetryAfter (60 s) refuses the hour")
        #expect(result.stopReason == .retryAfterTooLong)
        #expect(Set(result.failedItems.keys) == ["b"])
        #expect(result.retryAfter == .seconds(3_600))
    }

    /// The advice is the last failure's: an item hint after a top-level one replaces it, and a call that
    /// ends with nothing left to send carries none.
    @Test func theAdviceIsTheLastFailuresAndOnlyWhileItemsRemain() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let call = Task {
            try await policy.retryingFailedItems(["a", "b"]) { ids in
                if ids.count == 2 {
                    throw self.cloudKitError(
                        .partialFailure,
                        userInfo: [
                            ErrorHints.cloudKitRetryAfterKey: 30,
                            CloudKitErrorCode.partialErrorsKey: ["b": self.cloudKitError(.zoneBusy)],
                        ])
                }
                throw self.partialFailure([
                    "b": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 4])
                ])
            }
        }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(30))
        let result = try await call.value
        #expect(result.attempts == 2)
        #expect(result.stopReason == .exhausted)
        #expect(result.retryAfter == .seconds(4))

        let done = try await policy.retryingFailedItems(["a", "b"]) { ids in
            guard ids.count == 2 else { return }
            throw self.partialFailure(["b": self.cloudKitError(.zoneBusy)])
        }
        #expect(done.stopReason == .succeeded)
        #expect(done.retryAfter == nil)
        let forGood = try await policy.retryingFailedItems(["a", "b"]) { _ in
            throw self.cloudKitError(
                .partialFailure,
                userInfo: [
                    ErrorHints.cloudKitRetryAfterKey: 30,
                    CloudKitErrorCode.partialErrorsKey: ["b": self.cloudKitError(.permissionFailure)],
                ])
        }
        #expect(Set(forGood.failedItems.keys) == ["b"])
        #expect(forGood.retryAfter == nil, "b is not sent again, so there is nothing to schedule")
    }

    @Test func theSplitHintIgnoresItemsThatFailedForGood() throws {
        let failure = try #require(
            CloudKitPartialFailure(
                self.partialFailure([
                    "b": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 2]),
                    "c": self.cloudKitError(.quotaExceeded, userInfo: [ErrorHints.cloudKitRetryAfterKey: 3_600]),
                ])))
        #expect(failure.retryAfter == .seconds(2))
    }

    /// The partial failure arrives wrapped in an error of the app's that kept the server's
    /// `Retry-After` of 120 s: the items are sent again once it has passed, as `execute` would wait.
    @Test func aHintOnTheWrapperOfAPartialFailureSetsTheWait() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, maximumRetryAfter: .seconds(600),
            clock: clock)
        let sent = Recorder<[String]>()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b"]) { ids in
                sent.record(ids)
                guard sent.values.count == 1 else { return }
                throw NSError(
                    domain: "SyncService", code: 1,
                    userInfo: [
                        NSUnderlyingErrorKey: self.partialFailure(["b": self.cloudKitError(.zoneBusy)]),
                        "Retry-After": "120",
                    ])
            }
        }
        // The wait before re-sending b is asked of the clock whatever its length (a zero one too).
        await clock.waitForSleepRequests(count: 1)
        #expect(clock.sleepRequests == [.seconds(120)], "b waits out the wrapper's 120 s")
        clock.advance(by: .seconds(120))
        let result = try await call.value
        #expect(sent.values == [["a", "b"], ["b"]])
        #expect(result.stopReason == .succeeded)
    }

    @Test func theSplitHintCountsTheWrappersOfThePartialFailure() throws {
        let wrapped = NSError(
            domain: "SyncService", code: 1,
            userInfo: [
                NSUnderlyingErrorKey: self.partialFailure([
                    "b": self.cloudKitError(.zoneBusy, userInfo: [ErrorHints.cloudKitRetryAfterKey: 2])
                ]),
                "Retry-After": "120",
            ])
        #expect(try #require(CloudKitPartialFailure(wrapped)).retryAfter == .seconds(120))
    }

    /// A 429 stops the call; the result still tells when to send the rest, from the 429's
    /// `Retry-After`: on the error wrapping the partial failure, or on an item that failed for good
    /// with it (the pushback), though the item sent again asked for no wait.
    @Test(arguments: [false, true])
    func a429ThatStopsABatchReportsItsHint(onAnItem: Bool) async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let result = try await policy.retryingFailedItems(["a", "b", "c"]) { _ in
            if onAnItem {
                throw self.cloudKitError(
                    .partialFailure,
                    userInfo: [
                        CloudKitErrorCode.partialErrorsKey: [
                            "b": self.cloudKitError(.zoneBusy),
                            "c": HTTPResponseError(statusCode: 429, headers: ["Retry-After": "120"]),
                        ] as [String: any Error]
                    ])
            }
            throw NSError(
                domain: "SyncService", code: 1,
                userInfo: [
                    NSUnderlyingErrorKey: self.partialFailure(["b": self.cloudKitError(.zoneBusy)]),
                    "HTTPStatusCode": 429, "Retry-After": "120",
                ])
        }
        #expect(result.stopReason == .tooManyRequests)
        #expect(result.failedItems["b"] != nil)
        #expect(result.retryAfter == .seconds(120))
    }

    /// Cancelled while its first attempt is in flight, the call returns what that attempt reported.
    @Test func aBatchCancelledDuringAnAttemptReturnsWhatItLearnt() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let sends = Counter()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b"]) { _ in
                sends.increment()
                withUnsafeCurrentTask { $0?.cancel() }  // the caller gives up while the batch is in flight
                throw self.partialFailure(["b": self.cloudKitError(.zoneBusy)])
            }
        }
        let result = try await call.value
        #expect(sends.value == 1)
        #expect(result.stopReason == .cancelled)
        #expect(result.sentItems == ["a"])
        #expect(CloudKitErrorCode(try #require(result.failedItems["b"])) == .zoneBusy)
    }

    /// Cancelled during the wait before re-sending, the call returns the same kind of result: a was saved,
    /// c failed for good, b was still failing.
    @Test func aBatchCancelledDuringTheWaitReturnsWhatItLearnt() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(5)), jitter: .none, clock: clock)
        let sends = Counter()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b", "c"]) { _ in
                sends.increment()
                throw self.partialFailure([
                    "b": self.cloudKitError(.zoneBusy), "c": self.cloudKitError(.serverRecordChanged),
                ])
            }
        }
        await clock.waitForSleepers()
        call.cancel()
        let result = try await call.value
        #expect(sends.value == 1)
        #expect(result.stopReason == .cancelled)
        #expect(result.sentItems == ["a"])
        #expect(CloudKitErrorCode(try #require(result.failedItems["b"])) == .zoneBusy)
        #expect(CloudKitErrorCode(try #require(result.failedItems["c"])) == .serverRecordChanged)
    }

    /// Cancelled before any attempt reported on the items, there is nothing to return: the call throws.
    @Test func aBatchCancelledBeforeAnyReportThrows() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(5)), jitter: .none, clock: clock)
        let call = Task {
            try await policy.retryingFailedItems(["a", "b"]) { _ in throw self.cloudKitError(.networkFailure) }
        }
        await clock.waitForSleepers()
        call.cancel()
        let result = await call.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    /// A whole-attempt failure after a partial one ends the call with a result, not an error that would hide
    /// the items already saved.
    @Test func aWholeFailureAfterAPartialOneStillReportsTheSavedItems() async throws {
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let sent = Recorder<[String]>()
        let result = try await policy.retryingFailedItems(["a", "b"]) { ids in
            sent.record(ids)
            if sent.values.count == 1 { throw self.partialFailure(["b": self.cloudKitError(.zoneBusy)]) }
            throw self.cloudKitError(.networkFailure)
        }
        #expect(sent.values == [["a", "b"], ["b"]])
        #expect(result.stopReason == .exhausted)
        #expect(result.sentItems == ["a"])
        #expect(CloudKitErrorCode(try #require(result.failedItems["b"])) == .networkFailure)
    }
}
