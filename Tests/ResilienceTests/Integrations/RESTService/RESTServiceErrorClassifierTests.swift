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
