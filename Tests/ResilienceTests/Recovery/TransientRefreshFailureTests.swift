import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A refresh that failed for a reason that passes (the auth server rate-limited it, was unavailable,
/// or the device was offline) says nothing of the session: the call is not sent to sign in, and a
/// later call refreshes again, once the refresh's own retry-after hint has passed.
///
/// The policies here allow one attempt, so that a call ends with the first failed refresh and
/// the next call shows what the recovery remembers; `RefreshRetryTests` covers a call that
/// has attempts left and retries the refresh.
@Suite(.timeLimit(.minutes(5)))
struct TransientRefreshFailureTests {
    static let operation = RefreshedTokenAPI.operation

    static func transient(_ shape: String) -> any Error & Sendable {
        switch shape {
        case "429 Retry-After 30": HTTPResponseError(statusCode: 429, headers: ["Retry-After": "30"])
        case "503 Retry-After 30": HTTPResponseError(statusCode: 503, headers: ["Retry-After": "30"])
        case "offline": URLError(.notConnectedToInternet)
        case "timed out": URLError(.timedOut)
        default: HTTPResponseError(statusCode: 503)
        }
    }

    /// A recovery whose first refresh fails with `error` and whose later ones succeed.
    static func recovery(failingFirstWith error: any Error & Sendable, clock: TestClock) -> (
        CredentialRecovery<String>, Counter
    ) {
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in
            if refreshes.increment() == 1 { throw error }
            return "new"
        }
        return (recovery, refreshes)
    }

    private func makePolicy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 1, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    @Test(arguments: [
        ("429 Retry-After 30", RetryStopReason.tooManyRequests), ("503 Retry-After 30", .credentialRefreshFailed),
        ("offline", .offline), ("503", .credentialRefreshFailed), ("timed out", .credentialRefreshFailed),
    ])
    func aTransientRefreshFailureDoesNotEndTheSession(shape: String, reason: RetryStopReason) async throws {
        let clock = TestClock()
        let transient = Self.transient(shape)
        let (recovery, refreshes) = Self.recovery(failingFirstWith: transient, clock: clock)
        let policy = try self.makePolicy(clock: clock)

        let first = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(first.stopReason == reason, "\(shape): not sent to sign in")
        #expect(first.attempts == 1, "\(shape): the auth server's failure is not retried at once")
        let ended: String =
            switch first.result {
            case .failure(let error): "\(error)"
            case .success: "a value"
            }
        #expect(ended == "\(transient)", "\(shape): the call ends with the refresh's error")
        clock.advance(by: .seconds(31))
        let second = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(refreshes.value == 2, "\(shape): the first failure is not remembered for good")
        #expect(throws: Never.self, "\(shape)") { try second.get() }
    }

    @Test(arguments: ["429 Retry-After 30", "503 Retry-After 30"])
    func callsWithinTheRefreshFailuresRetryAfterGetItsErrorWithoutAnotherRefresh(shape: String) async throws {
        let clock = TestClock()
        let (recovery, refreshes) = Self.recovery(failingFirstWith: Self.transient(shape), clock: clock)
        let policy = try self.makePolicy(clock: clock)

        let first = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(first.retryAfter == .seconds(30), "\(shape): the refresh's hint is reported")
        clock.advance(by: .seconds(29))
        let early = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(refreshes.value == 1, "\(shape): the auth server asked for 30 s of quiet")
        #expect(early.stopReason == first.stopReason, "\(shape)")
        clock.advance(by: .seconds(1))
        let due = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(refreshes.value == 2, "\(shape)")
        #expect(due.stopReason == .succeeded, "\(shape)")
    }

    @Test func aTransientFailureWithoutAHintIsNotRememberedAtAll() async throws {
        let clock = TestClock()
        let (recovery, refreshes) = Self.recovery(failingFirstWith: Self.transient("503"), clock: clock)
        let policy = try self.makePolicy(clock: clock)
        _ = await policy.outcome(recovering: recovery, operation: Self.operation)
        let second = await policy.outcome(recovering: recovery, operation: Self.operation)  // no time passes
        #expect(refreshes.value == 2)
        #expect(second.stopReason == .succeeded)
    }

    @Test(arguments: [
        (
            "400 invalid_grant",
            RESTServiceError(httpStatus: 400, serverErrorCode: "invalid_grant") as any Error & Sendable
        ),
        ("401", HTTPResponseError(statusCode: 401)),
        ("400", HTTPResponseError(statusCode: 400)),
        ("the app's own error", TokenService.RefreshRefused()),
    ])
    func aDefinitiveRefreshFailureSendsThePersonToSignInAndIsRemembered(shape: String, error: any Error & Sendable)
        async throws
    {
        let clock = TestClock()
        let (recovery, refreshes) = Self.recovery(failingFirstWith: error, clock: clock)
        let policy = try self.makePolicy(clock: clock)
        let first = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(first.stopReason == .authenticationRequired, "\(shape)")
        clock.advance(by: .seconds(3_600))
        let second = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(second.stopReason == .authenticationRequired, "\(shape)")
        #expect(refreshes.value == 1, "\(shape): the session is over until the person signs in")
    }

    /// A refresh an open or isolated breaker refused, or that failed with an error of the app's
    /// own that says it passes (``RetryableError``), failed for now in whatever shape it arrives:
    /// the auth client may wrap it, keep it under `NSUnderlyingErrorKey`, or bridge it.
    @Test(arguments: LibraryErrorShape.allCases)
    func aRefreshRefusedByABreakerOrFailingWithAPassingErrorDoesNotEndTheSession(
        shape: LibraryErrorShape
    ) async throws {
        var failures: [(String, any Error)] = [
            ("open breaker", CircuitBreakerOpenError(breakerName: "auth", state: .open, retryAfter: nil)),
            ("isolated breaker", CircuitBreakerOpenError(breakerName: "auth", state: .isolated, retryAfter: nil)),
        ]
        if !shape.bridges { failures.append(("passing error", AuthServerHiccup(isRetryable: true))) }
        for (name, failure) in failures {
            let clock = TestClock()
            let (recovery, refreshes) = Self.recovery(failingFirstWith: shape.wrap(failure), clock: clock)
            let policy = try self.makePolicy(clock: clock)
            let first = await policy.outcome(recovering: recovery, operation: Self.operation)
            #expect(first.stopReason == .credentialRefreshFailed, "\(shape): \(name)")
            let second = await policy.outcome(recovering: recovery, operation: Self.operation)
            #expect(refreshes.value == 2, "\(shape): \(name): the failure is not remembered")
            #expect(second.stopReason == .succeeded, "\(shape): \(name)")
        }
    }

    /// An error of the app's own that says it does not pass ends the session in every shape.
    @Test(arguments: LibraryErrorShape.allCases)
    func aRefreshFailingWithAFinalErrorOfTheAppsOwnEndsTheSession(shape: LibraryErrorShape) async throws {
        let clock = TestClock()
        let failure = shape.wrap(AuthServerHiccup(isRetryable: false))
        let (recovery, refreshes) = Self.recovery(failingFirstWith: failure, clock: clock)
        let policy = try self.makePolicy(clock: clock)
        let first = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(first.stopReason == .authenticationRequired, "\(shape)")
        _ = await policy.outcome(recovering: recovery, operation: Self.operation)
        #expect(refreshes.value == 1, "\(shape)")
    }

    /// An auth server's failure of the app's own type, which says whether it passes.
    struct AuthServerHiccup: RetryableError {
        var isRetryable: Bool
    }

    @Test func concurrentCallersShareTheOneRefreshThatFailsForNow() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in
            refreshes.increment()
            try await clock.sleep(for: .seconds(1))
            throw HTTPResponseError(statusCode: 503)
        }
        let policy = try self.makePolicy(clock: clock)
        let calls = (0..<20).map { _ in
            Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        }
        await recovery.waitForWaitingCalls(count: 20)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        var reasons: [RetryStopReason] = []
        for call in calls { reasons.append(await call.value.stopReason) }
        #expect(refreshes.value == 1)
        #expect(reasons.allSatisfy { $0 == .credentialRefreshFailed })
    }
}
