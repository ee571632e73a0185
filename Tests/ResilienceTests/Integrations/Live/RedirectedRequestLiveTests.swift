import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Requests the scripted server redirects, sent through the HTTP helpers and the real
/// `URLSession`: a redirect is an answer, so a request that is not idempotent is not sent
/// again after it, whatever the failure that follows says.
@Suite(.timeLimit(.minutes(5)))
struct RedirectedRequestLiveTests {
    /// The URL at which the server answers `key` with `status` and `Location: location`.
    static func redirect(on server: ScriptedHTTPServer, key: String, status: Int, to location: String) -> URL {
        let escaped = location.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? location
        return server.url("/redirect/\(key)?status=\(status)&location=\(escaped)")
    }

    /// Post/Redirect/Get: the server takes the `POST` and answers 303 (or 302, 307) pointing
    /// elsewhere, and the connection to the redirect's target is refused. The code says no
    /// connection was made, but the `POST` reached the server that redirected: it is sent once,
    /// and the error the helper throws says it may have been sent.
    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: [302, 303, 307], HTTPHelperEntry.allCases)
    func aPOSTWhoseRedirectTargetRefusesTheConnectionIsSentOnce(status: Int, entry: HTTPHelperEntry) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let error = try await LiveServerSupport.withRefusingLoopbackPort { port in
            let url = Self.redirect(on: server, key: "orders", status: status, to: "http://127.0.0.1:\(port)/orders/42")
            let post = LiveServerSupport.request(url, method: "POST")
            return await HTTPHelperEntry.error { try await entry.send(post, session: session) }
        }
        #expect(try await server.requestCount(for: "orders") == 1)
        let urlError = try #require(error as? URLError, "\(String(describing: error))")
        #expect(URLErrorCategory(code: urlError.code) == .requestNotSent, "the code itself is unchanged")
        #expect(FailureAnalysis(urlError).delivery == .mayHaveBeenSent)
        #expect(urlError.userInfo[ErrorHints.requestDeliveryKey] as? RequestDelivery == .mayHaveBeenSent)
    }

    /// The same redirect for a `GET`: it may be sent again, and is, until the attempts run out.
    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: [302, 307], HTTPHelperEntry.allCases)
    func aGETWhoseRedirectTargetRefusesTheConnectionIsRetried(status: Int, entry: HTTPHelperEntry) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let error = try await LiveServerSupport.withRefusingLoopbackPort { port in
            let url = Self.redirect(on: server, key: "summary", status: status, to: "http://127.0.0.1:\(port)/summary")
            return await HTTPHelperEntry.error {
                try await entry.send(LiveServerSupport.request(url), session: session)
            }
        }
        #expect(error is URLError, "\(String(describing: error))")
        let count = try await server.requestCount(for: "summary")
        #expect(count == 3, "sent \(count) times")
    }

    /// A redirect the server follows to an answer is no failure: the helper returns the
    /// answer of the redirect's target.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: HTTPHelperEntry.allCases)
    func aRedirectFollowedToAnAnswerReturnsIt(entry: HTTPHelperEntry) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let url = Self.redirect(on: server, key: "moved", status: 302, to: "/fail/target?times=0")
        let data = try await entry.send(LiveServerSupport.request(url), session: session)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.requestCount(for: "moved") == 1)
        #expect(try await server.requestCount(for: "target") == 1)
    }

    /// Post/Redirect/Get whose redirect's target refuses the request for its credential (401):
    /// the refusal answers the request sent to the target, not the `POST`, which the server
    /// that redirected received. The error the helper throws says the `POST` may have been
    /// sent, so nothing reads the 401 as proof that it had no effect.
    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: [302, 303, 307], HTTPHelperEntry.allCases)
    func aPOSTWhoseRedirectTargetAnswers401IsSentOnceAndMayHaveBeenSent(
        status: Int, entry: HTTPHelperEntry
    ) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let url = Self.redirect(on: server, key: "orders", status: status, to: "/protected/orders")
        let post = LiveServerSupport.request(url, method: "POST")
        let error = await HTTPHelperEntry.error { try await entry.send(post, session: session) }
        let refusal = try #require(error as? HTTPResponseError, "\(String(describing: error))")
        #expect(refusal.statusCode == 401)
        #expect(refusal.recordedDelivery == .mayHaveBeenSent)
        #expect(FailureAnalysis(refusal).delivery == .mayHaveBeenSent)
        #expect(RetryAdvice(for: refusal).reason == .outcomeUnknown)
        #expect(try await server.requestCount(for: "orders") == 1)
        #expect(try await server.requestCount(for: "orders.refused") == 1)
    }

    /// The credential-refresh flow around the helper: a `POST` whose redirect's target answers
    /// 401 is not refreshed and sent again (the server that redirected may have acted on it);
    /// the call stops as not idempotent.
    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: [302, 303, 307], HTTPHelperEntry.allCases)
    func aPOSTWhoseRedirectTargetAnswers401IsNotRefreshedAndSentAgain(
        status: Int, entry: HTTPHelperEntry
    ) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let url = Self.redirect(on: server, key: "orders", status: status, to: "/protected/orders")
        let outcome = try await Self.sendRecovering(
            LiveServerSupport.request(url, method: "POST"), through: entry, server: server, key: "orders",
            session: session)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(try await server.requestCount(for: "orders") == 1)
        #expect(try await server.requestCount(for: "orders.refresh") == 0)
        #expect(try await server.requestCount(for: "orders.accepted") == 0)
    }

    /// The same flow for a `GET` follows the usual rules: refreshed, and sent again with the new token.
    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: [302, 307], HTTPHelperEntry.allCases)
    func aGETWhoseRedirectTargetAnswers401IsRefreshedAndSentAgain(status: Int, entry: HTTPHelperEntry) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let url = Self.redirect(on: server, key: "summary", status: status, to: "/protected/summary")
        let outcome = try await Self.sendRecovering(
            LiveServerSupport.request(url), through: entry, server: server, key: "summary", session: session)
        #expect(outcome.stopReason == .succeeded)
        #expect((try? outcome.get()) == "ok token-1\n")
        #expect(try await server.requestCount(for: "summary") == 2)
        #expect(try await server.requestCount(for: "summary.refresh") == 1)
        #expect(try await server.requestCount(for: "summary.refused") == 1)
        #expect(try await server.requestCount(for: "summary.accepted") == 1)
    }

    /// Sends `request` with the recovery's token through `entry`, inside a policy that refreshes
    /// the token from the server's token endpoint for `key` after a 401.
    private static func sendRecovering(
        _ request: URLRequest, through entry: HTTPHelperEntry, server: ScriptedHTTPServer, key: String,
        session: URLSession
    ) async throws -> RetryOutcome<String> {
        let tokenURL = server.url("/token/\(key)")
        let recovery = CredentialRecovery(credential: "expired") { _ in
            let refresh = LiveServerSupport.request(tokenURL, method: "POST")
            let (data, response) = try await session.data(for: refresh)
            return String(
                decoding: try HTTPResponseValidation.validate(data, response, for: refresh).data, as: UTF8.self)
        }
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        return await policy.outcome(recovering: recovery) { token in
            var sent = request
            sent.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            return String(decoding: try await entry.send(sent, session: session), as: UTF8.self)
        }
    }

    /// The session's delegate still decides whether a redirect is followed: one that refuses
    /// them leaves the helper with the 303 itself, an answer, so the `POST` is sent once.
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aSessionDelegateThatRefusesRedirectsStillDecides() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 5
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration, delegate: RedirectRefusingDelegate(), delegateQueue: nil)
        defer { session.invalidateAndCancel() }
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let url = Self.redirect(on: server, key: "orders", status: 303, to: "/fail/receipt?times=0")
        let post = LiveServerSupport.request(url, method: "POST")
        let error = try await #require(throws: HTTPResponseError.self) {
            try await policy.data(for: post, session: session)
        }
        #expect(error.statusCode == 303)
        #expect(try await server.requestCount(for: "orders") == 1)
        #expect(try await server.requestCount(for: "receipt") == 0)
    }
}

/// A session delegate that follows no redirect.
private final class RedirectRefusingDelegate: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
