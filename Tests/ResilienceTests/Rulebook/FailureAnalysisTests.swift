import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite struct FailureAnalysisTests {
    /// A wrapper that declares nothing below it although it stores a 429.
    struct OpaqueWrapper: Error, UnderlyingErrorProviding {
        var hidden: any Error
        var underlyingErrors: [any Error] { [] }
    }

    @Test func theOutermostStatusIsReportedAndA429AnywhereIsSeen() {
        let error = RESTServiceError(
            httpStatus: 502, underlying: NSError(domain: "x", code: 1, userInfo: ["statusCode": 429]))
        let analysis = FailureAnalysis(error)
        #expect(analysis.httpStatus == 502)
        #expect(analysis.isTooManyRequests)
        #expect(ErrorHints.httpStatus(of: error) == 502)
        #expect(ErrorHints.isTooManyRequests(error))
    }

    @Test func aStatuslessWrapperLetsTheStatusBelowItThrough() {
        let error = RESTServiceError(sdkCode: 3, httpStatus: nil, underlying: HTTPResponseError(statusCode: 429))
        #expect(ErrorHints.httpStatus(of: error) == 429)
    }

    @Test func theLongestHintInTheChainWins() {
        let error = NSError(
            domain: "x", code: 1,
            userInfo: [
                ErrorHints.cloudKitRetryAfterKey: 3, NSUnderlyingErrorKey: StatusError(status: 503, hint: .seconds(9)),
            ])
        #expect(FailureAnalysis(error).retryAfter == .seconds(9))
    }

    @Test func aDeclaredWrapperIsTakenAtItsWord() {
        let analysis = FailureAnalysis(OpaqueWrapper(hidden: HTTPResponseError(statusCode: 429)))
        #expect(!analysis.isTooManyRequests, "the protocol's answer replaces reflection")
    }

    @Test func reflectionLooksThroughOptionalsAndArrays() {
        struct Batch: Error {
            var failures: [any Error]
            var last: (any Error)?
        }
        #expect(
            FailureAnalysis(Batch(failures: [TransientError(), StatusError(status: 429)], last: nil)).isTooManyRequests)
        #expect(FailureAnalysis(Batch(failures: [], last: StatusError(status: 429))).isTooManyRequests)
        #expect(!FailureAnalysis(Batch(failures: [TransientError()], last: nil)).isTooManyRequests)
    }

    @Test func theWalkStopsAtItsDepth() {
        var error: any Error = HTTPResponseError(statusCode: 429)
        for _ in 0..<20 { error = NSError(domain: "x", code: 1, userInfo: [NSUnderlyingErrorKey: error]) }
        #expect(!FailureAnalysis(error).isTooManyRequests, "twenty levels down is past the bound")
        var shallow: any Error = HTTPResponseError(statusCode: 429)
        for _ in 0..<6 { shallow = NSError(domain: "x", code: 1, userInfo: [NSUnderlyingErrorKey: shallow]) }
        #expect(FailureAnalysis(shallow).isTooManyRequests)
    }

    @Test func deliveryTakesTheMostCautiousReading() {
        #expect(FailureAnalysis(URLError(.cannotConnectToHost)).delivery == .notSent)
        #expect(FailureAnalysis(URLError(.timedOut)).delivery == .mayHaveBeenSent)
        #expect(FailureAnalysis(HTTPResponseError(statusCode: 503)).delivery == .answered)
        #expect(FailureAnalysis(TransientError()).delivery == .unknown)
        #expect(
            FailureAnalysis(CircuitBreakerOpenError(breakerName: "b", state: .open, retryAfter: nil)).delivery
                == .notSent)
        let mixed = NSError(
            domain: NSURLErrorDomain, code: URLError.cannotConnectToHost.rawValue,
            userInfo: [NSUnderlyingErrorKey: URLError(.networkConnectionLost)])
        #expect(FailureAnalysis(mixed).delivery == .mayHaveBeenSent)
    }

    @Test func credentialsAndOfflineAreRecognized() {
        #expect(FailureAnalysis(HTTPResponseError(statusCode: 401)).needsCredentials)
        #expect(FailureAnalysis(RESTServiceError(serverErrorCode: "invalid_grant")).needsCredentials)
        #expect(FailureAnalysis(URLError(.notConnectedToInternet)).isOffline)
        #expect(FailureAnalysis(NSError(domain: CloudKitErrorCode.domain, code: 3)).isOffline)
        #expect(!FailureAnalysis(URLError(.timedOut)).isOffline)
    }

    @Test func aCancelledTaskIsTheCallersStopUnlessATimeLimitSaysOtherwise() async {
        #expect(FailureAnalysis(TransientError()).interruption == nil)
        #expect(FailureAnalysis(CancellationError()).interruption == .caller)
        #expect(FailureAnalysis(AttemptTimeoutError(timeout: .seconds(1))).interruption == .timeLimit)
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return FailureAnalysis(TransientError()).interruption
        }
        task.cancel()
        #expect(await task.value == .caller, "any failure in a cancelled task is the caller's stop")
    }

    @Test func theRulesStopWhatNoClassifierMayRetry() {
        let post = Idempotency.http(method: "POST")
        #expect(Rulebook.stopReason(for: FailureAnalysis(CancellationError()), idempotency: .idempotent) == .cancelled)
        #expect(
            Rulebook.stopReason(for: FailureAnalysis(HTTPResponseError(statusCode: 429)), idempotency: post)
                == .tooManyRequests)
        #expect(Rulebook.stopReason(for: FailureAnalysis(URLError(.timedOut)), idempotency: post) == .notIdempotent)
        #expect(Rulebook.stopReason(for: FailureAnalysis(URLError(.cannotFindHost)), idempotency: post) == nil)
        #expect(Rulebook.stopReason(for: FailureAnalysis(URLError(.timedOut)), idempotency: .idempotent) == nil)
        let reported = HTTPResponseError(statusCode: 500, requestIdempotency: post)
        #expect(Rulebook.stopReason(for: FailureAnalysis(reported), idempotency: .idempotent) == .notIdempotent)
    }
}

