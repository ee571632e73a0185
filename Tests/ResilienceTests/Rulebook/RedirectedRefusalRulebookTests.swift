import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A refusal for credentials (401, 407, a URL loading authentication error) that records its
/// request may have been sent answered another request, as a redirect's target answers after
/// the server that redirected received the call's request: a call that is not idempotent is
/// stopped as such, not refreshed and sent again, nor sent to sign in; an idempotent one still is.
@Suite struct RedirectedRefusalRulebookTests {
    private static func refusal(_ status: Int, idempotency: Idempotency?) -> HTTPResponseError {
        HTTPResponseError(statusCode: status, requestIdempotency: idempotency, recordedDelivery: .mayHaveBeenSent)
    }

    @Test(arguments: [401, 407])
    func aRefusalThatRecordsItsRequestMayHaveBeenSentIsNoProofOfNoEffect(status: Int) {
        let analysis = FailureAnalysis(Self.refusal(status, idempotency: .notIdempotent))
        #expect(analysis.delivery == .mayHaveBeenSent)
        #expect(analysis.needsCredentials)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == .notIdempotent)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == .notIdempotent, "the request's word")
        let get = FailureAnalysis(Self.refusal(status, idempotency: .idempotent))
        #expect(Rulebook.stopReason(for: get, idempotency: .idempotent) == nil)
        // Without the record, the refusal proves the request had no effect, as before.
        #expect(FailureAnalysis(HTTPResponseError(statusCode: status)).delivery == .refused)
    }

    @Test func aURLLoadingAuthenticationErrorThatRecordsItsRequestMayHaveBeenSentIsReadTheSameWay() {
        let error = URLError(
            .userAuthenticationRequired,
            userInfo: [
                ErrorHints.requestIdempotencyKey: Idempotency.notIdempotent,
                ErrorHints.requestDeliveryKey: RequestDelivery.mayHaveBeenSent,
            ])
        let analysis = FailureAnalysis(error)
        #expect(analysis.delivery == .mayHaveBeenSent)
        #expect(RetryAdvice(for: error).reason == .outcomeUnknown)
    }

    @Test func theAdviceForARedirectedPOSTIsOutcomeUnknownAndForAGETSignIn() {
        #expect(RetryAdvice(for: Self.refusal(401, idempotency: .notIdempotent)).reason == .outcomeUnknown)
        #expect(RetryAdvice(for: Self.refusal(401, idempotency: .idempotent)).reason == .signInRequired)
        #expect(
            RetryAdvice(for: HTTPResponseError(statusCode: 401, requestIdempotency: .notIdempotent)).reason
                == .signInRequired)
    }

    /// A credential recovery around the call does not refresh and send again a `POST` whose
    /// refusal answered another request; the call stops as not idempotent.
    @Test func aRecoveringPolicyStopsAPOSTWhoseRefusalAnsweredAnotherRequest() async throws {
        let refreshes = Lock(0)
        let recovery = CredentialRecovery(credential: "stale") { _ in
            refreshes.withLock { $0 += 1 }
            return "fresh"
        }
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let attempts = Lock(0)
        let outcome: RetryOutcome<Int> = await policy.outcome(recovering: recovery) { token in
            attempts.withLock { $0 += 1 }
            guard token == "fresh" else { throw Self.refusal(401, idempotency: .notIdempotent) }
            return 1
        }
        #expect(outcome.stopReason == .notIdempotent)
        #expect(attempts.withLock { $0 } == 1)
        #expect(refreshes.withLock { $0 } == 0)
        #expect(RetryAdvice(for: outcome)?.reason == .outcomeUnknown)
    }

    /// The same refusal of a `GET` is refreshed and sent again, as any 401 is.
    @Test func aRecoveringPolicyRefreshesAndRetriesAGETWhoseRefusalAnsweredAnotherRequest() async throws {
        let recovery = CredentialRecovery(credential: "stale") { _ in "fresh" }
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let outcome: RetryOutcome<String> = await policy.outcome(recovering: recovery) { token in
            guard token == "fresh" else { throw Self.refusal(401, idempotency: .idempotent) }
            return token
        }
        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.attempts == 2)
    }
}
