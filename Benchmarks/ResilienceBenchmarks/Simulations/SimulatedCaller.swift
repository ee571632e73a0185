import Resilience

/// How a simulated client sends one request: through a retry policy, a breaker, or both.
///
/// `attempt` is one attempt of the request: it travels to the server and back on
/// the simulation clock and throws the server's error. The caller decides how many
/// attempts to make; the client counts the attempts that really reach the server.
protocol SimulatedCaller: Sendable {
    /// Sends one request; true when it succeeded.
    func send(_ attempt: () async throws -> Void) async -> SimulatedRequestOutcome
}

/// What one simulated request ended with.
struct SimulatedRequestOutcome: Sendable {
    /// Whether a response succeeded.
    var succeeded: Bool
    /// The retry-after hint the caller surfaced, if any.
    var retryAfter: Duration?
}

/// A caller that sends every request through one ``RetryPolicy``.
struct RetryPolicyCaller: SimulatedCaller {
    /// The client's policy.
    let policy: RetryPolicy

    func send(_ attempt: () async throws -> Void) async -> SimulatedRequestOutcome {
        let outcome = await self.policy.outcome { try await attempt() }
        let succeeded = (try? outcome.get()) != nil
        return SimulatedRequestOutcome(succeeded: succeeded, retryAfter: outcome.retryAfter)
    }
}

/// The failure a simulated server answers with.
struct SimulatedServerError: Error, HTTPStatusReporting, RetryAfterProviding {
    /// The HTTP status: 503 during an outage, 429 when throttling.
    var httpStatusCode: Int?
    /// The `Retry-After` the server sent, if any.
    var retryAfter: Duration?
}