@Suite struct CredentialRefusalTests {
    @Test(arguments: [401, 407])
    func aRefusedPOSTStopsForItsCredentialsNotForItsIdempotency(status: Int) async throws {
        let analysis = FailureAnalysis(HTTPResponseError(statusCode: status))
        #expect(analysis.delivery == .refused)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .http(method: "POST")) == nil)
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () throws -> Int in
            throw HTTPResponseError(statusCode: status)
        }
        #expect(outcome.stopReason == .authenticationRequired)
        #expect(outcome.attempts == 1)
    }
}

/// CloudKit's `notAuthenticated` and the URL loading system's authentication errors stand for a
/// 401: the request was refused before the server acted on it, so even a `POST` may go again.
@Suite struct StandInRefusalTests {
    static let standIns: [any Error & Sendable] = [
        NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.notAuthenticated.rawValue),
        URLError(.userAuthenticationRequired),
        URLError(.userCancelledAuthentication),
    ]

    @Test(arguments: 0..<standIns.count)
    func whatStandsForA401IsARefusalBeforeTheRequestWasActedOn(index: Int) {
        let analysis = FailureAnalysis(Self.standIns[index])
        #expect(analysis.delivery == .refused)
        #expect(analysis.needsCredentials)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .http(method: "POST")) == nil)
    }

    @Test(arguments: 0..<standIns.count)
    func whatStandsForA401StopsAPOSTForSignInAfterOneAttempt(index: Int) async throws {
        let refusal = Self.standIns[index]
        let policy = try RetryPolicy(maximumAttempts: 3, classifier: CloudKitRetryClassifier(), clock: TestClock())
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () throws -> Int in throw refusal }
        #expect(outcome.stopReason == .authenticationRequired)
        #expect(outcome.attempts == 1)
        let fromOutcome = try #require(RetryAdvice(for: outcome))
        #expect(fromOutcome.reason == .signInRequired, "the advice from the outcome agrees with the error's")
        #expect(RetryAdvice(for: refusal, idempotency: .notIdempotent).reason == .signInRequired)
    }

    /// A partial failure names only the items that failed: one refused for its credential does
    /// not prove that the batch had no effect, since the items in no error were saved.
    @Test func aPartialFailureWithAnItemRefusedForItsCredentialIsNotResentWhenNotIdempotent() async throws {
        let item = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.notAuthenticated.rawValue)
        let partial = NSError(
            domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
            userInfo: ["CKPartialErrors": ["A": item]])
        #expect(FailureAnalysis(partial).delivery == .answered)
        let policy = try RetryPolicy(maximumAttempts: 3, classifier: CloudKitRetryClassifier(), clock: TestClock())
        let recovery = CredentialRecovery(credential: "old", clock: TestClock()) { _ in "new" }
        let sent = Counter()
        let outcome = await policy.outcome(recovering: recovery, idempotency: .notIdempotent) { _ -> Int in
            sent.increment()
            throw partial
        }
        #expect(sent.value == 1, "the batch, item B saved, is not sent again")
        #expect(outcome.stopReason == .notIdempotent)
    }
}
