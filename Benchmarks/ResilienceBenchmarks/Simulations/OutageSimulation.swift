import Resilience
import ResilienceTesting

/// An outage: `clients` clients keep sending requests while the server fails
/// everything (HTTP 503) for 60 s, then recovers.
///
/// Every client has its own caller (its own ``RetryPolicy``, and its own
/// ``RetryBudget`` in the budget variant), built by the variant, and runs a
/// ``ClientLoop``: send, wait for the outcome, think 0.5–1.5 s, repeat. The
/// library's real policy makes every decision, on a ``SimulationClock``.
///
/// Figures:
/// - attempts per request: attempts that reached the server per request, over the
///   requests sent and finished inside the outage;
/// - recovery: from the server's recovery to the first successful response any
///   client receives;
/// - client recovery: for each client, from the server's recovery to its own first
///   successful response; the median and the last over the clients.
struct OutageSimulation: Sendable {
    /// One way of calling the failing server.
    struct Variant: Sendable {
        /// Whether the callers share a retry budget (one per client).
        var budget: Bool
        /// Whether a circuit breaker stands in the call path.
        var breaker: Bool
        /// How long this variant runs after the server recovers, if not the simulation's ``OutageSimulation/tail``.
        var tail: Duration?
        /// Builds one client's caller on the simulation's clock, with its own seed.
        var makeCaller: @Sendable (_ clock: SimulationClock, _ seed: UInt64) throws -> any SimulatedCaller
    }

    /// Simulated clients.
    var clients = OutageSimulation.standardClients
    /// When the outage starts; before it the server is healthy and budgets fill up.
    var outageStart = Duration.seconds(5)
    /// How long the server fails everything.
    var outageLength = Duration.seconds(60)
    /// How long the simulation runs after the server recovers.
    var tail = Duration.seconds(5)
    /// The per-hop delay.
    var network = NetworkDelay.anchors
    /// The seed every random stream derives from.
    var seed: UInt64

    /// The clients of a standard run, the one the recorded figures come from.
    static let standardClients = 1_000
    /// The clients of a `--quick` run: the same model, seeds and outage, a tenth of the
    /// clients, so about a tenth of the time. Its figures repeat for the same seed but are
    /// not the standard ones.
    static let quickClients = 100

    /// The attempts a call may make in the variants below: the package default, 3.
    static let maximumAttempts = 3

    /// The retry-only variants, with and without a budget (gRPC's example: 10 tokens, 0.1 per success).
    static let retryVariants: [Variant] = [
        Variant(budget: false, breaker: false) { clock, seed in
            RetryPolicyCaller(
                policy: try RetryPolicy(
                    maximumAttempts: Self.maximumAttempts, clock: clock,
                    generator: SeededRandomNumberGenerator(seed: seed)))
        },
        Variant(budget: true, breaker: false) { clock, seed in
            RetryPolicyCaller(
                policy: try RetryPolicy(
                    maximumAttempts: Self.maximumAttempts,
                    budget: try RetryBudget(maximumTokens: 10, tokenRatio: 0.1),
                    clock: clock,
                    generator: SeededRandomNumberGenerator(seed: seed)))
        },
    ]

    /// Runs one variant to the end.
    func run(_ variant: Variant) async throws -> OutageResult {
        let clock = SimulationClock()
        let start = SimulationClock.Instant(offset: self.outageStart)
        let end = start.advanced(by: self.outageLength)
        let server: ClientLoop.Server = { arrival in
            arrival >= start && arrival < end ? SimulatedServerError(httpStatusCode: 503, retryAfter: nil) : nil
        }
        var loops: [ClientLoop] = []
        for client in 0..<self.clients {
            let caller = try variant.makeCaller(clock, SeedDerivation.derive(self.seed, 4, client))
            loops.append(
                ClientLoop(
                    clock: clock, caller: caller, server: server, network: self.network, thinkTime: 0.5...1.5,
                    generator: SeedDerivation.generator(self.seed, 3, client)))
        }
        let tail = variant.tail ?? self.tail
        var clientRecoveries: [Duration] = []
        let tally = await withTaskGroup(of: Tally.self, returning: Tally.self) { group in
            for loop in loops {
                await clock.spawn(in: &group) {
                    var tally = Tally()
                    for request in await loop.run() {
                        if request.start >= start && request.end <= end {
                            tally.requests += 1
                            tally.attempts += request.attempts
                        }
                        if let arrival = request.successArrival, arrival >= end {
                            tally.firstSuccess = Swift.min(tally.firstSuccess ?? arrival, arrival)
                        }
                    }
                    return tally
                }
            }
            await clock.run(until: end.advanced(by: tail))
            var total = Tally()
            for await tally in group {
                // Each task is one client, so its first success is that client's recovery.
                if let first = tally.firstSuccess { clientRecoveries.append(end.duration(to: first)) }
                total.merge(tally)
            }
            return total
        }
        return OutageResult(
            budget: variant.budget,
            breaker: variant.breaker,
            attemptsPerRequest: Double(tally.attempts) / Double(Swift.max(tally.requests, 1)),
            recoveryMilliseconds: tally.firstSuccess.map { end.duration(to: $0).milliseconds },
            clients: self.clients,
            clientsRecovered: clientRecoveries.count,
            medianClientRecoveryMilliseconds: clientRecoveries.isEmpty
                ? nil : Summary(clientRecoveries.map(\.milliseconds)).median,
            lastClientRecoveryMilliseconds: clientRecoveries.count == self.clients
                ? clientRecoveries.max()?.milliseconds : nil,
            tailMilliseconds: tail.milliseconds,
            requests: tally.requests,
            events: clock.wakeUps)
    }

    private struct Tally: Sendable {
        var requests = 0
        var attempts = 0
        var firstSuccess: SimulationClock.Instant?

        mutating func merge(_ other: Tally) {
            self.requests += other.requests
            self.attempts += other.attempts
            if let first = other.firstSuccess {
                self.firstSuccess = Swift.min(self.firstSuccess ?? first, first)
            }
        }
    }
}

/// The figures of one outage variant.
struct OutageResult: Sendable {
    /// Whether the clients had a retry budget.
    var budget: Bool
    /// Whether a circuit breaker stood in the call path.
    var breaker: Bool
    /// Attempts reaching the server per request sent during the outage.
    var attemptsPerRequest: Double
    /// From the server's recovery to the first successful response, in milliseconds.
    var recoveryMilliseconds: Double?
    /// Simulated clients.
    var clients: Int
    /// Clients that received a successful response after the recovery, before the run ended.
    var clientsRecovered: Int
    /// The median over the recovered clients of the time from the recovery to each one's first success.
    var medianClientRecoveryMilliseconds: Double?
    /// The time from the recovery to the last client's first success; `nil` unless every client recovered.
    var lastClientRecoveryMilliseconds: Double?
    /// How long the run went on after the recovery.
    var tailMilliseconds: Double
    /// Requests sent and finished during the outage.
    var requests: Int
    /// Sleepers the simulation woke: a measure of its size.
    var events: Int
}
