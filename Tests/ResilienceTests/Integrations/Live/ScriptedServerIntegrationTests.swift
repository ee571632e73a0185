import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retry policies against the scripted Python server, through the real
/// `URLSession`; request counts come from the server's own counter.
///
/// The policies back off by zero on a test clock, so retries run at once; the
/// only real waiting is the two-second request timeout of the slow-answer tests. Two, not
/// the one second FoundationNetworking allows at least: the timeout also bounds the retry,
/// which must be answered within it on a loaded CI machine (under ThreadSanitizer too),
/// and the slow answer still comes two seconds after it.
@Suite(.timeLimit(.minutes(5)))
struct ScriptedServerIntegrationTests {
    private func makePolicy(
        maximumAttempts: Int = 3, classifier: some RetryClassifier = DefaultRetryClassifier()
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none, classifier: classifier,
            clock: TestClock())
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func failuresFollowedBySuccessAreRetriedUntilItSucceeds() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/fail/twice?times=2&status=503"))
        let (data, _) = try await policy.data(for: request, session: session)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.requestCount(for: "twice") == 3)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func persistentFailuresUseExactlyTheAllowedAttempts() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/fail/always?times=100&status=502"))
        let error = try await #require(throws: HTTPResponseError.self) {
            try await policy.data(for: request, session: session)
        }
        #expect(error.statusCode == 502)
        #expect(error.bodyExcerpt == "scripted failure 3\n")
        #expect(try await server.requestCount(for: "always") == 3)
        #expect(await policy.statistics.stopReasons[.exhausted] == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func clientErrorsAreNotRetried() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/fail/missing?times=100&status=404"))
        let error = try await #require(throws: HTTPResponseError.self) {
            try await policy.data(for: request, session: session)
        }
        #expect(error.statusCode == 404)
        #expect(try await server.requestCount(for: "missing") == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: [500, 502, 503])
    func postAnsweredWithA5xxIsSentOnce(status: Int) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        // A gateway answers 503 after it forwarded the request: the order may exist.
        let post = LiveServerSupport.request(server.url("/fail/post\(status)?times=1&status=\(status)"), method: "POST")
        let error = try await #require(throws: HTTPResponseError.self) {
            try await policy.data(for: post, session: session)
        }
        #expect(error.statusCode == status)
        #expect(error.requestIdempotency?.isIdempotent == false)
        #expect(try await server.requestCount(for: "post\(status)") == 1)
        #expect(await policy.statistics.stopReasons[.notIdempotent] == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func postWithAnIdempotencyKeyIsRetriedOn503() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        var post = LiveServerSupport.request(server.url("/fail/keyed?times=1&status=503"), method: "POST")
        post.setValue("order-42", forHTTPHeaderField: "Idempotency-Key")
        #expect(try await policy.data(for: post, session: session).response.statusCode == 200)
        #expect(try await server.requestCount(for: "keyed") == 2)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func postValidatedWithItsRequestThroughPlainExecuteIsSentOnceOn502() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let post = LiveServerSupport.request(server.url("/fail/plain?times=1&status=502"), method: "POST")
        let outcome = await policy.outcome {
            let (data, response) = try await session.data(for: post)
            return try HTTPResponseValidation.validate(data, response, for: post).data
        }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(try await server.requestCount(for: "plain") == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func anOuterPolicyDoesNotResendAPOSTTheInnerOneGaveUpOn() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let inner = try self.makePolicy(maximumAttempts: 3)
        let outer = try self.makePolicy(maximumAttempts: 3)

        let dropped = LiveServerSupport.request(server.url("/drop/nested"), method: "POST")
        let outcome = await outer.outcome { try await inner.data(for: dropped, session: session) }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(try await server.requestCount(for: "nested") == 1)

        let answered = LiveServerSupport.request(server.url("/fail/nested503?times=1&status=503"), method: "POST")
        let second = await outer.outcome { try await inner.data(for: answered, session: session) }
        #expect(second.stopReason == .notIdempotent)
        #expect(try await server.requestCount(for: "nested503") == 1)
    }

    /// The outer policy's own attempt limit (on the test clock) ends the attempt while
    /// the server still holds the `POST` the inner policy sent: the error the limit
    /// reports must say so, or the outer policy sends the `POST` again.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func anOuterAttemptTimeoutDoesNotResendAPOSTStillInFlight() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        // The server holds the POST far longer than the test takes, even under ThreadSanitizer
        // on a loaded machine: the attempt must end by the outer limit, never by an answer.
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 300
        configuration.timeoutIntervalForResource = 300
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        let clock = TestClock()
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let outer = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let request = LiveServerSupport.request(
            server.url("/slow/inflight?times=3&delay=240"), method: "POST", timeout: 300)
        let call = Task {
            await outer.outcome(attemptTimeout: .seconds(5)) { try await inner.data(for: request, session: session) }
        }
        // Once the server holds the request, end the attempt on the test clock. A second
        // attempt (the bug) would wait for a limit no one moves, until the suite's time limit.
        while try await server.requestCount(for: "inflight") == 0 {
            try Task.checkCancellation()
            await Task.yield()
        }
        await clock.waitForSleepers(count: 1)  // the attempt's timer
        clock.advance(by: .seconds(5))
        let outcome = await call.value
        #expect(try await server.requestCount(for: "inflight") == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect((outcome.result.error as? AttemptTimeoutError)?.requestIdempotency?.isIdempotent == false)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func postIsResentWhenTheConnectionWasRefused() async throws {
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)
        // Port 1 on loopback: nothing listens, so the connection is refused and nothing is sent.
        let post = LiveServerSupport.request(URL(string: "http://127.0.0.1:1/orders")!, method: "POST")
        let error = try await #require(throws: URLError.self) { try await policy.data(for: post, session: session) }
        #expect(URLErrorCategory(code: error.code) == .requestNotSent)
        #expect(await policy.statistics.failedAttempts == 3, "a request never sent may be sent again")
        #expect(await policy.statistics.stopReasons[.exhausted] == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func droppedConnectionIsRetriedForGET() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/drop/get?times=1"))
        let (data, _) = try await policy.data(for: request, session: session)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.requestCount(for: "get") == 2)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func postWhoseConnectionDropsIsNotRetriedByDefault() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/drop/post"), method: "POST")
        let error = try await #require(throws: URLError.self) {
            try await policy.data(for: request, session: session)
        }
        // Linux reports the drop as badServerResponse, Apple platforms as networkConnectionLost.
        #expect(URLErrorCategory(code: error.code) == .requestMayHaveBeenSent)
        #expect(try await server.requestCount(for: "post") == 1)
        #expect(await policy.statistics.stopReasons[.notIdempotent] == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func postWhoseConnectionDropsIsRetriedWhenTheCallerOptsIn() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/drop/optin"), method: "POST")
        await #expect(throws: URLError.self) {
            try await policy.data(for: request, session: session, allowsNonIdempotentRetries: true)
        }
        #expect(try await server.requestCount(for: "optin") == 3)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func explicitClassifierForAPOSTStopsAfterADrop() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let request = LiveServerSupport.request(server.url("/drop/explicit"), method: "POST")
        let policy = try self.makePolicy(maximumAttempts: 3, classifier: HTTPRetryClassifier(request: request))

        let outcome = await policy.outcome {
            let (data, response) = try await session.data(for: request)
            return try HTTPResponseValidation.validate(data, response).data
        }
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(try await server.requestCount(for: "explicit") == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func slowAnswerTimesOutAndIsRetriedForGET() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/slow/get?times=1&delay=4"), timeout: 2)
        let (data, _) = try await policy.data(for: request, session: session)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.requestCount(for: "get") == 2)
        #expect(await policy.statistics.failedAttempts == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func slowPostTimesOutAndIsNotRetried() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(server.url("/slow/post?times=1&delay=4"), method: "POST", timeout: 2)
        let error = try await #require(throws: URLError.self) {
            try await policy.data(for: request, session: session)
        }
        #expect(error.code == .timedOut)
        #expect(try await server.requestCount(for: "post") == 1)
    }
}

