import Foundation
import Resilience
import ResilienceTesting
import Testing

/// An SDK code the policy's ``RESTServiceErrorClassifier`` lists in `tokenRefreshFailureCodes`
/// (Kii's `codeRefreshTokenFailed`) ends the session under a credential recovery, whatever status
/// came with it: on the refresh's own error, and on a call's error (the SDK refreshed on its own
/// and failed). Kii asks apps to show the login screen after a failed refresh.
@Suite(.timeLimit(.minutes(5)))
struct TokenRefreshFailureCodeTests {
    /// Stands in for the SDK's "refresh token failed" code.
    static let refreshFailed = 417

    static func makePolicy(
        clock: TestClock = TestClock(), deadline: Duration? = nil,
        classifier: any RetryClassifier = RESTServiceErrorClassifier(tokenRefreshFailureCodes: [refreshFailed])
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: classifier, deadline: deadline,
            clock: clock)
    }

    struct SyncFailure: Error, UnderlyingErrorProviding {
        var cause: any Error
        var underlyingErrors: [any Error] { [self.cause] }
    }

    static func refreshError(_ shape: String) -> any Error {
        switch shape {
        case "no status": RESTServiceError(sdkCode: refreshFailed)
        case "400 invalid_grant":
            RESTServiceError(sdkCode: refreshFailed, httpStatus: 400, serverErrorCode: "invalid_grant")
        case "503 with a hint": RESTServiceError(sdkCode: refreshFailed, httpStatus: 503, retryAfter: .seconds(5))
        case "wrapped 503": SyncFailure(cause: RESTServiceError(sdkCode: refreshFailed, httpStatus: 503))
        default: RESTServiceError(sdkCode: refreshFailed, httpStatus: 503)
        }
    }

    @Test(arguments: ["no status", "400 invalid_grant", "503", "503 with a hint", "wrapped 503"])
    func aRefreshThatFailsWithTheRefreshFailedCodeSendsToSignIn(shape: String) async throws {
        let refreshes = Counter()
        let error = Self.refreshError(shape)
        let recovery = CredentialRecovery(credential: "stale", clock: TestClock()) { _ -> String in
            refreshes.increment()
            throw error
        }
        // The deadline keeps the shape with a hint from waiting for ever on the test clock,
        // should the call take the failure for a passing one.
        let policy = try Self.makePolicy(deadline: .seconds(3))
        let outcome = await policy.outcome(recovering: recovery) { _ -> String in
            throw RESTServiceError(httpStatus: 401)
        }
        #expect(outcome.stopReason == .authenticationRequired, "\(shape)")
        #expect(refreshes.value == 1, "\(shape): no refresh is tried again")
        #expect(outcome.attempts == 1, "\(shape)")
        let ended: String =
            switch outcome.result {
            case .failure(let failure): "\(failure)"
            case .success: "a value"
            }
        #expect(ended == "\(error)", "\(shape): the call ends with the refresh's error")
    }

    /// The SDK refreshed on its own and failed: the call is neither refreshed nor sent again.
    @Test(arguments: ["400 invalid_grant", "401", "wrapped 401"])
    func aCallWhoseOwnErrorCarriesTheCodeStopsForSignInWithoutARefresh(shape: String) async throws {
        let refreshes = Counter()
        let sends = Counter()
        let recovery = CredentialRecovery(credential: "stale", clock: TestClock()) { _ -> String in
            refreshes.increment()
            return "fresh"
        }
        let error: any Error =
            switch shape {
            case "401": RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 401)
            case "wrapped 401":
                NSError(
                    domain: "App", code: 1,
                    userInfo: [NSUnderlyingErrorKey: RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 401)])
            default: RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 400, serverErrorCode: "invalid_grant")
            }
        let policy = try Self.makePolicy()
        let outcome = await policy.outcome(recovering: recovery) { _ -> String in
            sends.increment()
            throw error
        }
        #expect(outcome.stopReason == .authenticationRequired, "\(shape)")
        #expect(sends.value == 1, "\(shape)")
        #expect(refreshes.value == 0, "\(shape)")
    }

    /// A plain refusal is still refreshed and sent once more with the table in place, also when
    /// the REST classifier sits in a chain.
    @Test(arguments: [false, true])
    func aPlainRefusalIsStillRecovered(chained: Bool) async throws {
        let refreshes = Counter()
        let sends = Counter()
        let recovery = CredentialRecovery(credential: "stale", clock: TestClock()) { _ -> String in
            refreshes.increment()
            return "fresh"
        }
        let table = RESTServiceErrorClassifier(tokenRefreshFailureCodes: [Self.refreshFailed])
        let classifier: any RetryClassifier =
            chained ? ClosureRetryClassifier { _, _ in nil }.fallingBack(to: table) : table
        let policy = try Self.makePolicy(classifier: classifier)
        let value = try await policy.execute(recovering: recovery) { token -> String in
            sends.increment()
            guard token == "fresh" else {
                throw RESTServiceError(sdkCode: 1, httpStatus: 401, serverErrorCode: "invalid_token")
            }
            return "profile"
        }
        #expect(value == "profile")
        #expect(refreshes.value == 1)
        #expect(sends.value == 2)
    }

    /// The table is found in a chain, and works there as on its own.
    @Test func theTableOfAChainedRESTClassifierEndsTheSessionToo() async throws {
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "stale", clock: TestClock()) { _ -> String in
            refreshes.increment()
            throw RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 503)
        }
        let classifier = ClosureRetryClassifier { _, _ in nil }
            .fallingBack(to: RESTServiceErrorClassifier(tokenRefreshFailureCodes: [Self.refreshFailed]))
        let policy = try Self.makePolicy(classifier: classifier)
        let outcome = await policy.outcome(recovering: recovery) { _ -> String in
            throw RESTServiceError(httpStatus: 401)
        }
        #expect(outcome.stopReason == .authenticationRequired)
        #expect(refreshes.value == 1)
    }

    /// Callers that share the refresh are all sent to sign in; a later caller gets the same
    /// answer without a refresh until the person signs in again.
    @Test func concurrentCallersSharingTheRefreshAreAllSentToSignInAndLaterOnesRefreshNot() async throws {
        let refreshes = Counter()
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "stale", clock: TestClock()) { stale -> String in
            refreshes.increment()
            if stale == "signed-in" { return "fresh" }
            await gate.wait()
            throw RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 503)
        }
        let policy = try Self.makePolicy()
        let operation: @Sendable (String) async throws -> String = { token in
            guard token == "fresh" else { throw RESTServiceError(httpStatus: 401) }
            return "profile"
        }
        let callers = 8
        let reasons = Task {
            await withTaskGroup(of: RetryStopReason.self) { group in
                for _ in 0..<callers {
                    group.addTask { await policy.outcome(recovering: recovery, operation: operation).stopReason }
                }
                var reasons: [RetryStopReason] = []
                for await reason in group { reasons.append(reason) }
                return reasons
            }
        }
        await recovery.waitForWaitingCalls(count: callers)
        gate.open()
        #expect(await reasons.value == Array(repeating: .authenticationRequired, count: callers))
        #expect(refreshes.value == 1)
        let later = await policy.outcome(recovering: recovery, operation: operation)
        #expect(later.stopReason == .authenticationRequired)
        #expect(refreshes.value == 1, "the failure is remembered for good")
        recovery.replace(with: "signed-in")
        let afterSignIn = await policy.outcome(recovering: recovery, operation: operation)
        #expect(afterSignIn.stopReason == .succeeded)
        #expect(refreshes.value == 2)
    }

    /// A call that stopped at its deadline before the refresh failed still has the failure
    /// remembered for good: the next call is sent to sign in without a refresh.
    @Test func aRefreshThatFailsAfterTheCallersDeadlineIsStillRememberedForGood() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "stale", clock: clock) { _ -> String in
            refreshes.increment()
            await gate.wait()
            throw RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 503)
        }
        let policy = try Self.makePolicy(clock: clock, deadline: .seconds(10))
        let call = Task {
            await policy.outcome(recovering: recovery) { _ -> String in throw RESTServiceError(httpStatus: 401) }
        }
        await recovery.waitForWaitingCalls(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(10))
        let first = await call.value
        #expect(first.stopReason == .deadlineExceeded)
        gate.open()
        // A policy without the table asks again, whether the refresh has ended by then or not: only
        // the departed call's table can have the failure remembered for good, so that no new
        // refresh runs for it.
        let plain = try Self.makePolicy(clock: clock, classifier: RESTServiceErrorClassifier())
        let probe = await plain.outcome(recovering: recovery) { _ -> String in throw RESTServiceError(httpStatus: 401) }
        #expect(probe.stopReason == .credentialRefreshFailed)
        #expect(refreshes.value == 1)
        let later = await policy.outcome(recovering: recovery) { _ -> String in throw RESTServiceError(httpStatus: 401)
        }
        #expect(later.stopReason == .authenticationRequired)
        #expect(refreshes.value == 1)
    }

    /// The rules' 429 stays a 429 whatever SDK code comes with it: the call stops with
    /// tooManyRequests, and a later call refreshes again once the hint has passed.
    @Test func a429OnTheRefreshStillStopsAsTooManyRequests() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "stale", clock: clock) { _ -> String in
            if refreshes.increment() == 1 {
                throw RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 429, retryAfter: .seconds(30))
            }
            return "fresh"
        }
        let policy = try Self.makePolicy(clock: clock)
        let operation: @Sendable (String) async throws -> String = { token in
            guard token == "fresh" else { throw RESTServiceError(httpStatus: 401) }
            return "profile"
        }
        let first = await policy.outcome(recovering: recovery, operation: operation)
        #expect(first.stopReason == .tooManyRequests)
        #expect(first.retryAfter == .seconds(30))
        clock.advance(by: .seconds(30))
        let later = await policy.outcome(recovering: recovery, operation: operation)
        #expect(later.stopReason == .succeeded)
        #expect(refreshes.value == 2)
    }

    /// Without the code in its table, the policy reads a 503 refresh as failing for now, as before.
    @Test func withoutTheCodeInTheTableA503RefreshIsRiddenOut() async throws {
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "stale", clock: TestClock()) { _ -> String in
            refreshes.increment()
            throw RESTServiceError(sdkCode: Self.refreshFailed, httpStatus: 503)
        }
        let policy = try Self.makePolicy(classifier: RESTServiceErrorClassifier())
        let outcome = await policy.outcome(recovering: recovery) { _ -> String in
            throw RESTServiceError(httpStatus: 401)
        }
        #expect(outcome.stopReason == .credentialRefreshFailed)
        #expect(refreshes.value == 3)
    }
}
