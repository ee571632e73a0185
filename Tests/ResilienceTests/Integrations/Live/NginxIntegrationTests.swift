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
        for _ in 0..<3 {
            let error = try await #require(throws: HTTPResponseError.self) {
                try await policy.data(for: request, session: session)
            }
            #expect(error.statusCode == 429)
            #expect(error.retryAfter == .seconds(30), "the server's hint is surfaced, not honoured")
        }
        #expect(await policy.statistics.stopReasons[.tooManyRequests] == 3)
        #expect(await policy.statistics.retries == 0)
        #expect(
            try await server.loggedRequests(for: "/limited") == [
                "GET /limited 200", "GET /limited 429", "GET /limited 429", "GET /limited 429",
            ])
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
