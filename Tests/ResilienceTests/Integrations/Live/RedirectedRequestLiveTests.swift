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
@Suite(.timeLimit(.minutes(1)))
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
