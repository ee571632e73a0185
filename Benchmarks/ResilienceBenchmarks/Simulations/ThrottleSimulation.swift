import Resilience
import ResilienceTesting

/// A throttling server: every request is answered with HTTP 429, with or without
/// a `Retry-After` of 2 s.
///
/// Each client's policy allows 3 attempts and has a classifier that answers
/// "retry" for every error, so only the policy's hard rule (429 is never retried)
/// stands between the server and a retry storm. The figure is attempts that
/// reached the server per request; the rule makes it exactly 1.
struct ThrottleSimulation: Sendable {
    /// Simulated clients.
    var clients = 1_000
    /// How long the clients keep sending.
    var length = Duration.seconds(10)
    /// The `Retry-After` the server sends in the variant that sends one.
    var retryAfter = Duration.seconds(2)
    /// The per-hop delay.
    var network = NetworkDelay.anchors
    /// The seed every random stream derives from.
    var seed: UInt64

    /// Runs the variant with or without `Retry-After`.
    func run(retryAfter sendsRetryAfter: Bool) async throws -> ThrottleResult {
        let clock = SimulationClock()
        let hint = sendsRetryAfter ? self.retryAfter : nil
        let server: ClientLoop.Server = { _ in SimulatedServerError(httpStatusCode: 429, retryAfter: hint) }
        var loops: [ClientLoop] = []
        for client in 0..<self.clients {
            let policy = try RetryPolicy(
                maximumAttempts: 3,
                classifier: ClosureRetryClassifier { @Sendable _, _ in .retry },
                clock: clock,
                generator: SeededRandomNumberGenerator(seed: SeedDerivation.derive(self.seed, 6, client)))
            loops.append(
                ClientLoop(
                    clock: clock, caller: RetryPolicyCaller(policy: policy), server: server,
                    network: self.network, thinkTime: 0.5...1.5,
                    generator: SeedDerivation.generator(self.seed, 5, client)))
        }
        let counts = await withTaskGroup(of: (Int, Int, Int).self, returning: (Int, Int, Int).self) { group in
            for loop in loops {
                await clock.spawn(in: &group) {
                    let requests = await loop.run()
                    let hints = requests.count { $0.retryAfter != nil }
                    return (requests.count, requests.reduce(0) { $0 + $1.attempts }, hints)
                }
            }
            await clock.run(until: SimulationClock.Instant(offset: self.length))
            var total = (0, 0, 0)
            for await (requests, attempts, hints) in group {
                total.0 += requests
                total.1 += attempts
                total.2 += hints
            }
            return total
        }
        return ThrottleResult(
            retryAfter: sendsRetryAfter,
            attemptsPerRequest: Double(counts.1) / Double(Swift.max(counts.0, 1)),
            requests: counts.0,
            hintsSurfaced: counts.2)
    }
}

/// The figures of one throttle variant.
struct ThrottleResult: Sendable {
    /// Whether the server sent `Retry-After`.
    var retryAfter: Bool
    /// Attempts reaching the server per request.
    var attemptsPerRequest: Double
    /// Requests completed.
    var requests: Int
    /// Requests whose outcome carried the server's hint back to the caller.
    var hintsSurfaced: Int
}
