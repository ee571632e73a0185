import Foundation
import Resilience
import ResilienceTesting
import Testing

/// What a policy's observer hears of a CloudKit batch sent through `retryingFailedItems`: the
/// story the batch's result tells, with the errors the operation threw.
@Suite(.timeLimit(.minutes(5))) struct CloudKitBatchEventTests {
    private func partialFailure(_ items: [String: NSError]) -> NSError {
        cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
    }

    private func policy(_ log: RetryObserverLog) throws -> RetryPolicy {
        try RetryPolicy(
            name: "batch", maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, observer: log,
            clock: TestClock())
    }

    /// A batch declared not idempotent whose only unsent item may have been applied holds it
    /// back: its result says `.notIdempotent`, with the item failed. The observer's
    /// `callFinished` says so too, with the partial failure as the error that ended the call.
    @Test(arguments: [CloudKitErrorCode.networkFailure, .serverResponseLost, .zoneBusy])
    func callFinishedAgreesWithTheBatchResultWhenItemsAreHeldBack(code: CloudKitErrorCode) async throws {
        let log = RetryObserverLog()
        let policy = try self.policy(log)
        let thrown = self.partialFailure(["A": cloudKitError(code)])
        let result = try await policy.retryingFailedItems(["A", "B"], idempotency: .notIdempotent) { _ in
            throw thrown
        }
        #expect(result.stopReason == .notIdempotent, "\(code)")
        #expect(result.failureReasons == ["A": .notIdempotent], "\(code)")
        #expect(result.sentItems == ["B"], "\(code)")
        let finished = log.finished.withLock { $0 }
        #expect(finished.count == 1, "\(code)")
        #expect(
            finished.last?.stopReason == result.stopReason,
            "\(code): observer heard \(String(describing: finished.last?.stopReason)), result says \(result.stopReason)"
        )
        #expect(finished.last?.error.map { $0 as NSError } === thrown, "\(code): the call ended on the partial failure")
        let failed = log.failed.withLock { $0 }
        #expect(failed.count == 1 && (failed.first?.error as NSError?) === thrown, "\(code)")
        #expect(log.scheduled.withLock { $0 }.isEmpty, "\(code)")
        let statistics = await policy.statistics
        #expect(statistics.failedAttempts == 1 && statistics.stopReasons == [.notIdempotent: 1], "\(code)")
    }

    /// An item held back by a first attempt while the others, which provably had no effect, are
    /// sent again and saved: the call ends `.notIdempotent` on the second attempt, whose
    /// operation threw nothing. The observer hears of one failed attempt, one retry, and a call
    /// that ended as the result says, on the partial failure that held the item back.
    @Test func anItemHeldBackEarlierEndsTheCallAsTheResultSays() async throws {
        let log = RetryObserverLog()
        let policy = try self.policy(log)
        let thrown = self.partialFailure(["A": cloudKitError(.networkFailure), "B": cloudKitError(.networkUnavailable)])
        let sends = Counter()
        let result = try await policy.retryingFailedItems(["A", "B"], idempotency: .notIdempotent) { _ in
            if sends.increment() == 1 { throw thrown }
        }
        #expect(result.stopReason == .notIdempotent && result.attempts == 2)
        #expect(result.sentItems == ["B"] && result.failureReasons == ["A": .notIdempotent])
        let finished = log.finished.withLock { $0 }
        #expect(finished.count == 1 && finished.last?.stopReason == .notIdempotent && finished.last?.attempts == 2)
        #expect(finished.last?.error.map { $0 as NSError } === thrown)
        #expect(log.failed.withLock { $0 }.count == 1, "the second attempt's operation threw nothing")
        #expect(log.scheduled.withLock { $0 }.count == 1)
        let statistics = await policy.statistics
        #expect(statistics.failedAttempts == 1 && statistics.retries == 1)
        #expect(statistics.stopReasons == [.notIdempotent: 1])
    }

    /// The events of a batch attempt that failed partly carry "the error the operation threw"
    /// (`RetryAttemptFailedEvent.error`, `RetryScheduledEvent.error`): CloudKit's partial
    /// failure, not a wrapper of the library's own that no app can name.
    @Test func attemptEventsCarryTheErrorTheOperationThrew() async throws {
        let log = RetryObserverLog()
        let policy = try self.policy(log)
        let thrown = self.partialFailure(["A": cloudKitError(.zoneBusy)])
        let sends = Counter()
        let result = try await policy.retryingFailedItems(["A", "B"]) { _ in
            if sends.increment() == 1 { throw thrown }
        }
        #expect(result.stopReason == .succeeded)
        let failed = log.failed.withLock { $0 }
        let scheduled = log.scheduled.withLock { $0 }
        #expect(failed.count == 1 && scheduled.count == 1)
        for (kind, error) in [("attemptFailed", failed.first?.error), ("retryScheduled", scheduled.first?.error)] {
            #expect(
                error.map { $0 as NSError } === thrown,
                "\(kind) carried \(String(describing: error.map { type(of: $0) })), not the thrown partial failure")
        }
    }

    /// A partial failure that names none of the items sent fails the attempt as a whole; the
    /// events and the call's end carry that partial failure, as thrown.
    @Test func aPartialFailureNamingNoItemIsReportedAsThrown() async throws {
        let log = RetryObserverLog()
        let policy = try self.policy(log)
        let thrown = self.partialFailure(["Z": cloudKitError(.zoneBusy)])
        let result = try await policy.retryingFailedItems(["A", "B"], idempotency: .idempotent) { _ in throw thrown }
        #expect(result.stopReason == .exhausted && result.attempts == 3)
        let failed = log.failed.withLock { $0 }
        let scheduled = log.scheduled.withLock { $0 }
        let finished = log.finished.withLock { $0 }
        #expect(failed.count == 3 && scheduled.count == 2 && finished.count == 1)
        let errors = failed.map(\.error) + scheduled.map(\.error) + finished.compactMap(\.error)
        #expect(errors.count == 6 && errors.allSatisfy { ($0 as NSError) === thrown }, "\(errors.map { type(of: $0) })")
    }
}
