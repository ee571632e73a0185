import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Answers the scripted server breaks off after the request arrived: cut short in the body
/// (`cut`: fewer bytes than `Content-Length` promised, then the connection closes), reset
/// after a part of the body (`reset`), or reset before any answer (`abort`). The request
/// reached the server each time, so a `GET` is retried and a `POST` is sent once, as the
/// HTTP article's table says for a response lost, garbled or cut short.
@Suite(.timeLimit(.minutes(5)))
struct TruncatedResponseLiveTests {
    static let modes = ["cut", "reset", "abort"]

    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: HTTPHelperEntry.allCases, Self.modes)
    func aGETWhoseAnswerBreaksOffOnceIsRetried(entry: HTTPHelperEntry, mode: String) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let get = LiveServerSupport.request(server.url("/\(mode)/get?times=1"))
        let data = try await entry.send(get, session: session)
        #expect(String(decoding: data, as: UTF8.self) == "ok\n")
        #expect(try await server.requestCount(for: "get") == 2)
    }

    @Test(
        .enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"),
        arguments: HTTPHelperEntry.allCases, Self.modes)
    func aPOSTWhoseAnswerBreaksOffIsSentOnce(entry: HTTPHelperEntry, mode: String) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let post = LiveServerSupport.request(server.url("/\(mode)/post"), method: "POST")
        let error = await HTTPHelperEntry.error { try await entry.send(post, session: session) }
        #expect(error is URLError, "\(String(describing: error))")
        #expect(try await server.requestCount(for: "post") == 1)
    }

    /// What `URLSession` itself throws for each, read by `URLErrorCategory` and the rules:
    /// the request may have been sent. (On Linux a cut body is `unknown`, -1.)
    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: Self.modes)
    func theURLErrorOfAnAnswerThatBreaksOffSaysTheRequestMayHaveBeenSent(mode: String) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let get = LiveServerSupport.request(server.url("/\(mode)/raw"))
        let error = try await #require(throws: URLError.self) { try await session.data(for: get) }
        #expect(URLErrorCategory(code: error.code) == .requestMayHaveBeenSent, "code \(error.code.rawValue)")
        #expect(FailureAnalysis(error).delivery == .mayHaveBeenSent, "code \(error.code.rawValue)")
    }
}
