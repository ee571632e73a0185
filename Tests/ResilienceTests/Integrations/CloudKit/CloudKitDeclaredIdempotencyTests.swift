import Foundation
import Resilience
import ResilienceTesting
import Testing

/// How a call's idempotency, declared or not, decides what CloudKit failures it sends again and
/// what it reports: a partial failure whose every item lacks its zone, a batch that holds items
/// back, a lost response beside a dropped connection, and the codes by which CloudKit is busy.
@Suite(.timeLimit(.minutes(5))) struct CloudKitDeclaredIdempotencyTests {
    private func policy(
        maximumAttempts: Int = 3, maximumRetryAfter: Duration = .seconds(60), clock: TestClock = TestClock()
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none,
            maximumRetryAfter: maximumRetryAfter, clock: clock)
    }

    private func partialFailure(_ items: [String: NSError]) -> NSError {
        cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
    }

    // MARK: A partial failure whose every item lacks its zone

    /// Each item it names failed for want of its zone, and the items it does not name were saved:
    /// nothing is of unknown outcome, and creating the zone is what the batch needs, whether or not
    /// the call may run twice. Nothing is sent again either way.
    @Test(arguments: [Idempotency.notIdempotent, .idempotent])
    func aPartialFailureOfMissingZonesStopsAsSetupRequiredWhateverTheDeclaration(
        declared: Idempotency
    ) async throws {
        let zoneOnly = self.partialFailure([
            "a": cloudKitError(.zoneNotFound),
            "b": cloudKitError(.userDeletedZone),
            "c": cloudKitError(
                .serverRejectedRequest, userInfo: [CloudKitErrorCode.userDidResetEncryptedDataKey: true]),
        ])
        let wrapped = NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: zoneOnly])
        for (shape, error) in [("direct", zoneOnly), ("NSUnderlyingErrorKey", wrapped)] {
            let runs = Counter()
            let outcome = try await self.policy().outcome(idempotency: declared) { () async throws -> Int in
                runs.increment()
                throw error
            }
            #expect(runs.value == 1, "\(declared), \(shape)")
            #expect(outcome.stopReason == .setupRequired, "\(declared), \(shape)")
            #expect(RetryAdvice(for: outcome)?.reason == .setupRequired, "\(declared), \(shape)")
            #expect(RetryAdvice(for: error, idempotency: declared).reason == .setupRequired, "\(declared), \(shape)")
        }
    }

    /// A dropped connection beside the missing zone leaves that item's outcome unknown: the call
    /// declared not idempotent still stops as such.
    @Test func aMissingZoneBesideAnItemOfUnknownOutcomeIsStillNotIdempotent() async throws {
        let error = self.partialFailure(["a": cloudKitError(.zoneNotFound), "b": cloudKitError(.networkFailure)])
        let outcome = try await self.policy().outcome(idempotency: .notIdempotent) { () async throws -> Int in
            throw error
        }
        #expect(outcome.stopReason == .notIdempotent)
        #expect(RetryAdvice(for: outcome)?.reason == .outcomeUnknown)
    }

    // MARK: A batch that holds items back

    /// The only items left to send may have been applied and are held back: the batch did not
    /// succeed in full, and its stop reason says why items remain.
    @Test(arguments: [CloudKitErrorCode.networkFailure, .serverResponseLost, .zoneBusy])
    func aBatchThatHeldItemsBackDoesNotReportSuccess(code: CloudKitErrorCode) async throws {
        let sent = Recorder<[String]>()
        let result = try await self.policy().retryingFailedItems(["A", "B", "C"], idempotency: .notIdempotent) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw self.partialFailure(["A": cloudKitError(code), "B": cloudKitError(.batchRequestFailed)])
        }
        #expect(sent.values == [["A", "B", "C"], ["B"]], "\(code)")
        #expect(result.failureReasons == ["A": .notIdempotent], "\(code)")
        #expect(result.stopReason == .notIdempotent, "\(code)")
        #expect(result.retryAfter == nil, "\(code): nothing is left to send later")
    }

    /// Items that failed for good (a conflict) are settled: they were not saved. A batch that held
    /// nothing back and sent the rest still succeeded, as before.
    @Test func aBatchWhoseOtherItemsFailedForGoodStillSucceeds() async throws {
        let result = try await self.policy().retryingFailedItems(["A", "B"], idempotency: .notIdempotent) { ids in
            guard ids.contains("A") else { return }
            throw self.partialFailure(["A": cloudKitError(.serverRecordChanged)])
        }
        #expect(result.failureReasons == ["A": .notRetryable])
        #expect(result.stopReason == .succeeded)
    }

    /// A call that stopped for another reason with items held back keeps that reason.
    @Test func aBatchThatStoppedForAnotherReasonKeepsIt() async throws {
        let result = try await self.policy(maximumAttempts: 2).retryingFailedItems(
            ["A", "B"], idempotency: .notIdempotent
        ) { ids in
            var items: [String: NSError] = ["B": cloudKitError(.batchRequestFailed)]
            if ids.contains("A") { items["A"] = cloudKitError(.networkFailure) }
            throw self.partialFailure(items)
        }
        #expect(result.failureReasons == ["A": .notIdempotent, "B": .exhausted])
        #expect(result.stopReason == .exhausted)
    }

    // MARK: A lost response beside a dropped connection

    /// With no declaration, each item is read as a whole call that declares nothing: the dropped
    /// connection is sent again (every call through a policy is taken as idempotent), the lost
    /// response is not (it needs an explicit word) and is held back as possibly applied.
    @Test func withNoDeclarationALostResponseIsHeldBackAndADroppedConnectionSentAgain() async throws {
        let sent = Recorder<[String]>()
        let result = try await self.policy().retryingFailedItems(["A", "B", "C"]) { ids in
            sent.record(ids)
            guard sent.values.count == 1 else { return }
            throw self.partialFailure(["A": cloudKitError(.networkFailure), "B": cloudKitError(.serverResponseLost)])
        }
        #expect(sent.values == [["A", "B", "C"], ["A"]], "sent \(sent.values)")
        #expect(result.failureReasons == ["B": .notIdempotent])
        #expect(result.sentItems == ["A", "C"])
        #expect(result.stopReason == .notIdempotent)
    }

    /// Declared not idempotent, by the call or by a call around it, both are held back alike.
    @Test(arguments: [true, false])
    func declaredNotIdempotentBothAreHeldBack(byAnEnclosingCall: Bool) async throws {
        let sent = Recorder<[String]>()
        let send = { (declared: Idempotency?) async throws -> CloudKitBatchResult<String> in
            try await self.policy().retryingFailedItems(["A", "B", "C"], idempotency: declared) { ids in
                sent.record(ids)
                guard sent.values.count == 1 else { return }
                throw self.partialFailure([
                    "A": cloudKitError(.networkFailure), "B": cloudKitError(.serverResponseLost),
                ])
            }
        }
        let result =
            byAnEnclosingCall
            ? try await self.policy().execute(idempotency: .notIdempotent) { try await send(nil) }
            : try await send(.notIdempotent)
        #expect(sent.values == [["A", "B", "C"]], "sent \(sent.values)")
        #expect(result.failureReasons == ["A": .notIdempotent, "B": .notIdempotent])
        #expect(result.sentItems == ["C"])
    }

    // MARK: The codes by which CloudKit is busy

    /// `serviceUnavailable`, `zoneBusy` and `requestRateLimited` are CloudKit's answers, not a
    /// proof that nothing was applied: a call declared not idempotent is sent once and stops as such.
    @Test(arguments: [CloudKitErrorCode.serviceUnavailable, .zoneBusy, .requestRateLimited])
    func aBusyAnswerEndsACallDeclaredNotIdempotent(code: CloudKitErrorCode) async throws {
        let error = cloudKitError(code, userInfo: [ErrorHints.cloudKitRetryAfterKey: 2])
        #expect(FailureAnalysis(error).delivery == .answered, "\(code)")
        let runs = Counter()
        let outcome = try await self.policy().outcome(idempotency: .notIdempotent) { () async throws -> Int in
            runs.increment()
            throw error
        }
        #expect(runs.value == 1, "\(code)")
        #expect(outcome.stopReason == .notIdempotent, "\(code)")
        #expect(outcome.retryAfter == .seconds(2), "\(code): the hint is still reported")
    }

    /// `requestRateLimited` is CloudKit's own throttle, not an HTTP 429: an item of an idempotent
    /// batch is sent again, never sooner than its hint, and a hint over the policy's limit ends the call.
    @Test func aRateLimitedItemIsSentAgainNoSoonerThanItsHint() async throws {
        let clock = TestClock()
        let policy = try self.policy(clock: clock)
        let sent = Recorder<[String]>()
        let call = Task {
            try await policy.retryingFailedItems(["A", "B"]) { ids in
                sent.record(ids)
                guard sent.values.count == 1 else { return }
                throw self.partialFailure([
                    "A": cloudKitError(.requestRateLimited, userInfo: [ErrorHints.cloudKitRetryAfterKey: 7.5])
                ])
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.milliseconds(7_500)])
        #expect(sent.values == [["A", "B"]])
        clock.advance(by: .milliseconds(7_500))
        let result = try await call.value
        #expect(sent.values == [["A", "B"], ["A"]])
        #expect(result.stopReason == .succeeded)

        let limited = try await self.policy(maximumRetryAfter: .seconds(5)).retryingFailedItems(["A"]) { _ in
            throw self.partialFailure([
                "A": cloudKitError(.requestRateLimited, userInfo: [ErrorHints.cloudKitRetryAfterKey: 7.5])
            ])
        }
        #expect(limited.attempts == 1)
        #expect(limited.stopReason == .retryAfterTooLong)
        #expect(limited.retryAfter == .milliseconds(7_500))
    }
}
