import Foundation
import Resilience
import ResilienceTesting
import Testing

/// CloudKit errors read the same whether thrown directly or wrapped, as every other fact is.
@Suite struct CloudKitErrorShapeTests {
    enum SyncError: Error {
        case cloudKit(any Error)
    }

    private func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    private func policy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    /// The shapes one CloudKit error may reach a policy in.
    private func shapes(of error: NSError) -> [(String, any Error)] {
        [
            ("direct", error),
            ("NSUnderlyingErrorKey", NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])),
            ("user enum", SyncError.cloudKit(error)),
        ]
    }

    @Test func aLostResponseIsNotSentAgainByTheDefaultRulesInAnyShape() async throws {
        for (shape, error) in self.shapes(of: self.cloudKitError(.serverResponseLost)) {
            let sends = Counter()
            let policy = try self.policy()
            let outcome = await policy.outcome {
                sends.increment()
                throw error
            }
            #expect(sends.value == 1, "\(shape): a lost response is not safe to repeat (\(outcome.stopReason))")
        }
    }

    @Test func aPartialFailureIsNeverResentWholeInAnyShape() async throws {
        let partial = self.cloudKitError(
            .partialFailure,
            userInfo: [CloudKitErrorCode.partialErrorsKey: ["b": self.cloudKitError(.zoneBusy)]])
        for (shape, error) in self.shapes(of: partial) {
            let batches = Counter()
            let policy = try self.policy()
            let outcome = await policy.outcome {
                batches.increment()  // "a" succeeded in every batch; re-sending it repeats it
                throw error
            }
            #expect(batches.value == 1, "\(shape): the whole batch was sent \(batches.value) times")
            #expect(outcome.stopReason == .partialFailure, "\(shape)")
        }
    }

    @Test func notAuthenticatedStopsAsAuthenticationRequiredInAnyShape() async throws {
        for (shape, error) in self.shapes(of: self.cloudKitError(.notAuthenticated)) {
            let policy = try self.policy()
            let outcome = await policy.outcome { () async throws -> Int in throw error }
            #expect(outcome.stopReason == .authenticationRequired, "\(shape)")
            #expect(outcome.attempts == 1, "\(shape)")
        }
    }

    /// `retryingFailedItems` promises never to re-send the items that succeeded; an app whose save
    /// function wraps CloudKit's error in its own enum gets the whole batch sent again.
    @Test func theBatchHelperNeverResendsItemsThatSucceededWhenTheErrorIsWrapped() async throws {
        let partial = self.cloudKitError(
            .partialFailure,
            userInfo: [CloudKitErrorCode.partialErrorsKey: ["b": self.cloudKitError(.zoneBusy)]])
        let policy = try self.policy()
        let sent = Recorder<[String]>()
        _ = try? await policy.retryingFailedItems(["a", "b"]) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw SyncError.cloudKit(partial)
        }
        #expect(
            !sent.values.dropFirst().contains { $0.contains("a") }, "a succeeded and was sent again: \(sent.values)")
    }

    /// CloudKit's own cancellation stops the call as cancelled when direct; wrapped, it is retried.
    @Test func anOperationCancelledByCloudKitIsNotRetriedInAnyShape() async throws {
        for (shape, error) in self.shapes(of: self.cloudKitError(.operationCancelled)) {
            let runs = Counter()
            let policy = try self.policy()
            let outcome = await policy.outcome { () async throws -> Int in
                runs.increment()
                throw error
            }
            #expect(runs.value == 1, "\(shape): ran \(runs.value) times")
            #expect(outcome.stopReason == .cancelled, "\(shape)")
        }
    }
}
