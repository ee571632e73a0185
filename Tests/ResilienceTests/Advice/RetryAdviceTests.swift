import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The advice for a person, for every family of errors the library knows.
@Suite struct RetryAdviceTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let error: any Error
        let idempotency: Idempotency?
        let expected: RetryAdvice

        init(_ name: String, _ error: any Error, idempotency: Idempotency? = nil, _ expected: RetryAdvice) {
            self.name = name
            self.error = error
            self.idempotency = idempotency
            self.expected = expected
        }

        var testDescription: String { self.name }
    }

    static let offline = RetryAdvice(reason: .offline, isRetryUseful: true)
    static let signIn = RetryAdvice(reason: .signInRequired, isRetryUseful: false)
    static let permanent = RetryAdvice(reason: .permanent, isRetryUseful: false)
    static let setup = RetryAdvice(reason: .setupRequired, isRetryUseful: false)
    static let unknown = RetryAdvice(reason: .outcomeUnknown, isRetryUseful: false)
    static func busy(_ hint: Duration? = nil) -> RetryAdvice {
        RetryAdvice(reason: .serverBusy, isRetryUseful: true, retryAfter: hint)
    }
    static func limited(_ hint: Duration?) -> RetryAdvice {
        RetryAdvice(reason: .rateLimited, isRetryUseful: true, retryAfter: hint)
    }

    static let cases: [Case] = [
        // HTTP
        Case(
            "HTTP 503 with Retry-After", HTTPResponseError(statusCode: 503, headers: ["Retry-After": "20"]),
            busy(.seconds(20))),
        Case("HTTP 500", HTTPResponseError(statusCode: 500), busy()),
        Case(
            "HTTP 429 with Retry-After", HTTPResponseError(statusCode: 429, headers: ["Retry-After": "30"]),
            limited(.seconds(30))),
        Case(
            "HTTP 429 without a hint, not at once", HTTPResponseError(statusCode: 429),
            limited(RetryAdvice.defaultRateLimitWait)),
        Case("REST 429 without a hint, not at once", RESTServiceError(httpStatus: 429), limited(.seconds(30))),
        Case("HTTP 401", HTTPResponseError(statusCode: 401), signIn),
        Case("HTTP 407", HTTPResponseError(statusCode: 407), signIn),
        Case("HTTP 404", HTTPResponseError(statusCode: 404), permanent),
        // The table's rows for statuses: a 408 and a 5xx that passes are a busy server, a 5xx
        // that says the request itself cannot be served is permanent.
        Case("HTTP 408", HTTPResponseError(statusCode: 408), busy()),
        Case("HTTP 507", HTTPResponseError(statusCode: 507), busy()),
        Case("HTTP 521 from a proxy", HTTPResponseError(statusCode: 521), busy()),
        Case("HTTP 501", HTTPResponseError(statusCode: 501), permanent),
        Case("HTTP 505", HTTPResponseError(statusCode: 505), permanent),
        Case("HTTP 511", HTTPResponseError(statusCode: 511), permanent),
        Case("HTTP 422", HTTPResponseError(statusCode: 422), permanent),
        Case("HTTP 503 to a POST", HTTPResponseError(statusCode: 503, requestIdempotency: .notIdempotent), unknown),
        // URL loading
        Case("URLError not connected", URLError(.notConnectedToInternet), offline),
        Case("URLError data not allowed", URLError(.dataNotAllowed), offline),
        Case("URLError timed out", URLError(.timedOut), busy()),
        Case("URLError connection lost", URLError(.networkConnectionLost), busy()),
        Case("URLError timed out on a POST", URLError(.timedOut), idempotency: .notIdempotent, unknown),
        Case("URLError cannot connect on a POST", URLError(.cannotConnectToHost), idempotency: .notIdempotent, busy()),
        Case("URLError auth required", URLError(.userAuthenticationRequired), signIn),
        Case("URLError bad URL", URLError(.badURL), permanent),
        // Outside a cancelled task, a cancelled URL load is final, as the URL error categories say.
        Case("URLError cancelled", URLError(.cancelled), permanent),
        // CloudKit
        Case("CloudKit network unavailable", cloudKit(3), offline),
        Case("CloudKit not authenticated", cloudKit(9), signIn),
        Case("CloudKit service unavailable", cloudKit(6, retryAfter: 12), busy(.seconds(12))),
        Case("CloudKit rate limited", cloudKit(7, retryAfter: 40), busy(.seconds(40))),
        Case("CloudKit zone busy", cloudKit(23), busy()),
        Case("CloudKit unknown item", cloudKit(11), permanent),
        Case("CloudKit quota exceeded", cloudKit(25), permanent),
        Case("CloudKit zone deleted by the user", cloudKit(28), setup),
        Case("CloudKit zone not found", cloudKit(26), setup),
        // No zone, nothing written: a save that may not run twice is still told to recreate it.
        Case("CloudKit zone deleted on a save", cloudKit(28), idempotency: .notIdempotent, setup),
        // REST SDK
        Case("REST expired token", RESTServiceError(httpStatus: 400, serverErrorCode: "invalid_token"), signIn),
        Case("REST revoked grant", RESTServiceError(httpStatus: 400, serverErrorCode: "invalid_grant"), signIn),
        Case("REST 503", RESTServiceError(httpStatus: 503, retryAfter: .seconds(5)), busy(.seconds(5))),
        Case("REST 429", RESTServiceError(httpStatus: 429, retryAfter: .seconds(8)), limited(.seconds(8))),
        Case("REST 400", RESTServiceError(httpStatus: 400, serverErrorCode: "bad_request"), permanent),
        Case("REST transport offline", RESTServiceError(underlying: URLError(.notConnectedToInternet)), offline),
        // SQLite
        Case("SQLite busy", SQLiteError(code: .busy), busy()),
        Case("SQLite locked", SQLiteError(code: .locked), busy()),
        Case("SQLite constraint", SQLiteError(code: 19), permanent),
        // Breaker and limiters
        Case(
            "breaker open", CircuitBreakerOpenError(breakerName: "api", state: .open, retryAfter: .seconds(9)),
            busy(.seconds(9))),
        Case(
            "breaker half-open", CircuitBreakerOpenError(breakerName: "api", state: .halfOpen, retryAfter: nil), busy()),
        Case(
            "breaker isolated", CircuitBreakerOpenError(breakerName: "api", state: .isolated, retryAfter: nil),
            permanent),
        Case(
            "breaker open for a POST",
            CircuitBreakerOpenError(breakerName: "api", state: .open, retryAfter: .seconds(3)),
            idempotency: .notIdempotent, busy(.seconds(3))),
        Case("attempt time limit", AttemptTimeoutError(timeout: .seconds(2)), busy()),
        Case(
            "attempt time limit on a POST",
            AttemptTimeoutError(timeout: .seconds(2), requestIdempotency: .notIdempotent), unknown),
        // Everything else
        Case("decoding error", DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad")), permanent),
        Case("caller cancellation", CancellationError(), RetryAdvice(reason: .cancelled, isRetryUseful: true)),
        Case(
            "wrapped offline error",
            NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: URLError(.notConnectedToInternet)]),
            offline),
    ]

    static func cloudKit(_ code: Int, retryAfter seconds: Double? = nil) -> NSError {
        var userInfo: [String: Any] = [:]
        if let seconds { userInfo["CKRetryAfter"] = NSNumber(value: seconds) }
        return NSError(domain: "CKErrorDomain", code: code, userInfo: userInfo)
    }

    @Test(arguments: cases)
    func adviceMatchesTheRulebookAndTheDefaultClassifier(_ testCase: Case) {
        #expect(RetryAdvice(for: testCase.error, idempotency: testCase.idempotency) == testCase.expected)
    }

    @Test func aURLLoadCancelledWithItsTaskIsAdvisedAsCancelled() async {
        let gate = Gate()
        let task = Task {
            await gate.wait()
            return RetryAdvice(for: URLError(.cancelled))
        }
        task.cancel()
        gate.open()
        #expect(await task.value == RetryAdvice(reason: .cancelled, isRetryUseful: true))
    }

    /// A policy stops on a deleted zone with `.setupRequired`, and the outcome's advice agrees with the error's.
    @Test func aDeletedZoneIsAdvisedAsSetupRequiredFromTheOutcome() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () async throws -> Int in
            throw Self.cloudKit(28)
        }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .setupRequired)
        #expect(RetryAdvice(for: outcome) == Self.setup)
    }

    @Test func theAdviceFollowsTheClassifierThePolicyUses() {
        struct Teapot: Error {}
        let strict = ClosureRetryClassifier { error, _ in error is Teapot ? .doNotRetry : nil }
        #expect(RetryAdvice(for: Teapot()).reason == .serverBusy)  // the default retries unknown errors
        #expect(RetryAdvice(for: Teapot(), classifier: strict) == Self.permanent)
    }

    @Test func aClassifierHintRaisesTheWait() {
        let patient = ClosureRetryClassifier { _, _ in .retry(after: .seconds(45)) }
        let advice = RetryAdvice(
            for: HTTPResponseError(statusCode: 503, headers: ["Retry-After": "10"]), classifier: patient)
        #expect(advice == Self.busy(.seconds(45)))
    }

    @Test func anOutcomeThatSucceededNeedsNoAdvice() {
        let outcome = RetryOutcome<Int>(
            result: .success(1), attempts: 1, stopReason: .succeeded, retryAfter: nil, elapsed: .zero)
        #expect(RetryAdvice(for: outcome) == nil)
    }

    @Test(arguments: [
        (RetryStopReason.offline, URLError(.notConnectedToInternet) as any Error, offline),
        (.authenticationRequired, TokenService.RefreshRefused(), signIn),
        (.budgetExhausted, HTTPResponseError(statusCode: 503), busy()),
        (.exhausted, SQLiteError(code: .busy), busy()),
        (.deadlineExceeded, URLError(.timedOut), busy()),
        (.notIdempotent, URLError(.networkConnectionLost), unknown),
        (.tooManyRequests, HTTPResponseError(statusCode: 429), limited(.seconds(30))),
        (.retryAfterTooLong, HTTPResponseError(statusCode: 503), busy(.seconds(30))),
        (.cancelled, CancellationError(), RetryAdvice(reason: .cancelled, isRetryUseful: true)),
        (.notRetryable, HTTPResponseError(statusCode: 404), permanent),
    ])
    func theStopReasonOfAnOutcomeSharpensTheAdvice(reason: RetryStopReason, error: any Error, expected: RetryAdvice) {
        let outcome = RetryOutcome<Int>(
            result: .failure(error), attempts: 3, stopReason: reason, retryAfter: .seconds(30), elapsed: .seconds(1))
        #expect(RetryAdvice(for: outcome) == expected)
    }

    /// Kii Cloud's guidance: on a 429, do not retry at once, to avoid congestion. With no hint from
    /// the server, the advice still carries a wait, so a retry button is not offered at once.
    @Test func aTooManyRequestsOutcomeWithoutAHintIsNotWorthRetryingAtOnce() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let outcome = await policy.outcome { () throws -> Int in throw RESTServiceError(httpStatus: 429) }
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == nil)
        let advice = try #require(RetryAdvice(for: outcome))
        #expect(advice == Self.limited(RetryAdvice.defaultRateLimitWait))
        #expect(RetryAdvice.defaultRateLimitWait > .zero)
    }

    @Test func aBudgetRejectionOfAnErrorTheDefaultWouldStopIsStillWorthALaterRetry() {
        struct Teapot: Error {}
        let retryAll = ClosureRetryClassifier { _, _ in .retry }
        let outcome = RetryOutcome<Int>(
            result: .failure(HTTPResponseError(statusCode: 418)), attempts: 2, stopReason: .budgetExhausted,
            retryAfter: nil, elapsed: .zero)
        #expect(RetryAdvice(for: outcome, classifier: retryAll) == Self.busy())
        #expect(RetryAdvice(for: outcome) == Self.busy())
    }
}

@Suite struct LimiterRejectionAdviceTests {
    @Test func aFullLimiterIsABusyServiceWorthRetryingAfterItsHint() {
        let rejection = LimiterRejectionError(
            limiterName: "api", reason: .noPermit, retryAfter: .milliseconds(250))
        let advice = RetryAdvice(for: rejection)
        #expect(advice.reason == .serverBusy)
        #expect(advice.isRetryUseful)
        #expect(advice.retryAfter == .milliseconds(250))
    }

    @Test func aQueueTimeoutIsSafeToRetryEvenForARequestThatIsNotIdempotent() {
        // The limiter refused the call before it was made: nothing reached the server.
        let rejection = LimiterRejectionError(limiterName: "api", reason: .queueTimedOut, queued: 3)
        let advice = RetryAdvice(for: rejection, idempotency: .notIdempotent)
        #expect(advice.reason == .serverBusy)
        #expect(advice.isRetryUseful)
    }
}
