import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A stale credential is the caller's to renew, not a sign of a failing dependency: the default
/// breaker classifier leaves every shape of it uncounted, as it does HTTP 401, and a throttle
/// records it as accepted.
@Suite(.timeLimit(.minutes(5)))
struct CredentialFailureCountingTests {
    static let shapes: [String] = ["CloudKit notAuthenticated", "URLError userAuthenticationRequired", "HTTP 401"]

    static func refusal(_ shape: String) -> any Error & Sendable {
        switch shape {
        case "CloudKit notAuthenticated":
            NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.notAuthenticated.rawValue)
        case "URLError userAuthenticationRequired": URLError(.userAuthenticationRequired)
        default: HTTPResponseError(statusCode: 401)
        }
    }

    private func makeBreaker(clock: TestClock) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)), clock: clock)
    }

    @Test(arguments: Self.shapes)
    func aStaleCredentialDoesNotOpenTheBreakerSoTheRetryWithTheRefreshedOneGoesThrough(shape: String) async throws {
        let clock = TestClock()
        let breaker = try self.makeBreaker(clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, maximumRetryAfter: .seconds(1), clock: clock)
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in "new" }
        let refused = Self.refusal(shape)
        let sent = Recorder<String>()
        let outcome = await policy.outcome(recovering: recovery) { token in
            try await breaker.execute {
                sent.record(token)
                guard token == "new" else { throw refused }
                return "ok"
            }
        }
        #expect(throws: Never.self, "\(shape)") { try outcome.get() }
        #expect(sent.values == ["old", "new"], "\(shape)")
        #expect(breaker.state == .closed, "\(shape)")
    }

    @Test(arguments: Self.shapes)
    func theDefaultClassifierDoesNotCountAStaleCredential(shape: String) {
        #expect(!DefaultCircuitBreakerFailureClassifier().countsAsFailure(Self.refusal(shape)), "\(shape)")
    }

    @Test func aServerErrorThatAlsoMentionsCredentialsStillCounts() {
        // The status speaks first: a 503 is the dependency failing, whatever it wraps.
        let error = RESTServiceError(httpStatus: 503, underlying: URLError(.userAuthenticationRequired))
        #expect(DefaultCircuitBreakerFailureClassifier().countsAsFailure(error))
    }

    @Test(arguments: Self.shapes)
    func aHalfOpenProbeRefusedForItsCredentialFreesItsSlot(shape: String) async throws {
        let clock = TestClock()
        let breaker = try self.makeBreaker(clock: clock)
        await #expect(throws: HTTPResponseError.self) {
            try await breaker.execute { throw HTTPResponseError(statusCode: 503) }
        }
        clock.advance(by: .seconds(30))
        let refused = Self.refusal(shape)
        await #expect(throws: (any Error).self) { try await breaker.execute { throw refused } }
        #expect(breaker.state == .halfOpen, "\(shape)")
        let value = try await breaker.execute { "ok" }
        #expect(value == "ok", "\(shape): the probe slot was freed")
        #expect(breaker.state == .closed, "\(shape)")
    }

    @Test(arguments: Self.shapes)
    func anAdaptiveThrottleRecordsAStaleCredentialAsAccepted(shape: String) throws {
        let throttle = try AdaptiveThrottle(clock: TestClock())
        throttle.record(Self.refusal(shape))
        #expect(throttle.counts.requests == 1, "\(shape)")
        #expect(throttle.counts.accepts == 1, "\(shape): the server answered; it wants credentials")
    }
}
