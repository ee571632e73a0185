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
            let row = try await HedgingSimulation(seed: seed).run(hedged: hedged)
            progress.note(
                "hedging hedged=\(hedged): p99 \(Format.decimal(row.p99Milliseconds, 1)) ms, "
                    + "\(Format.decimal(row.loadPerRequest, 3)) attempts/request")
            results.hedging.append(row)
        }
        for limit in [10, 50] {
            let row = try await BulkheadSimulation(seed: seed).run(limit: limit)
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
