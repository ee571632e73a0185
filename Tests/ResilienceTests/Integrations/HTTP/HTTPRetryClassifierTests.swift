import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct HTTPRetryClassifierTests {
    private let context = RetryContext(attempt: 1)

    private func decision(_ classifier: HTTPRetryClassifier, _ error: any Error) -> RetryDecision? {
        classifier.decision(for: error, context: self.context)
    }

    @Test(arguments: ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"])
    func idempotentMethodsAreRecognized(method: String) {
        #expect(HTTPRetryClassifier.isIdempotent(method: method))
    }

    @Test(arguments: ["POST", "PATCH", "CONNECT", "post"])
    func nonIdempotentMethodsAreRecognized(method: String) {
        #expect(!HTTPRetryClassifier.isIdempotent(method: method))
    }

    /// Methods are case-sensitive (RFC 9110, section 9.1): `get` is a method of its own, unknown.
    @Test(arguments: ["get", "Put", "options", "trace", "dElEtE"])
    func aMethodSpelledOtherwiseThanTheStandardIsUnknownAndNotIdempotent(method: String) async throws {
        #expect(!HTTPRetryClassifier.isIdempotent(method: method))
        let classifier = HTTPRetryClassifier(method: method)
        #expect(classifier.method == method)
        #expect(classifier.declaredIdempotency?.isIdempotent == false)
        let outcome = try await self.outcome(classifier, HTTPResponseError(statusCode: 503))
        #expect(outcome.attempts == 1, "an unknown method may have had its effect; it is not sent again")
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// `URLRequest` capitalizes the methods it knows, so a request's reading follows what it sends:
    /// `get` goes out as `GET`, and `options` goes out as `options`, an unknown method.
    @Test func aRequestIsJudgedByTheMethodItSends() {
        var request = URLRequest(url: URL(string: "http://127.0.0.1/orders")!)
        request.httpMethod = "get"
        #expect(request.httpMethod == "GET")
        #expect(Idempotency.http(request).isIdempotent)
        #expect(HTTPRetryClassifier(request: request).declaredIdempotency?.isIdempotent == true)
        request.httpMethod = "options"
        #expect(request.httpMethod == "options")
        #expect(!Idempotency.http(request).isIdempotent)
        #expect(HTTPRetryClassifier(request: request).declaredIdempotency?.isIdempotent == false)
    }

    @Test(arguments: [408, 500, 502, 503, 504])
    func retryableStatusesAreRetriedForGET(status: Int) {
        let classifier = HTTPRetryClassifier(method: "GET")
        #expect(self.decision(classifier, HTTPResponseError(statusCode: status)) == .retry)
    }

    /// A proxy's own 5xx (Cloudflare's 520 to 524: the origin sent nothing usable, was down,
    /// unreachable or timed out) is the server side's failure like a 502, and is retried.
    @Test(arguments: [507, 520, 521, 522, 523, 524, 599])
    func everyOtherServerErrorIsRetriedForGET(status: Int) {
        let classifier = HTTPRetryClassifier(method: "GET")
        #expect(self.decision(classifier, HTTPResponseError(statusCode: status)) == .retry)
        #expect(
            DefaultRetryClassifier().decision(for: StatusError(status: status), context: RetryContext(attempt: 1))
                == .retry)
    }

    @Test(arguments: [521, 522, 523, 524])
    func aPolicyRetriesAProxysServerError(status: Int) async throws {
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let attempts = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            if attempts.increment() == 1 { throw RESTServiceError(httpStatus: status) }
            return 1
        }
        #expect(outcome.attempts == 2)
        #expect(outcome.stopReason == .succeeded)
    }

    @Test(arguments: [400, 403, 404, 409, 422, 501, 505, 506, 508, 510, 511])
    func otherStatusesAreFinal(status: Int) {
        let classifier = HTTPRetryClassifier(method: "GET")
        #expect(self.decision(classifier, HTTPResponseError(statusCode: status)) == .doNotRetry)
    }

    @Test func tooManyRequestsIsNeverRetried() {
        let decision = self.decision(HTTPRetryClassifier(method: "GET"), HTTPResponseError(statusCode: 429))
        #expect(decision == .doNotRetry(because: .tooManyRequests))
    }

    @Test(arguments: [401, 407])
    func authenticationStatusesStopWithAuthenticationRequired(status: Int) {
        let decision = self.decision(HTTPRetryClassifier(method: "GET"), HTTPResponseError(statusCode: status))
        #expect(decision == .doNotRetry(because: .authenticationRequired))
        #expect(decision?.stopReason == .authenticationRequired)
    }

    /// Runs one failing call through a policy with `classifier` and reports how it ended.
    ///
    /// A wrongly retried call sleeps once; a helper task moves the clock past that
    /// sleep, so the call still ends and the test fails on its attempt count.
    private func outcome(_ classifier: HTTPRetryClassifier, _ error: any Error) async throws -> RetryOutcome<Int> {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, classifier: classifier, clock: clock)
        let mover = Task {
            await clock.waitForSleepers()
            clock.advance(by: .seconds(3_600))
        }
        defer { mover.cancel() }
        return await policy.outcome { () throws -> Int in throw error }
    }

    @Test(arguments: [408, 500, 502, 503, 504])
    func postIsNeverResentAfterTheServerAnswered(status: Int) async throws {
        let outcome = try await self.outcome(HTTPRetryClassifier(method: "POST"), HTTPResponseError(statusCode: status))
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
    }

    @Test(arguments: [URLError.Code.timedOut, .networkConnectionLost, .badServerResponse])
    func postIsNotResentAfterAFailureTheServerMayHaveActedOn(code: URLError.Code) async throws {
        let outcome = try await self.outcome(HTTPRetryClassifier(method: "POST"), URLError(code))
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
    }

    @Test func theClassifierDeclaresTheIdempotencyOfItsMethod() {
        #expect(HTTPRetryClassifier(method: "POST").declaredIdempotency == .http(method: "POST"))
        #expect(HTTPRetryClassifier(method: "POST").declaredIdempotency?.isIdempotent == false)
        #expect(HTTPRetryClassifier(method: "PUT").declaredIdempotency?.isIdempotent == true)
        #expect(
            HTTPRetryClassifier(method: "POST", allowsNonIdempotentRetries: true).declaredIdempotency == .idempotent)
        #expect(HTTPRetryClassifier().declaredIdempotency == nil)
    }

    @Test func postIsResentWhenTheConnectionWasNeverMade() {
        let post = HTTPRetryClassifier(method: "POST")
        #expect(self.decision(post, URLError(.cannotConnectToHost)) == .retry)
        #expect(self.decision(post, URLError(.notConnectedToInternet)) == .retry)
    }

    @Test func postIsResentAfterAnAmbiguousFailureWhenTheCallerOptsIn() {
        let post = HTTPRetryClassifier(method: "POST", allowsNonIdempotentRetries: true)
        #expect(self.decision(post, URLError(.timedOut)) == .retry)
        #expect(self.decision(post, HTTPResponseError(statusCode: 502)) == .retry)
        #expect(self.decision(post, HTTPResponseError(statusCode: 429)) == .doNotRetry(because: .tooManyRequests))
    }

    @Test func getIsResentAfterAnAmbiguousFailure() {
        let get = HTTPRetryClassifier(method: "GET")
        #expect(self.decision(get, URLError(.timedOut)) == .retry)
        #expect(self.decision(get, URLError(.networkConnectionLost)) == .retry)
    }

    @Test func methodComesFromTheRequestAndDefaultsToGET() {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:1/")!)
        #expect(HTTPRetryClassifier(request: request).method == "GET")
        request.httpMethod = "patch"
        let classifier = HTTPRetryClassifier(request: request)
        // `URLRequest` sends `patch` as spelled, and the classifier names the method sent.
        #expect(classifier.method == "patch")
        #expect(classifier.declaredIdempotency?.isIdempotent == false)
        request.setValue("order-42", forHTTPHeaderField: "Idempotency-Key")
        #expect(HTTPRetryClassifier(request: request).declaredIdempotency?.isIdempotent == true)
    }

    /// A stream is read once: a policy that sends the request in its own closure, with this
    /// classifier, does not send it again after a failure that may have reached the server,
    /// whatever the method or `allowsNonIdempotentRetries`; the same request with its body in
    /// memory is retried.
    @Test(arguments: [false, true])
    func aRequestWithABodyStreamIsDeclaredNotIdempotent(allowsNonIdempotentRetries: Bool) async throws {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:1/orders/42")!)
        request.httpMethod = "PUT"
        request.httpBody = Data("amount=990".utf8)
        let inMemory = HTTPRetryClassifier(request: request, allowsNonIdempotentRetries: allowsNonIdempotentRetries)
        request.httpBodyStream = InputStream(data: Data("amount=990".utf8))
        let streamed = HTTPRetryClassifier(request: request, allowsNonIdempotentRetries: allowsNonIdempotentRetries)
        #expect(streamed.declaredIdempotency?.isIdempotent == false)
        #expect(streamed.declaredIdempotency?.method == "PUT")
        #expect(inMemory.declaredIdempotency?.isIdempotent == true)

        func sends(_ classifier: HTTPRetryClassifier) async throws -> (Int, RetryStopReason) {
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: classifier)
            let sent = Counter()
            let outcome = await policy.outcome { () async throws -> Int in
                _ = sent.increment()
                throw URLError(.timedOut)
            }
            return (sent.value, outcome.stopReason)
        }
        let (streamedSends, streamedStop) = try await sends(streamed)
        #expect(streamedSends == 1, "a timed-out request may have read the stream")
        #expect(streamedStop == .notIdempotent)
        let (inMemorySends, _) = try await sends(inMemory)
        #expect(inMemorySends == 3)
    }

    @Test func urlAuthenticationFailuresStopWithAuthenticationRequired() {
        let decision = self.decision(HTTPRetryClassifier(), URLError(.userAuthenticationRequired))
        #expect(decision == .doNotRetry(because: .authenticationRequired))
    }

    @Test func otherErrorsAreLeftToTheNextClassifier() {
        struct Unrelated: Error {}
        #expect(self.decision(HTTPRetryClassifier(), Unrelated()) == nil)
        #expect(self.decision(HTTPRetryClassifier(), CancellationError()) == nil)
    }

    @Test func defaultClassifierRetriesTransientURLErrorsAndStopsOnPermanentOnes() {
        let classifier = DefaultRetryClassifier()
        #expect(classifier.decision(for: URLError(.timedOut), context: self.context) == .retry)
        #expect(classifier.decision(for: URLError(.cannotFindHost), context: self.context) == .retry)
        #expect(classifier.decision(for: URLError(.badURL), context: self.context) == .doNotRetry)
        #expect(
            classifier.decision(for: URLError(.cancelled), context: self.context) == .doNotRetry)
        #expect(
            classifier.decision(for: HTTPResponseError(statusCode: 401), context: self.context)
                == .doNotRetry(because: .authenticationRequired))
    }

    @Test func policyReportsAuthenticationRequiredAsTheStopReason() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let outcome = await policy.outcome { () async throws -> Int in
            throw HTTPResponseError(statusCode: 401)
        }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .authenticationRequired)
    }
}
