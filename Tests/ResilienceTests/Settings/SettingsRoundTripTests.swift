import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Every valid setting survives encoding and decoding unchanged.
@Suite struct SettingsRoundTripTests {
    /// Compares every encoded setting of two breaker configurations (the classifier is not a setting).
    static func expectSame(
        _ a: CircuitBreakerConfiguration,
        _ b: CircuitBreakerConfiguration,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(a.tripRule == b.tripRule, sourceLocation: sourceLocation)
        #expect(a.slowCallRule == b.slowCallRule, sourceLocation: sourceLocation)
        #expect(a.openDuration == b.openDuration, sourceLocation: sourceLocation)
        #expect(a.maximumProbes == b.maximumProbes, sourceLocation: sourceLocation)
        #expect(a.successesToClose == b.successesToClose, sourceLocation: sourceLocation)
        #expect(a.probeLease == b.probeLease, sourceLocation: sourceLocation)
        #expect(a.pushback == b.pushback, sourceLocation: sourceLocation)
    }

    static func roundTrip<Settings: Codable>(_ settings: Settings) throws -> Settings {
        try JSONDecoder().decode(Settings.self, from: try JSONEncoder().encode(settings))
    }

    // MARK: - Random valid settings

    /// Draws valid settings from a seeded generator, durations at every granularity down to the attosecond.
    struct Draw {
        var generator: SeededRandomNumberGenerator

        mutating func int(_ range: ClosedRange<Int>) -> Int {
            Int.random(in: range, using: &self.generator)
        }

        mutating func double(_ range: ClosedRange<Double>) -> Double {
            Double.random(in: range, using: &self.generator)
        }

        mutating func bool() -> Bool {
            Bool.random(using: &self.generator)
        }

        /// A positive duration, in whole hours, seconds, milliseconds, nanoseconds or attoseconds.
        mutating func duration(atLeast minimum: Duration = .nanoseconds(1)) -> Duration {
            let scale: Int128 = [
                3_600_000_000_000_000_000_000, 1_000_000_000_000_000_000, 1_000_000_000_000_000, 1_000_000_000, 1,
            ][self.int(0...4)]
            let count = Int128(self.int(1...100_000))
            let drawn = Duration(attoseconds: count * scale)
            return Swift.max(drawn, minimum)
        }

        mutating func backoff() -> Backoff {
            switch self.int(0...2) {
            case 0:
                return .constant(self.bool() ? .zero : self.duration())
            case 1:
                let initial = self.duration()
                return .linear(initial: initial, increment: self.duration(), maximum: initial + self.duration())
            default:
                let initial = self.duration()
                return .exponential(
                    initial: initial, multiplier: self.double(1...10), maximum: initial + self.duration())
            }
        }

        mutating func jitter() -> Jitter {
            [.none, .full, .equal, .decorrelated, .proportional(self.double(0...1))][self.int(0...4)]
        }

        mutating func policy() throws -> RetryPolicyConfiguration {
            try RetryPolicyConfiguration(
                maximumAttempts: self.int(1...Int.max), backoff: self.backoff(), jitter: self.jitter(),
                deadline: self.bool() ? nil : self.duration(), maximumRetryAfter: self.bool() ? .zero : self.duration())
        }

        mutating func budget() throws -> RetryBudgetConfiguration {
            let maximum = self.double(1...1_000_000)
            return try RetryBudgetConfiguration(maximumTokens: maximum, tokenRatio: self.double(0.001...maximum))
        }

        mutating func tripRule() -> CircuitBreakerTripRule {
            if self.bool() { return .consecutiveFailures(self.int(1...Int.max)) }
            let window: CircuitBreakerWindow
            var mostCalls = Int.max
            if self.bool() {
                mostCalls = self.int(1...CircuitBreakerWindow.maximumCount)
                window = .count(mostCalls)
            } else {
                let buckets = self.int(1...CircuitBreakerWindow.maximumBuckets)
                window = .time(self.duration(atLeast: .nanoseconds(buckets)), buckets: buckets)
            }
            return .failureRate(
                threshold: self.double(0.000_001...1), minimumCalls: self.int(1...mostCalls), window: window)
        }

