import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request sent through the real `URLSession` to the scripted server, whose answer is
/// read just as a library time limit fires: the attempt is past its last cancellation
/// point, and validating the answer fails after the limit fired. What that failure says
/// (a `POST`, a 429) must reach the policy around the limit, by the server's own count.
@Suite(.timeLimit(.minutes(5)))
struct LateAnswerIntegrationTests {
    enum Limit: String, CaseIterable, Sendable {
        case policyAttemptTimeout, timeoutStrategy
    }

    /// Sends `request` under `limit` (5 seconds on a test clock) inside a policy of 3 attempts.
    /// The first attempt waits, once answered, until the limit cancels it, then validates the
    /// answer; a later attempt (none is expected) validates at once.
    static func send(_ request: URLRequest, under limit: Limit, session: URLSession) async throws -> RetryOutcome<Data>
    {
        let clock = TestClock()
        let gate = Gate()
        let attempts = Counter()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let attempt: @Sendable () async throws -> Data = {
            let first = attempts.increment() == 1
            let (data, response) = try await session.data(for: request)
            if first { await LateOperationErrorTests.waitUntilCancelled(at: gate) }
            return try HTTPResponseValidation.validate(data, response, for: request).data
        }
        let call = Task {
            switch limit {
            case .policyAttemptTimeout:
                return await policy.outcome(attemptTimeout: .seconds(5)) { try await attempt() }
            case .timeoutStrategy:
                let timeout = try Timeout(.seconds(5), clock: clock)
                return await policy.outcome { try await timeout.execute { try await attempt() } }
            }
        }
        // The answer is in and the attempt waits: only now does the limit fire.
        await gate.waitForWaiters(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        return try await call.value
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: Limit.allCases)
    func aPOSTAnsweredAsTheLimitFiresIsSentOnce(_ limit: Limit) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let post = LiveServerSupport.request(server.url("/fail/late?times=5&status=503"), method: "POST")
        let outcome = try await Self.send(post, under: limit, session: session)
        #expect(try await server.requestCount(for: "late") == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(outcome.attempts == 1)
    }

    @Test(.enabled(if: ScriptedHTTPServer.canRun, "python3 is not installed"), arguments: Limit.allCases)
    func a429AnsweredAsTheLimitFiresIsNotRetried(_ limit: Limit) async throws {
        let server = try await ScriptedHTTPServer.start()
        defer { server.stop() }
        let session = LiveServerSupport.makeSession()
        defer { session.invalidateAndCancel() }
        let get = LiveServerSupport.request(server.url("/fail/busy?times=5&status=429&retry_after=7"))
        let outcome = try await Self.send(get, under: limit, session: session)
        #expect(try await server.requestCount(for: "busy") == 1)
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(7))
    }
}
