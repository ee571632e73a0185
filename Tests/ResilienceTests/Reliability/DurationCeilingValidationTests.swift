import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A duration setting beyond the package's longest duration (about 146 years) is refused at
/// construction with a ``ConfigurationError`` naming it, by every strategy and helper that
/// keeps the duration as given, rather than cut to the longest without a word; the longest
/// itself is accepted.
@Suite("Durations beyond the longest are refused", .timeLimit(.minutes(5)))
struct DurationCeilingValidationTests {
    /// A duration setting, and how to build with a value of it.
    struct DurationSetting: Sendable, CustomTestStringConvertible {
        let label: String
        let setting: String
        let build: @Sendable (Duration) throws -> Void

        var testDescription: String { self.label }
    }

    static let bucket = try! RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1))

    static let all: [DurationSetting] = [
        DurationSetting(label: "RateLimitGate maximumWait", setting: "maximumWait") {
            _ = try RateLimitGate(maximumWait: $0, clock: TestClock())
        },
        DurationSetting(label: "AdaptiveThrottle window", setting: "window") {
            _ = try AdaptiveThrottle(window: $0, clock: TestClock())
        },
        DurationSetting(label: "CircuitBreakerConfiguration probeLease", setting: "probeLease") {
            _ = try CircuitBreakerConfiguration(probeLease: $0)
        },
        DurationSetting(label: "CircuitBreaker probeLease", setting: "probeLease") {
            _ = try CircuitBreaker(name: "b", probeLease: $0, clock: TestClock())
        },
        DurationSetting(label: "RateLimiter maximumWait", setting: "maximumWait") {
            _ = try RateLimiter(Self.bucket, maximumWait: $0, clock: TestClock())
        },
        DurationSetting(label: "ConcurrencyLimiter queueTimeout", setting: "queueTimeout") {
            _ = try ConcurrencyLimiter(limit: 1, queueLimit: 1, queueTimeout: $0, clock: TestClock())
        },
        DurationSetting(label: "Timeout duration", setting: "duration") { _ = try Timeout($0, clock: TestClock()) },
        DurationSetting(label: "HedgingDelay delay", setting: "delay") { _ = try HedgingDelay.fixed($0) },
    ]

    @Test("A duration beyond the longest is refused, naming the setting", arguments: Self.all)
    func aDurationBeyondTheLongestIsRefused(_ duration: DurationSetting) throws {
        // The last is beyond what `components` can represent.
        let values = [Duration.resilienceMaximum + .nanoseconds(1), .seconds(Int64.max), .seconds(Int64.max) * 18]
        for value in values {
            let error = try #require(throws: ConfigurationError.self, "\(value)") { try duration.build(value) }
            #expect(error.setting == duration.setting)
            #expect(error.accepted == "at most \(Duration.resilienceMaximum.exactDescription)")
            #expect(error.value == value.exactDescription)
        }
    }

    @Test("The longest duration itself is accepted", arguments: Self.all)
    func theLongestDurationIsAccepted(_ duration: DurationSetting) throws {
        try duration.build(.resilienceMaximum)
    }

    /// Decoding runs the same check: a probe lease beyond the longest in a settings file is
    /// refused, named by its path, rather than read back shorter than written.
    @Test func aDecodedProbeLeaseBeyondTheLongestIsRefused() throws {
        let json = #"{"breaker": {"probeLease": "9223372036854775807s"}}"#
        let error = try #require(throws: ConfigurationError.self) {
            try JSONDecoder().decode(CircuitBreakerRegistryConfiguration.self, from: Data(json.utf8))
        }
        #expect(error.setting == "breaker.probeLease")
    }
}