/// Failures before any server is reached.
@Suite(.timeLimit(.minutes(5)))
struct UnreachableServerIntegrationTests {
    @Test func refusedConnectionIsRetriedEvenForAPOST() async throws {
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        // Held for the whole call: a port that was merely free could be taken by a server
        // another test starts meanwhile, and the POST would then reach it.
        let outcome = try await LiveServerSupport.withRefusingLoopbackPort { port in
            let request = LiveServerSupport.request(URL(string: "http://127.0.0.1:\(port)/orders")!, method: "POST")
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
                classifier: HTTPRetryClassifier(request: request), clock: TestClock())
            return await policy.outcome { try await session.data(for: request) }
        }
        #expect(outcome.attempts == 3)
        #expect(outcome.stopReason == .exhausted)
        let error = try #require(throws: URLError.self) { try outcome.get() }
        #expect(URLErrorCategory(code: error.code) == .requestNotSent)
    }
}

// MARK: - Duplicated hints, sub-second deadlines, body streams

extension ScriptedServerIntegrationTests {
    /// A proxy and the application both set `Retry-After: 120`: the response carries the
    /// line twice, which `URLSession` joins into `120, 120`. The server asked for 120 s
    /// either way, and the policy waits that long, not its own 1 s backoff.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func duplicatedRetryAfterLinesOnA503AreStillHonoured() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(300),
            clock: clock)

        let request = LiveServerSupport.request(server.url("/fail/twice-said?times=1&retry_after=120&retry_after=120"))
        let call = Task { try await policy.data(for: request, session: session) }
        await clock.waitForSleepRequests(count: 1)
        let waits = clock.sleepRequests
        clock.advance(by: .seconds(120))
        let (data, _) = try await call.value
        #expect(waits == [.seconds(120)], "the policy came back after \(waits) instead of the 120 s asked")
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
    }

    /// A 429 is never retried, but its hint is reported in the outcome; a `Retry-After`
    /// line sent twice still is.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aTooManyRequestsWithADuplicatedRetryAfterStillReportsTheHint() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        let request = LiveServerSupport.request(
            server.url("/fail/throttled?status=429&retry_after=30&retry_after=30"))
        let outcome = await policy.outcome {
            let (data, response) = try await session.data(for: request)
            return try HTTPResponseValidation.validate(data, response, for: request).data
        }
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(30), "hint reported: \(String(describing: outcome.retryAfter))")
        #expect(try await server.requestCount(for: "throttled") == 1)
    }

    /// App code that keeps the response it failed with, as a value: an `APIError` case, or an
    /// SDK's `NSError` with the response under a key of its own. The real response to a real
    /// request is a 429, and a classifier that retries everything still sends it once.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: [false, true])
    func aTooManyRequestsTheAppKeepsAsAValueIsSentOnce(inUserInfo: Bool) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3, classifier: ClosureRetryClassifier { _, _ in .retry })

        let request = LiveServerSupport.request(server.url("/fail/held?status=429&retry_after=30"))
        let outcome = await policy.outcome { () throws -> Data in
            let (data, response) = try await session.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            guard http.statusCode == 200 else {
                if inUserInfo { throw NSError(domain: "com.example.sdk", code: 1, userInfo: ["response": http]) }
                throw HeldResponseError.http(http, data)
            }
            return data
        }
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.attempts == 1)
        #expect(outcome.retryAfter == .seconds(30))
        #expect(try await server.requestCount(for: "held") == 1)
    }

    /// 900 ms are left before the deadline: the attempt's `timeoutInterval` is cut to the
    /// time left, which FoundationNetworking would count as zero whole seconds and time
    /// out at once. The server answers in 200 ms, well within the time left.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aSubSecondTimeLeftDoesNotMakeTheRequestTimeOutAtOnce() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try RetryPolicy(maximumAttempts: 1, deadline: .milliseconds(900), clock: TestClock())

        let request = LiveServerSupport.request(server.url("/slow/quick?delay=0.2"), timeout: 5)
        let headers = RetryRequestHeaders(timeLeft: "X-Time-Left-Ms")
        let (data, _) = try await policy.data(for: request, session: session, sending: headers)
        #expect(String(decoding: data, as: UTF8.self) == "slow\n")
    }

    /// The ways a policy sends a request.
    enum PolicyHelper: CaseIterable, Sendable {
        case plain
        case allowingNonIdempotentRetries
        case sendingHeaders

        func data(_ policy: RetryPolicy, for request: URLRequest, session: URLSession) async throws -> Data {
            switch self {
            case .plain:
                try await policy.data(for: request, session: session).data
            case .allowingNonIdempotentRetries:
                try await policy.data(for: request, session: session, allowsNonIdempotentRetries: true).data
            case .sendingHeaders:
                try await policy.data(
                    for: request, session: session, sending: RetryRequestHeaders(attempt: "X-Attempt")
                )
                .data
            }
        }
    }

    /// A `PUT` is idempotent, but its body is a stream, which the first attempt read to
    /// its end: sent again, the request would store an empty body and report success.
    /// So it is sent once, and the 503 ends the call, whatever the caller allows.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: PolicyHelper.allCases)
    func aRequestWithABodyStreamIsNotSentAgainOnceItMayHaveBeenSent(helper: PolicyHelper) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        var request = LiveServerSupport.request(server.url("/fail/stream?times=1&status=503"), method: "PUT")
        request.httpBodyStream = InputStream(data: Data("amount=990".utf8))
        let error = try await #require(throws: HTTPResponseError.self) {
            try await helper.data(policy, for: request, session: session)
        }
        #expect(error.statusCode == 503)
        #expect(error.requestIdempotency?.isIdempotent == false)
        #expect(try await server.bodies(for: "stream") == ["amount=990"])
        #expect(await policy.statistics.stopReasons[.notIdempotent] == 1)
    }

    /// What lets the rules send a body stream again after a failure that proves the request
    /// never left: a refused connection leaves the stream unread, so the next send carries
    /// the whole body.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aBodyStreamIsStillWholeAfterARefusedConnection() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 1)

        var request = LiveServerSupport.request(server.url("/fail/refused-first?times=0"), method: "PUT")
        request.httpBodyStream = InputStream(data: Data("amount=990".utf8))
        let refusal = try await LiveServerSupport.withRefusingLoopbackPort { port in
            var refused = request
            refused.url = URL(string: "http://127.0.0.1:\(port)/orders")
            return try await #require(throws: URLError.self) { try await policy.data(for: refused, session: session) }
        }
        #expect(URLErrorCategory(code: refusal.code) == .requestNotSent)
        _ = try await policy.data(for: request, session: session)
        #expect(try await server.bodies(for: "refused-first") == ["amount=990"])
    }

    /// The same through a pipeline: its retry stage does not send the stream again either.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aPipelineDoesNotSendABodyStreamAgainOnceItMayHaveBeenSent() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)
        let pipeline = ResiliencePipeline { policy }

        var request = LiveServerSupport.request(server.url("/fail/piped?times=1&status=503"), method: "PUT")
        request.httpBodyStream = InputStream(data: Data("amount=990".utf8))
        let error = try await #require(throws: HTTPResponseError.self) {
            try await pipeline.data(for: request, session: session)
        }
        #expect(error.statusCode == 503)
        #expect(try await server.bodies(for: "piped") == ["amount=990"])
        #expect(await policy.statistics.stopReasons[.notIdempotent] == 1)
    }

    /// A body sent as `httpBody` can be sent again: a `PUT` answered 503 is retried with
    /// the same body, and succeeds.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aRequestWithABodyInMemoryIsSentAgainWithTheSameBody() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try self.makePolicy(maximumAttempts: 3)

        var request = LiveServerSupport.request(server.url("/fail/kept?times=1&status=503"), method: "PUT")
        request.httpBody = Data("amount=990".utf8)
        let (data, _) = try await policy.data(for: request, session: session)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.bodies(for: "kept") == ["amount=990", "amount=990"])
    }
}

/// An app's error that keeps the response it failed with.
private enum HeldResponseError: Error {
    case http(HTTPURLResponse, Data)
}
