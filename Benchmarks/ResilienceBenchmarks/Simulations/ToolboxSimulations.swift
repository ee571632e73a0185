import Foundation
import Resilience
import ResilienceTesting

/// The toolbox's seeded simulations: hedging against a slow tail, a bulkhead under
/// overload, and rate-limiter accuracy. Same seed, same figures.
enum ToolboxSimulations {
    /// Runs all three with `seed`.
    static func run(seed: UInt64, progress: Progress) async throws -> ToolboxSimulationResults {
        var results = ToolboxSimulationResults()
        for hedged in [false, true] {
            let row = HedgingSimulation(seed: seed).run(hedged: hedged)
            progress.note(
                "hedging hedged=\(hedged): p99 \(Format.decimal(row.p99Milliseconds, 1)) ms, "
                    + "\(Format.decimal(row.loadPerRequest, 3)) attempts/request")
            results.hedging.append(row)
        }
        for limit in [10, 50] {
            let row = BulkheadSimulation(seed: seed).run(limit: limit)
            progress.note(
                "bulkhead limit=\(limit): p99 admitted \(Format.decimal(row.p99AdmittedMilliseconds, 1)) ms, "
                    + "\(Format.decimal(row.rejectedShare * 100, 1))% rejected")
            results.bulkhead.append(row)
        }
        for algorithm in RateLimiterSimulation.algorithms {
            let row = try await RateLimiterSimulation(seed: seed).run(algorithm)
            progress.note(
                "ratelimiter \(row.algorithm): \(Format.decimal(row.admittedPerSecond, 2)) admitted/s of "
                    + "\(Format.decimal(row.configuredPerSecond, 0)) configured")
            results.rateLimiter.append(row)
        }
        return results
    }
}

/// The figures of the toolbox simulations.
struct ToolboxSimulationResults: Sendable {
    /// Without and with hedging.
    var hedging: [HedgingSimulationResult] = []
    /// One row per concurrency limit.
    var bulkhead: [BulkheadSimulationResult] = []
    /// One row per rate-limiter algorithm.
    var rateLimiter: [RateLimiterSimulationResult] = []

    /// Whether nothing ran.
    var isEmpty: Bool { self.hedging.isEmpty && self.bulkhead.isEmpty && self.rateLimiter.isEmpty }
}

/// The value at `fraction` of sorted figures (nearest rank).
private func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[Swift.min(sorted.count - 1, Swift.max(0, rank))]
}

/// An exponential variate with the given mean.
private func exponential(mean: Double, using generator: inout SeededRandomNumberGenerator) -> Double {
    -mean * log(1 - Double.random(in: 0..<1, using: &generator))
}

/// A server with a slow tail: most attempts take 10 ms plus an exponential 10 ms; 3%
/// (a pause, a slow replica) take 300 to 1,000 ms, independently for each attempt.
/// Hedging starts a second attempt once the first has run for the 95th percentile of
/// the last 1,000 winning attempts' latencies (50 ms until 100 are seen), the
/// ``HedgingDelay/percentile(_:ofLast:initial:)`` rule. Load counts every attempt
/// that reached the server, the cancelled loser included.
struct HedgingSimulation {
    var requests = 20_000
    var seed: UInt64

    func run(hedged: Bool) -> HedgingSimulationResult {
        var generator = SeedDerivation.generator(self.seed, 21)
        func attemptLatency() -> Double {
            if Double.random(in: 0..<1, using: &generator) < 0.03 {
                return 300 + Double.random(in: 0...700, using: &generator)
            }
            return 10 + exponential(mean: 10, using: &generator)
        }
        var window: [Double] = []
        var next = 0
        var delay = 50.0
        var latencies: [Double] = []
        latencies.reserveCapacity(self.requests)
        var attempts = 0
        for request in 0..<self.requests {
            let first = attemptLatency()
            attempts += 1
            var latency = first
            var winner = first
            if hedged, first > delay {
                let second = attemptLatency()
                attempts += 1
                if delay + second < first {
                    latency = delay + second
                    winner = second
                }
            }
            latencies.append(latency)
            if window.count < 1_000 {
                window.append(winner)
            } else {
                window[next] = winner
                next = (next + 1) % 1_000
            }
            if window.count >= 100, request % 100 == 0 {
                delay = percentile(window.sorted(), 0.95)
            }
        }
        return HedgingSimulationResult(
            hedged: hedged, p99Milliseconds: percentile(latencies.sorted(), 0.99),
            loadPerRequest: Double(attempts) / Double(self.requests), requests: self.requests)
    }
}

