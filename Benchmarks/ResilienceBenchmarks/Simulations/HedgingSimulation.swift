import Resilience
import ResilienceTesting

/// The library's real ``Hedging`` against a server with a slow tail, on a
/// ``SerialSimulation``'s virtual time.
///
/// Most attempts take 10 ms plus an exponential 10 ms; 3% (a pause, a slow
/// replica) take 300 to 1,000 ms, independently for each attempt. One client sends
/// the requests one after another. Each request draws two attempt latencies from
/// the seeded stream up front, whether it hedges or not, so both rows see the same
/// first attempts; an attempt sleeps its latency on the simulation clock and
/// answers, and a cancelled loser leaves its sleep at once.
///
/// The hedged row wraps each request in
/// `Hedging(delay: .percentile(95, ofLast: 1_000, initial: .milliseconds(50)), maximumHedges: 1)`
/// on the simulation clock: the hedge starts at the 95th percentile of the recent
/// calls' latencies (each from the call's start to its first success), as the hedging
/// article suggests, so about one call in twenty hedges. The delay, the latency it records, its deadline watcher and the attempt
/// tasks are the library's own. Load counts every attempt that reached the server,
/// the cancelled loser included.
struct HedgingSimulation {
    /// Requests sent one after another (20,000 in a standard run).
    var requests: Int
    var seed: UInt64

    private struct Tally {
        var latencies: [Double] = []
        var attempts = 0
    }

    func run(hedged: Bool) async throws -> HedgingSimulationResult {
        let simulation = SerialSimulation()
        let clock = simulation.clock
        let hedging =
            hedged
            ? try Hedging(
                delay: .percentile(95, ofLast: 1_000, initial: .milliseconds(50)), maximumHedges: 1,
                name: "simulation", clock: clock)
            : nil
        let tally = Lock(Tally())
        let requests = self.requests
        let seed = self.seed
        try await simulation.run {
            var generator = SeedDerivation.generator(seed, 21)
            tally.withLock { $0.latencies.reserveCapacity(requests) }
            for _ in 0..<requests {
                let latencies = [Self.attemptLatency(&generator), Self.attemptLatency(&generator)]
                let next = Lock(0)
                let attempt: @Sendable () async throws -> Void = {
                    let index = next.withLock { index in
                        defer { index += 1 }
                        return index
                    }
                    tally.withLock { $0.attempts += 1 }
                    try await clock.sleep(for: .milliseconds(latencies[Swift.min(index, latencies.count - 1)]))
                }
                let start = clock.now
                do {
                    if let hedging {
                        try await hedging.execute(operation: attempt)
                    } else {
                        try await attempt()
                    }
                } catch {
                    // The server never fails and the clock runs until nothing is left to run.
                    preconditionFailure("a simulated hedging request failed: \(error)")
                }
                let latency = start.duration(to: clock.now)
                tally.withLock { $0.latencies.append(latency.simulatedMilliseconds) }
            }
        }
        let result = tally.withLock { $0 }
        return HedgingSimulationResult(
            hedged: hedged, p99Milliseconds: percentile(result.latencies.sorted(), 0.99),
            loadPerRequest: Double(result.attempts) / Double(result.latencies.count),
            requests: result.latencies.count)
    }

    /// One attempt's latency in milliseconds.
    private static func attemptLatency(_ generator: inout SeededRandomNumberGenerator) -> Double {
        if Double.random(in: 0..<1, using: &generator) < 0.03 {
            return 300 + Double.random(in: 0...700, using: &generator)
        }
        return 10 + exponential(mean: 10, using: &generator)
    }
}

/// One hedging row.
struct HedgingSimulationResult: Sendable {
    var hedged: Bool
    var p99Milliseconds: Double
    var loadPerRequest: Double
    var requests: Int
}
