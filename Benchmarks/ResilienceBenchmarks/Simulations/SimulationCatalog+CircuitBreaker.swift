import Resilience
import ResilienceTesting

extension SimulationCatalog {
    /// Outage variants with a circuit breaker in each client's call path: retry around
    /// breaker, without and with the retry budget.
    ///
    /// Each client has its own ``CircuitBreaker`` with the package defaults (open after
    /// five consecutive failures, for a fixed 30 s, one half-open probe), on the
    /// simulation's clock, inside its own ``RetryPolicy``. An attempt the breaker
    /// rejects never reaches the server and is not counted; its
    /// ``CircuitBreakerOpenError`` carries the open time left, which the policy waits
    /// out (it is under the policy's 60 s `maximumRetryAfter`) before its next attempt
    /// probes the breaker. These runs go on for 40 s after the server recovers, so that
    /// every client's breaker has had the time to close again: the figures then include
    /// when the median and the last client first succeed after the recovery.
    static let circuitBreakerOutageVariants: [OutageSimulation.Variant] = [
        OutageSimulation.Variant(budget: false, breaker: true, tail: .seconds(40)) { clock, seed in
            RetryAroundBreakerCaller(
                policy: try RetryPolicy(
                    maximumAttempts: OutageSimulation.maximumAttempts, clock: clock,
                    generator: SeededRandomNumberGenerator(seed: seed)),
                breaker: try CircuitBreaker(name: "server", clock: clock))
        },
        OutageSimulation.Variant(budget: true, breaker: true, tail: .seconds(40)) { clock, seed in
            RetryAroundBreakerCaller(
                policy: try RetryPolicy(
                    maximumAttempts: OutageSimulation.maximumAttempts,
                    budget: try RetryBudget(maximumTokens: 10, tokenRatio: 0.1),
                    clock: clock,
                    generator: SeededRandomNumberGenerator(seed: seed)),
                breaker: try CircuitBreaker(name: "server", clock: clock))
        },
    ]
}

/// A caller that sends every request through a ``RetryPolicy`` around a ``CircuitBreaker``:
/// the breaker sees each attempt, the usual nesting.
struct RetryAroundBreakerCaller: SimulatedCaller {
    /// The client's policy.
    let policy: RetryPolicy
    /// The client's breaker, on the simulation's clock.
    let breaker: CircuitBreaker

    func send(_ attempt: () async throws -> Void) async -> SimulatedRequestOutcome {
        let breaker = self.breaker
        let outcome = await self.policy.outcome { try await breaker.execute { try await attempt() } }
        let succeeded = (try? outcome.get()) != nil
        return SimulatedRequestOutcome(succeeded: succeeded, retryAfter: outcome.retryAfter)
    }
}
