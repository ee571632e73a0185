import Resilience
import ResilienceTesting

/// The library's real ``ConcurrencyLimiter`` under overload, on a
/// ``SerialSimulation``'s virtual time.
///
/// Poisson arrivals at 1.5 times what `limit` slots can serve (service times
/// exponential, mean 50 ms), each its own task calling
/// `ConcurrencyLimiter(limit: limit, queueLimit: limit, queueTimeout: .milliseconds(100))`
/// on the simulation clock, so the queue, its first-come-first-served hand-over
/// and the queue timer are the library's own. An admitted call's latency runs
/// from its arrival to the end of its service, queueing included; a call refused
/// with ``LimiterRejectionError`` (queue full, or its queue timeout passed) counts
/// as rejected.
struct BulkheadSimulation {
    /// Arrivals offered (20,000 in a standard run).
    var arrivals: Int
    var meanService = 50.0
    var overload = 1.5
    var queueTimeout = 100.0
    var seed: UInt64

    private struct Tally {
        var admitted: [Double] = []
        var rejected = 0
        var other = 0
    }

    func run(limit: Int) async throws -> BulkheadSimulationResult {
        let simulation = SerialSimulation()
        let clock = simulation.clock
        let limiter = try ConcurrencyLimiter(
            name: "simulation", limit: limit, queueLimit: limit, queueTimeout: .milliseconds(self.queueTimeout),
            clock: clock)
        let tally = Lock(Tally())
        let arrivals = self.arrivals
        let seed = self.seed
        let meanService = self.meanService
        let meanGap = self.meanService / (self.overload * Double(limit))  // milliseconds
        try await simulation.run {
            var generator = SeedDerivation.generator(seed, 22, limit)
            await withDiscardingTaskGroup { group in
                var arrival = 0.0
                for _ in 0..<arrivals {
                    arrival += exponential(mean: meanGap, using: &generator)
                    let service = exponential(mean: meanService, using: &generator)
                    do {
                        try await clock.sleep(until: .init(offset: .milliseconds(arrival)))
                    } catch {
                        return
                    }
                    group.addTask {
                        let start = clock.now
                        do {
                            try await limiter.execute { try await clock.sleep(for: .milliseconds(service)) }
                            let latency = start.duration(to: clock.now)
                            tally.withLock { $0.admitted.append(latency.simulatedMilliseconds) }
                        } catch is LimiterRejectionError {
                            tally.withLock { $0.rejected += 1 }
                        } catch {
                            tally.withLock { $0.other += 1 }
                        }
                    }
                }
            }
        }
        let result = tally.withLock { $0 }
        precondition(result.other == 0, "a simulated bulkhead call failed with neither a result nor a rejection")
        return BulkheadSimulationResult(
            limit: limit, p99AdmittedMilliseconds: percentile(result.admitted.sorted(), 0.99),
            rejectedShare: Double(result.rejected) / Double(arrivals), arrivals: arrivals)
    }
}

/// One bulkhead row.
struct BulkheadSimulationResult: Sendable {
    var limit: Int
    var p99AdmittedMilliseconds: Double
    var rejectedShare: Double
    var arrivals: Int
}