/// One hedging row.
struct HedgingSimulationResult: Sendable {
    var hedged: Bool
    var p99Milliseconds: Double
    var loadPerRequest: Double
    var requests: Int
}

/// A bulkhead under overload: Poisson arrivals at 1.5 times what `limit` slots can
/// serve (service times exponential, mean 50 ms), a FIFO queue as long as the limit,
/// and a 100 ms queue timeout, as ``ConcurrencyLimiter`` does.
struct BulkheadSimulation {
    var arrivals = 20_000
    var meanService = 50.0
    var overload = 1.5
    var queueTimeout = 100.0
    var seed: UInt64

    func run(limit: Int) -> BulkheadSimulationResult {
        var generator = SeedDerivation.generator(self.seed, 22, limit)
        let rate = self.overload * Double(limit) / self.meanService  // per millisecond
        var slotsFreeAt = Array(repeating: 0.0, count: limit)
        var queueLeaves: [Double] = []  // when each queued caller leaves the queue
        var now = 0.0
        var admitted: [Double] = []
        var rejected = 0
        for _ in 0..<self.arrivals {
            now += exponential(mean: 1 / rate, using: &generator)
            let service = exponential(mean: self.meanService, using: &generator)
            queueLeaves.removeAll { $0 <= now }
            let slot = slotsFreeAt.indices.min { slotsFreeAt[$0] < slotsFreeAt[$1] }!
            let start = Swift.max(now, slotsFreeAt[slot])
            if start == now, queueLeaves.isEmpty {
                slotsFreeAt[slot] = now + service
                admitted.append(service)
                continue
            }
            guard queueLeaves.count < limit else {
                rejected += 1  // queue full
                continue
            }
            if start - now > self.queueTimeout {
                rejected += 1  // waits out its queue timeout, then is refused
                queueLeaves.append(now + self.queueTimeout)
                continue
            }
            queueLeaves.append(start)
            slotsFreeAt[slot] = start + service
            admitted.append(start - now + service)
        }
        return BulkheadSimulationResult(
            limit: limit, p99AdmittedMilliseconds: percentile(admitted.sorted(), 0.99),
            rejectedShare: Double(rejected) / Double(self.arrivals), arrivals: self.arrivals)
    }
}

/// One bulkhead row.
struct BulkheadSimulationResult: Sendable {
    var limit: Int
    var p99AdmittedMilliseconds: Double
    var rejectedShare: Double
    var arrivals: Int
}

/// Rate-limiter accuracy: the library's ``RateLimiter`` on a test clock, offered
/// Poisson arrivals at three times its configured 100 per second for 60 s, refusing
/// what it cannot admit; the figure is what it admitted per second.
struct RateLimiterSimulation {
    static let algorithms: [(name: String, make: @Sendable () throws -> RateLimiterAlgorithm)] = [
        ("token-bucket", { try .tokenBucket(capacity: 10, tokensPerPeriod: 10, period: .milliseconds(100)) }),
        ("sliding-window", { try .slidingWindow(limit: 100, window: .seconds(1), segments: 10) }),
    ]

    var configuredPerSecond = 100.0
    var offeredMultiple = 3.0
    var length = 60.0
    var seed: UInt64

    func run(_ algorithm: (name: String, make: @Sendable () throws -> RateLimiterAlgorithm)) async throws
        -> RateLimiterSimulationResult
    {
        var generator = SeedDerivation.generator(self.seed, 23)
        let clock = TestClock()
        let limiter = try RateLimiter(try algorithm.make(), clock: clock)
        let meanGap = 1_000_000 / (self.configuredPerSecond * self.offeredMultiple)  // microseconds
        var elapsed = 0.0
        var admitted = 0
        var offered = 0
        while true {
            let gap = exponential(mean: meanGap, using: &generator)
            elapsed += gap
            guard elapsed < self.length * 1_000_000 else { break }
            clock.advance(by: .microseconds(Int64(gap.rounded())))
            offered += 1
            if (try? await limiter.execute { true }) == true { admitted += 1 }
        }
        return RateLimiterSimulationResult(
            algorithm: algorithm.name, configuredPerSecond: self.configuredPerSecond,
            admittedPerSecond: Double(admitted) / self.length, offered: offered)
    }
}

/// One rate-limiter row.
struct RateLimiterSimulationResult: Sendable {
    var algorithm: String
    var configuredPerSecond: Double
    var admittedPerSecond: Double
    var offered: Int
}
