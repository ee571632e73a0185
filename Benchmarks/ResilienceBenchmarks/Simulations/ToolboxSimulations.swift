import Foundation
import Resilience
import ResilienceTesting

/// The toolbox's seeded simulations: hedging against a slow tail, a bulkhead under
/// overload, and rate-limiter accuracy. Same seed and size, same figures.
enum ToolboxSimulations {
    /// How long each toolbox simulation runs.
    ///
    /// `--quick` runs a tenth of the standard hedging requests and bulkhead arrivals,
    /// and a sixth of the rate limiter's simulated time: the same models, seeds and
    /// random streams, cut short. Quick figures repeat for the same seed, as the
    /// standard ones do, but they are not the standard figures.
    struct Size: Sendable {
        /// Requests the hedging simulation sends, one after another.
        var hedgingRequests: Int
        /// Arrivals the bulkhead simulation offers at each limit.
        var bulkheadArrivals: Int
        /// Simulated seconds of arrivals the rate limiter is offered.
        var rateLimiterSeconds: Double

        /// The size of a standard run, the one the recorded figures come from.
        static let standard = Size(hedgingRequests: 20_000, bulkheadArrivals: 20_000, rateLimiterSeconds: 60)
        /// The size of a `--quick` run.
        static let quick = Size(hedgingRequests: 2_000, bulkheadArrivals: 2_000, rateLimiterSeconds: 10)
    }

    /// Runs all three with `seed`, at `size`.
    static func run(seed: UInt64, size: Size, progress: Progress) async throws -> ToolboxSimulationResults {
        var results = ToolboxSimulationResults()
        for hedged in [false, true] {
            let row = try await HedgingSimulation(requests: size.hedgingRequests, seed: seed).run(hedged: hedged)
            progress.note(
                "hedging hedged=\(hedged): p99 \(Format.decimal(row.p99Milliseconds, 1)) ms, "
                    + "\(Format.decimal(row.loadPerRequest, 3)) attempts/request")
            results.hedging.append(row)
        }
        for limit in [10, 50] {
            let row = try await BulkheadSimulation(arrivals: size.bulkheadArrivals, seed: seed).run(limit: limit)
            progress.note(
                "bulkhead limit=\(limit): p99 admitted \(Format.decimal(row.p99AdmittedMilliseconds, 1)) ms, "
                    + "\(Format.decimal(row.rejectedShare * 100, 1))% rejected")
            results.bulkhead.append(row)
        }
        for algorithm in RateLimiterSimulation.algorithms {
            let row = try await RateLimiterSimulation(length: size.rateLimiterSeconds, seed: seed).run(algorithm)
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
func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[Swift.min(sorted.count - 1, Swift.max(0, rank))]
}

extension Duration {
    /// The duration in milliseconds, as a fraction.
    var simulatedMilliseconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }
}

/// An exponential variate with the given mean.
func exponential(mean: Double, using generator: inout SeededRandomNumberGenerator) -> Double {
    -mean * log(1 - Double.random(in: 0..<1, using: &generator))
}

/// Rate-limiter accuracy: the library's ``RateLimiter`` on a test clock, offered
/// Poisson arrivals at three times its configured 100 per second for `length` seconds
/// (60 in a standard run), refusing what it cannot admit; the figure is what it
/// admitted per second.
struct RateLimiterSimulation {
    static let algorithms: [(name: String, make: @Sendable () throws -> RateLimiterAlgorithm)] = [
        ("token-bucket", { try .tokenBucket(capacity: 10, tokensPerPeriod: 10, period: .milliseconds(100)) }),
        ("sliding-window", { try .slidingWindow(limit: 100, window: .seconds(1), segments: 10) }),
    ]

    var configuredPerSecond = 100.0
    var offeredMultiple = 3.0
    /// Simulated seconds of arrivals.
    var length: Double
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
            admittedPerSecond: Double(admitted) / self.length, offered: offered, seconds: self.length)
    }
}

/// One rate-limiter row.
struct RateLimiterSimulationResult: Sendable {
    var algorithm: String
    var configuredPerSecond: Double
    var admittedPerSecond: Double
    var offered: Int
    /// Simulated seconds of arrivals (for the table's title; not a JSON field).
    var seconds: Double
}
