import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Single-flight credential recovery against the scripted Python server, through
/// the real `URLSession`: the server issues the tokens, refuses stale ones with
/// 401, and counts refreshes, refusals and acceptances on its side.
///
/// Each test holds the refresh until every call has been refused once and waits
/// for it, so every call's first request carries the stale token.
@Suite(.timeLimit(.minutes(5)), .serialized)
struct CredentialRecoveryLiveTests {
    static let callCount = 1_000

    private static func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.timeoutIntervalForResource = 120
        configuration.httpMaximumConnectionsPerHost = 32
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }

    /// The protected resource, with `token` as a bearer token.
    private static func fetch(_ url: URL, token: String, session: URLSession) async throws -> String {
        var request = LiveServerSupport.request(url, timeout: 60)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await session.data(for: request)
        let (body, _) = try HTTPResponseValidation.validate(data, response, for: request)
        return String(decoding: body, as: UTF8.self)
    }

    /// A new token from the server's token endpoint, once `gate` opens.
    private static func refresh(_ url: URL, gate: Gate, session: URLSession) async throws -> String {
        await gate.wait()
        let request = LiveServerSupport.request(url, method: "POST", timeout: 60)
        let (data, response) = try await session.data(for: request)
        let (body, _) = try HTTPResponseValidation.validate(data, response, for: request)
        return String(decoding: body, as: UTF8.self)
    }

    private static func makePolicy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    /// Starts `callCount` calls, opens `gate` once all of them wait for the refresh, and returns the calls.
    private static func startCalls(
        _ server: ScriptedHTTPServer, key: String, recovery: CredentialRecovery<String>, gate: Gate,
        session: URLSession
    ) async throws -> [Task<RetryOutcome<String>, Never>] {
        let policy = try Self.makePolicy()
        let url = server.url("/protected/\(key)")
        let calls = (0..<Self.callCount).map { _ in
            Task {
                await policy.outcome(recovering: recovery) { token in
                    try await Self.fetch(url, token: token, session: session)
                }
            }
        }
        await recovery.waitForWaitingCalls(count: Self.callCount)
        return calls
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aThousandConcurrentCallsRefusedWith401ShareOneRefreshAndRetryWithTheNewToken() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = Self.makeSession()
        defer { session.invalidateAndCancel() }
        let gate = Gate()
        let tokenURL = server.url("/token/shared")
        let recovery = CredentialRecovery(credential: "expired") { _ in
            try await Self.refresh(tokenURL, gate: gate, session: session)
        }

        let calls = try await Self.startCalls(server, key: "shared", recovery: recovery, gate: gate, session: session)
        gate.open()
        var outcomes: [RetryOutcome<String>] = []
        for call in calls { outcomes.append(await call.value) }

        #expect(try await server.requestCount(for: "shared.refresh") == 1)
        #expect(try await server.requestCount(for: "shared.refused") == Self.callCount)
        #expect(try await server.requestCount(for: "shared.accepted") == Self.callCount)
        #expect(outcomes.allSatisfy { $0.stopReason == .succeeded && $0.attempts == 2 })
        #expect(outcomes.allSatisfy { (try? $0.get()) == "ok token-1\n" })
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func aFailingRefreshEndsAllThousandCallsWithTheReauthenticationReason() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = Self.makeSession()
        defer { session.invalidateAndCancel() }
        let gate = Gate()
        let tokenURL = server.url("/token/revoked?fail=1")
        let recovery = CredentialRecovery(credential: "expired") { _ in
            try await Self.refresh(tokenURL, gate: gate, session: session)
        }

        let calls = try await Self.startCalls(server, key: "revoked", recovery: recovery, gate: gate, session: session)
        gate.open()
        var outcomes: [RetryOutcome<String>] = []
        for call in calls { outcomes.append(await call.value) }

        #expect(try await server.requestCount(for: "revoked.refresh") == 1)
        #expect(try await server.requestCount(for: "revoked.refused") == Self.callCount)
        #expect(try await server.requestCount(for: "revoked.accepted") == 0)
        #expect(outcomes.allSatisfy { $0.stopReason == .authenticationRequired && $0.attempts == 1 })
        #expect(
            outcomes.allSatisfy { outcome in
                guard case .failure(let error as HTTPResponseError) = outcome.result else { return false }
                return error.statusCode == 400  // the token endpoint's refusal, not the 401
            })
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"))
    func cancellingHalfOfTheWaitingCallsLeavesTheRefreshRunningForTheRest() async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = Self.makeSession()
        defer { session.invalidateAndCancel() }
        let gate = Gate()
        let tokenURL = server.url("/token/half")
        let recovery = CredentialRecovery(credential: "expired") { _ in
            try await Self.refresh(tokenURL, gate: gate, session: session)
        }

        let calls = try await Self.startCalls(server, key: "half", recovery: recovery, gate: gate, session: session)
        let cancelled = calls.prefix(Self.callCount / 2)
        for call in cancelled { call.cancel() }
        for call in cancelled {
            // Each ends while the refresh is still held: cancelling a waiter ends it at once.
            let outcome = await call.value
            #expect(outcome.stopReason == .cancelled)
        }
        #expect(recovery.waitingCallCount == Self.callCount / 2)
        #expect(try await server.requestCount(for: "half.refresh") == 0)

        gate.open()
        var survivors: [RetryOutcome<String>] = []
        for call in calls.suffix(Self.callCount / 2) { survivors.append(await call.value) }

        #expect(try await server.requestCount(for: "half.refresh") == 1)
        #expect(try await server.requestCount(for: "half.accepted") == Self.callCount / 2)
        #expect(survivors.allSatisfy { (try? $0.get()) == "ok token-1\n" })
    }
}
