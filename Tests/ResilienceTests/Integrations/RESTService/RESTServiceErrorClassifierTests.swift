import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite struct RESTServiceErrorClassifierTests {
    private let context = RetryContext(attempt: 1)
    /// Stands in for the SDK's "refresh token failed" code.
    private let refreshFailed = 417

    private func decision(
        _ error: RESTServiceError, _ classifier: RESTServiceErrorClassifier = RESTServiceErrorClassifier()
    ) -> RetryDecision? {
        classifier.decision(for: error, context: self.context)
    }

    @Test func kiisDuplicateUserIsFinalAlthoughItsCodeIs503() {
        // Kii Cloud reports a duplicate user as code 503 "Duplicate entry exists", HTTP 409, USER_ALREADY_EXISTS.
        let duplicate = RESTServiceError(
            sdkCode: 503, httpStatus: 409, serverErrorCode: "USER_ALREADY_EXISTS",
            message: "User with loginName user_123456 already exists")
        #expect(self.decision(duplicate) == .doNotRetry)
        #expect(duplicate.httpStatusCode == 409)
        #expect(ErrorHints.httpStatus(of: duplicate) == 409)
        #expect(DefaultRetryClassifier().decision(for: duplicate, context: self.context) == .doNotRetry)
    }

    @Test func serverErrorStatusesAreRetried() {
        #expect(self.decision(RESTServiceError(httpStatus: 503)) == .retry)
        #expect(self.decision(RESTServiceError(httpStatus: 500)) == .retry)
        #expect(self.decision(RESTServiceError(httpStatus: 404)) == .doNotRetry)
    }

    @Test func tooManyRequestsIsNeverRetried() {
        #expect(self.decision(RESTServiceError(httpStatus: 429)) == .doNotRetry(because: .tooManyRequests))
        let eager = RESTServiceErrorClassifier(sdkCodeDecisions: [1: .retry])
        // Even a table that says retry cannot beat the policy's 429 rule; see the policy test below.
        #expect(self.decision(RESTServiceError(sdkCode: 1, httpStatus: 429), eager) == .retry)
    }

    @Test func unauthorizedStopsWithAuthenticationRequired() {
        #expect(self.decision(RESTServiceError(httpStatus: 401)) == .doNotRetry(because: .authenticationRequired))
    }

    @Test func proxyAuthenticationRequiredStopsForSignInLikeUnauthorized() {
        #expect(self.decision(RESTServiceError(httpStatus: 407)) == .doNotRetry(because: .authenticationRequired))
    }

    /// An app's own error that wraps the SDK's, as the docs invite, in the two shapes the rules read.
    static func wrapped(_ error: RESTServiceError, shape: String) -> any Error {
        switch shape {
        case "UnderlyingErrorProviding": SyncFailure(cause: error)
        default: NSError(domain: "SyncErrorDomain", code: 1, userInfo: [NSUnderlyingErrorKey: error])
        }
    }

    struct SyncFailure: Error, UnderlyingErrorProviding {
        var cause: any Error
        var underlyingErrors: [any Error] { [self.cause] }
    }

    @Test(arguments: ["UnderlyingErrorProviding", "NSUnderlyingErrorKey"])
    func aWrappedErrorIsJudgedByItsCodesAsIfThrownAsItIs(shape: String) {
        let classifier = RESTServiceErrorClassifier(tokenRefreshFailureCodes: [self.refreshFailed])
        let refresh = Self.wrapped(RESTServiceError(sdkCode: self.refreshFailed, httpStatus: 400), shape: shape)
        #expect(
            classifier.decision(for: refresh, context: self.context) == .doNotRetry(because: .authenticationRequired))
        let duplicate = Self.wrapped(
            RESTServiceError(sdkCode: 503, httpStatus: 409, serverErrorCode: "USER_ALREADY_EXISTS"), shape: shape)
        #expect(classifier.decision(for: duplicate, context: self.context) == .doNotRetry)
        let timedOut = Self.wrapped(RESTServiceError(underlying: URLError(.timedOut)), shape: shape)
        #expect(classifier.decision(for: timedOut, context: self.context) == .retry)
    }

    /// Without a status the SDK failed on its own side; its code still says the session is over.
    @Test(arguments: ["UnderlyingErrorProviding", "NSUnderlyingErrorKey"])
    func aWrappedFailedTokenRefreshWithoutAStatusIsNotRetried(shape: String) async throws {
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: RESTServiceErrorClassifier(tokenRefreshFailureCodes: [self.refreshFailed]), clock: TestClock())
        let kii = NSError(domain: "KiiErrorDomain", code: self.refreshFailed)
        let error = Self.wrapped(RESTServiceError(sdkCode: self.refreshFailed, underlying: kii), shape: shape)
        let attempts = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            attempts.increment()
            throw error
        }
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .authenticationRequired)
    }

    /// Kii's guidance: a failed token refresh means the login screen, for every call. Registering
    /// a user or saving an object is not idempotent; it is not sent again, and the person is
    /// still sent to sign in.
    @Test func aFailedTokenRefreshOnACallThatIsNotIdempotentStopsForSignIn() async throws {
        let classifier = RESTServiceErrorClassifier(tokenRefreshFailureCodes: [self.refreshFailed])
        let policy = try RetryPolicy(maximumAttempts: 4, classifier: classifier, clock: TestClock())
        let error = RESTServiceError(sdkCode: self.refreshFailed, httpStatus: 400, serverErrorCode: "invalid_grant")
        let attempts = Counter()
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () throws -> Int in
            attempts.increment()
            throw error
        }
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .authenticationRequired)
        #expect(RetryAdvice(for: outcome, classifier: classifier)?.reason == .signInRequired)
        let advice = RetryAdvice(
            for: RESTServiceError(sdkCode: self.refreshFailed, httpStatus: 400), idempotency: .notIdempotent,
            classifier: classifier)
        #expect(advice == RetryAdvice(reason: .signInRequired, isRetryUseful: false))
    }

    /// The rule that keeps a call from running twice still wins over a classifier that would retry,
    /// and a failure it stops that asks for nothing else still reports it.
    @Test func aCallThatIsNotIdempotentStillStopsAsSuchWhenTheClassifierDoesNotSaySignIn() async throws {
        let eager = RESTServiceErrorClassifier(sdkCodeDecisions: [1: .retry])
        let policy = try RetryPolicy(maximumAttempts: 4, classifier: eager, clock: TestClock())
        let retried = await policy.outcome(idempotency: .notIdempotent) { () throws -> Int in
            throw RESTServiceError(sdkCode: 1, httpStatus: 503)
        }
        #expect(retried.attempts == 1)
        #expect(retried.stopReason == .notIdempotent)
        let final = await policy.outcome(idempotency: .notIdempotent) { () throws -> Int in
            throw RESTServiceError(httpStatus: 409, serverErrorCode: "USER_ALREADY_EXISTS")
        }
        #expect(final.stopReason == .notIdempotent)
        #expect(RetryAdvice(for: final)?.reason == .outcomeUnknown)
    }

    /// The inner call reports sign-in rather than "not idempotent"; the policy around it, whose
    /// classifier would retry anything, must still not send the request again.
    @Test func aCallStoppedForSignInByTheIdempotencyRuleIsNotSentAgainByThePolicyAroundIt() async throws {
        let inner = try RetryPolicy(
            maximumAttempts: 3, classifier: RESTServiceErrorClassifier(tokenRefreshFailureCodes: [self.refreshFailed]),
            clock: TestClock())
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: .closure { _, _ in .retry },
            clock: TestClock())
        let sent = Counter()
        let refreshFailed = self.refreshFailed
        let outcome = await outer.outcome { () async throws -> Int in
            try await inner.execute(idempotency: .notIdempotent) { () throws -> Int in
                sent.increment()
                throw RESTServiceError(sdkCode: refreshFailed, httpStatus: 400)
            }
        }
        #expect(sent.value == 1)
        #expect(outcome.stopReason == .notIdempotent)
    }

    @Test func failedTokenRefreshStopsWithAuthenticationRequired() {
        let classifier = RESTServiceErrorClassifier(tokenRefreshFailureCodes: [self.refreshFailed])
        let error = RESTServiceError(sdkCode: self.refreshFailed, httpStatus: 400)
        #expect(self.decision(error, classifier) == .doNotRetry(because: .authenticationRequired))
    }

    @Test func oauthTokenErrorsStopWithAuthenticationRequired() {
        #expect(
            self.decision(RESTServiceError(httpStatus: 400, serverErrorCode: "invalid_grant"))
                == .doNotRetry(because: .authenticationRequired))
        #expect(
            self.decision(RESTServiceError(httpStatus: 503, serverErrorCode: "invalid_token"))
                == .doNotRetry(because: .authenticationRequired))
    }

    @Test func sdkCodeWinsOverServerCodeWhichWinsOverStatus() {
        let classifier = RESTServiceErrorClassifier(
            sdkCodeDecisions: [7: .retry(after: .seconds(2))],
            serverCodeDecisions: ["MAINTENANCE": .retry(after: .seconds(9)), "QUOTA": .doNotRetry]
        )
        let all = RESTServiceError(sdkCode: 7, httpStatus: 400, serverErrorCode: "QUOTA")
        #expect(self.decision(all, classifier) == .retry(after: .seconds(2)))
        let serverAndStatus = RESTServiceError(sdkCode: 8, httpStatus: 503, serverErrorCode: "QUOTA")
        #expect(self.decision(serverAndStatus, classifier) == .doNotRetry)
        let statusOnly = RESTServiceError(sdkCode: 8, httpStatus: 503, serverErrorCode: "OTHER")
        #expect(self.decision(statusOnly, classifier) == .retry)
        let maintenance = RESTServiceError(httpStatus: 400, serverErrorCode: "MAINTENANCE")
        #expect(self.decision(maintenance, classifier) == .retry(after: .seconds(9)))
    }

    @Test func explicitSDKDecisionsWinOverTokenRefreshCodes() {
        let classifier = RESTServiceErrorClassifier(
            tokenRefreshFailureCodes: [self.refreshFailed], sdkCodeDecisions: [self.refreshFailed: .retry])
        #expect(self.decision(RESTServiceError(sdkCode: self.refreshFailed), classifier) == .retry)
    }

    /// The codes a credential recovery reads as a failed token refresh are those whose decision
    /// still sends the person to sign in.
    @Test func theTokenRefreshFailureCodesAreThoseAnExplicitDecisionLeftAlone() {
        let classifier = RESTServiceErrorClassifier(
            tokenRefreshFailureCodes: [self.refreshFailed, 418, 419],
            sdkCodeDecisions: [418: .retry, 419: .doNotRetry(because: .authenticationRequired)])
        #expect(classifier.tokenRefreshFailureCodes == [self.refreshFailed, 419])
        #expect(RESTServiceErrorClassifier().tokenRefreshFailureCodes.isEmpty)
    }

    @Test func withoutAResponseTheUnderlyingErrorDecides() {
        #expect(self.decision(RESTServiceError(sdkCode: 0, underlying: URLError(.timedOut))) == .retry)
        #expect(self.decision(RESTServiceError(sdkCode: 0, underlying: URLError(.badURL))) == .doNotRetry)
        #expect(self.decision(RESTServiceError(sdkCode: 12)) == nil)
    }

    @Test func otherErrorsAreLeftToTheNextClassifier() {
        #expect(RESTServiceErrorClassifier().decision(for: URLError(.timedOut), context: self.context) == nil)
    }

    @Test func describesAllItsFields() {
        let error = RESTServiceError(
            sdkCode: 503, httpStatus: 409, serverErrorCode: "USER_ALREADY_EXISTS", message: "taken")
        #expect(error.description == "REST error (code 503, HTTP 409, USER_ALREADY_EXISTS): taken")
    }

    @Test func policyMakesOneAttemptOnA429AndReportsTheHint() async throws {
        let policy = try RetryPolicy(
            maximumAttempts: 5, classifier: RESTServiceErrorClassifier(sdkCodeDecisions: [1: .retry]),
            clock: TestClock())
        let attempts = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            attempts.increment()
            throw RESTServiceError(sdkCode: 1, httpStatus: 429, retryAfter: .seconds(60))
        }
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(60))
    }

    @Test func policyReportsAFailedTokenRefreshAsAuthenticationRequired() async throws {
        let policy = try RetryPolicy(
            maximumAttempts: 5, classifier: RESTServiceErrorClassifier(tokenRefreshFailureCodes: [self.refreshFailed]),
            clock: TestClock())
        let attempts = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            attempts.increment()
            throw RESTServiceError(sdkCode: self.refreshFailed, httpStatus: 400, serverErrorCode: "invalid_grant")
        }
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .authenticationRequired)
    }

    @Test func policyRetriesAServiceUnavailableUntilItSucceeds() async throws {
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: RESTServiceErrorClassifier(),
            clock: TestClock())
        let attempts = Counter()
        let outcome = await policy.outcome {
            if attempts.increment() < 3 {
                throw RESTServiceError(httpStatus: 503, serverErrorCode: "SERVICE_UNAVAILABLE")
            }
            return "profile"
        }
        #expect(try outcome.get() == "profile")
        #expect(outcome.attempts == 3)
    }
}
