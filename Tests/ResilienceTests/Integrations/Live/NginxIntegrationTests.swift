import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Retry policies against a real nginx, through the real `URLSession`; request
/// counts come from nginx's access log.
@Suite(.timeLimit(.minutes(5)))
struct NginxIntegrationTests {
    @Test(.enabled(if: NginxServer.canRun, "nginx is not installed; .ci/steps/15-integration-deps.sh installs it"))
    func serviceUnavailableIsRetriedAfterItsRetryAfterAndSucceedsOnceRecovered() async throws {
        let server = try await NginxServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(100)), jitter: .none, clock: clock)
        let request = LiveServerSupport.request(server.url("/maintenance"))

        let call = Task { try await policy.data(for: request, session: session) }
        await clock.waitForSleepers(count: 1)
        // The 503's Retry-After: 1 outweighs the 100 ms backoff.
        #expect(clock.sleepRequests == [.seconds(1)])
        #expect(try await server.loggedRequests(for: "/maintenance") == ["GET /maintenance 503"])
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleeperCount == 1, "the retry must not start before the server's 1 s")

        try server.recover()
        clock.advance(by: .milliseconds(1))
        let (data, response) = try await call.value
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "back\n")
        #expect(
            try await server.loggedRequests(for: "/maintenance") == ["GET /maintenance 503", "GET /maintenance 200"])
    }

    @Test(.enabled(if: NginxServer.canRun, "nginx is not installed; .ci/steps/15-integration-deps.sh installs it"))
    func persistentServiceUnavailableIsTriedMaximumAttemptsTimes() async throws {
        let server = try await NginxServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, jitter: .none, clock: clock)
        let request = LiveServerSupport.request(server.url("/maintenance"))

        let call = Task { try await policy.data(for: request, session: session) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        let result = await call.result
        let error = try #require(throws: HTTPResponseError.self) { try result.get() }
        #expect(error.statusCode == 503)
        #expect(error.retryAfter == .seconds(1))
        #expect(error.bodyExcerpt == "down for maintenance\n")
        #expect(
            try await server.loggedRequests(for: "/maintenance") == ["GET /maintenance 503", "GET /maintenance 503"])
        #expect(await policy.statistics.stopReasons[.exhausted] == 1)
    }

    /// Each call that nginx's `limit_req` answers with 429 makes exactly one request, counted in
    /// nginx's access log, and surfaces the server's hint without waiting for it.
    ///
    /// nginx allows one request a minute: on a machine slow enough that a minute passes between
    /// two calls, nginx lets the later one through. So each call is judged by what nginx logged
    /// for it: one request, whose status the call reports (429 thrown, 200 returned); the calls
    /// go on until three were refused (at most ten calls), and at least one must have been.
    @Test(.enabled(if: NginxServer.canRun, "nginx is not installed; .ci/steps/15-integration-deps.sh installs it"))
    func eachTooManyRequestsCallMakesExactlyOneRequest() async throws {
        let server = try await NginxServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try RetryPolicy(maximumAttempts: 5, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let request = LiveServerSupport.request(server.url("/limited"))

        let first = try await policy.data(for: request, session: session)
        #expect(first.response.statusCode == 200)
        #expect(try await server.loggedRequests(for: "/limited") == ["GET /limited 200"])
        var logged = 1
        var refused = 0
        var calls = 0
        while refused < 3, calls < 10 {
            calls += 1
            let result = await Result { try await policy.data(for: request, session: session) }
            let lines = try await server.loggedRequests(for: "/limited")
            let sent = Array(lines.dropFirst(logged))
            logged = lines.count
            try #require(sent.count == 1, "call \(calls) made \(sent.count) requests: \(sent)")
            switch (sent[0], result) {
            case ("GET /limited 429", .failure(let error as HTTPResponseError)):
                refused += 1
                #expect(error.statusCode == 429)
                #expect(error.retryAfter == .seconds(30), "the server's hint is surfaced, not honoured")
            case ("GET /limited 200", .success(let answer)):
                // A minute passed since nginx's last allowed request: it allowed this one.
                #expect(answer.response.statusCode == 200)
            default:
                Issue.record("call \(calls): nginx logged \(sent[0]), the call ended with \(result)")
            }
        }
        #expect(refused >= 1, "nginx refused none of \(calls) calls")
        #expect(await policy.statistics.stopReasons[.tooManyRequests] == refused)
        #expect(await policy.statistics.retries == 0)
    }

    @Test(.enabled(if: NginxServer.canRun, "nginx is not installed; .ci/steps/15-integration-deps.sh installs it"))
    func successTakesOneRequest() async throws {
        let server = try await NginxServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let policy = try RetryPolicy(clock: TestClock())

        let (data, response) = try await policy.data(
            for: LiveServerSupport.request(server.url("/ok")), session: session)
        #expect(response.statusCode == 200)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.loggedRequests() == ["GET /ok 200"])
    }
}