        mutating func breaker() throws -> CircuitBreakerConfiguration {
            var openDuration: CircuitBreakerOpenDuration
            if self.bool() {
                openDuration = .fixed(self.duration())
            } else {
                let initial = self.duration()
                openDuration = .growing(
                    initial: initial, multiplier: self.double(1...10), maximum: initial + self.duration())
            }
            if self.bool() {
                // Equal by its spread: the stream behind it is not a setting.
                openDuration = openDuration.jittered(by: self.double(0...1), generator: self.generator)
            }
            let pushback: CircuitBreakerPushback = [
                .disabled, .tooManyRequests(maximum: self.duration()), .anyRetryAfter(maximum: self.duration()),
            ][self.int(0...2)]
            return try CircuitBreakerConfiguration(
                tripRule: self.tripRule(), slowCallRule: self.bool() ? nil : .slowerThan(self.duration()),
                openDuration: openDuration, maximumProbes: self.int(1...Int.max),
                successesToClose: self.int(1...Int.max), probeLease: self.duration(), pushback: pushback)
        }
    }

    @Test(arguments: 0..<20 as Range<UInt64>)
    func randomValidSettingsRoundTripUnchanged(seed: UInt64) throws {
        var draw = Draw(generator: SeededRandomNumberGenerator(seed: seed))
        for _ in 0..<25 {
            let policy = try draw.policy()
            #expect(try Self.roundTrip(policy) == policy)

            let budget = try draw.budget()
            #expect(try Self.roundTrip(budget) == budget)

            let breaker = try draw.breaker()
            Self.expectSame(try Self.roundTrip(breaker), breaker)

            let registry = try CircuitBreakerRegistryConfiguration(
                maximumCount: draw.int(1...Int.max), breaker: breaker)
            let decodedRegistry = try Self.roundTrip(registry)
            #expect(decodedRegistry.maximumCount == registry.maximumCount)
            Self.expectSame(decodedRegistry.breaker, breaker)
        }
    }

    @Test func theDefaultsRoundTripUnchanged() throws {
        #expect(try Self.roundTrip(RetryPolicyConfiguration.default) == .default)
        #expect(try Self.roundTrip(RetryBudgetConfiguration.default) == .default)
        Self.expectSame(try Self.roundTrip(CircuitBreakerConfiguration.default), .default)
        for jitter in [Jitter.none, .full, .equal, .decorrelated, .proportional(0.25)] {
            #expect(try Self.roundTrip(jitter) == jitter)
        }
    }

    /// A jittered open duration decoded twice, or decoded, encoded and decoded again, is the same
    /// setting; a different spread is not.
    @Test func aJitteredOpenDurationIsEqualToItsRoundTrip() throws {
        let json = #"{"openDuration": {"kind": "growing", "initial": "5s", "maximum": "2m", "jitter": 0.2}}"#
        let decoded = try JSONDecoder().decode(CircuitBreakerConfiguration.self, from: Data(json.utf8))
        let twice = try JSONDecoder().decode(CircuitBreakerConfiguration.self, from: Data(json.utf8))
        #expect(decoded.openDuration == twice.openDuration)
        #expect(try Self.roundTrip(decoded).openDuration == decoded.openDuration)
        #expect(Set([decoded.openDuration, twice.openDuration]).count == 1)
        let fixed = CircuitBreakerOpenDuration.fixed(.seconds(30))
        #expect(fixed.jittered(by: 0.2) == fixed.jittered(by: 0.2))
        #expect(fixed.jittered(by: 0.2) != fixed.jittered(by: 0.3))
        #expect(fixed.jittered(by: 0.2) != fixed)
    }

    @Test func extremeDurationsRoundTripToTheAttosecond() throws {
        let durations: [Duration] = [
            Duration(attoseconds: 1), Duration(attoseconds: 999_999_999_999_999_999), .seconds(Int64.max),
            Duration(attoseconds: Int128.max), .nanoseconds(1), .microseconds(1) + Duration(attoseconds: 1),
        ]
        for duration in durations {
            #expect(try Self.roundTrip(Backoff.constant(duration)) == .constant(duration))
        }
    }
}
