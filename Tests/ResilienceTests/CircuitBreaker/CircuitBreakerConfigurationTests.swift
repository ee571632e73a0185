import Resilience
import ResilienceTesting
import Testing

@Suite struct CircuitBreakerConfigurationTests {
    struct InvalidSetting: Sendable, CustomTestStringConvertible {
        var setting: String
        var make: @Sendable () throws -> CircuitBreakerConfiguration
        var testDescription: String { self.setting }
    }

    static let invalidSettings: [InvalidSetting] = [
        .init(setting: "tripRule.count") {
            try CircuitBreakerConfiguration(tripRule: .consecutiveFailures(0))
        },
        .init(setting: "tripRule.threshold") {
            try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: 0))
        },
        .init(setting: "tripRule.threshold") {
            try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: 1.5))
        },
        .init(setting: "tripRule.threshold") {
            try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: .nan))
        },
        .init(setting: "tripRule.minimumCalls") {
            try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: 0.5, minimumCalls: 0))
        },
        .init(setting: "tripRule.minimumCalls") {
            try CircuitBreakerConfiguration(
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 101, window: .count(100)))
        },
        .init(setting: "tripRule.window.calls") {
            try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: 0.5, minimumCalls: 1, window: .count(0)))
        },
        .init(setting: "tripRule.window.calls") {
            try CircuitBreakerConfiguration(
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 1, window: .count(1_000_000)))
        },
        .init(setting: "tripRule.window.duration") {
            try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: 0.5, window: .time(.zero)))
        },
        .init(setting: "tripRule.window.duration") {
            try CircuitBreakerConfiguration(
                tripRule: .failureRate(threshold: 0.5, window: .time(.nanoseconds(5), buckets: 10)))
        },
        .init(setting: "tripRule.window.buckets") {
            try CircuitBreakerConfiguration(
                tripRule: .failureRate(threshold: 0.5, window: .time(.seconds(1), buckets: 0)))
        },
        .init(setting: "slowCallRule.threshold") {
            try CircuitBreakerConfiguration(slowCallRule: .slowerThan(.zero))
        },
        .init(setting: "openDuration.duration") {
            try CircuitBreakerConfiguration(openDuration: .fixed(.zero))
        },
        .init(setting: "openDuration.initial") {
            try CircuitBreakerConfiguration(openDuration: .growing(initial: .zero, maximum: .seconds(1)))
        },
        .init(setting: "openDuration.multiplier") {
            try CircuitBreakerConfiguration(
                openDuration: .growing(initial: .seconds(1), multiplier: 0.5, maximum: .seconds(10)))
        },
        .init(setting: "openDuration.maximum") {
            try CircuitBreakerConfiguration(openDuration: .growing(initial: .seconds(10), maximum: .seconds(1)))
        },
        .init(setting: "maximumProbes") {
            try CircuitBreakerConfiguration(maximumProbes: 0)
        },
        .init(setting: "successesToClose") {
            try CircuitBreakerConfiguration(successesToClose: 0)
        },
        .init(setting: "probeLease") {
            try CircuitBreakerConfiguration(probeLease: .zero)
        },
        .init(setting: "pushback.maximum") {
            try CircuitBreakerConfiguration(pushback: .tooManyRequests(maximum: .zero))
        },
    ]

    @Test(arguments: invalidSettings)
    func anInvalidSettingThrowsNamingIt(_ invalid: InvalidSetting) {
        let error = #expect(throws: ConfigurationError.self) { try invalid.make() }
        #expect(error?.setting == invalid.setting)
    }

    @Test func theBreakerInitializerValidatesToo() {
        let error = #expect(throws: ConfigurationError.self) {
            try CircuitBreaker(name: "bad", maximumProbes: 0, clock: TestClock())
        }
        #expect(error?.setting == "maximumProbes")
        #expect(error?.description == "maximumProbes must be in 1...Int.max, got 0")
    }

    @Test func theDefaultsAreValidAndDocumented() throws {
        let configuration = try CircuitBreakerConfiguration()
        #expect(configuration.tripRule == .consecutiveFailures(5))
        #expect(configuration.openDuration == .fixed(.seconds(30)))
        #expect(configuration.maximumProbes == 1)
        #expect(configuration.successesToClose == 1)
        #expect(configuration.probeLease == .seconds(60))
        #expect(configuration.pushback == .tooManyRequests(maximum: .seconds(300)))
        #expect(configuration.slowCallRule == nil)
        #expect(CircuitBreakerConfiguration.default.tripRule == configuration.tripRule)
    }

    @Test func disabledPushbackNeedsNoMaximum() throws {
        _ = try CircuitBreakerConfiguration(pushback: .disabled)
    }

    @Test func descriptionsReadAsTheFactories() {
        #expect(CircuitBreakerTripRule.consecutiveFailures(5).description == "consecutiveFailures(5)")
        #expect(
            CircuitBreakerTripRule.failureRate(threshold: 0.5, minimumCalls: 20, window: .count(100)).description
                == "failureRate(threshold: 0.5, minimumCalls: 20, window: count(100))")
        #expect(CircuitBreakerOpenDuration.fixed(.seconds(30)).description == "fixed(30.0 seconds)")
        #expect(CircuitBreakerSlowCallRule.slowerThan(.seconds(2)).description == "slowerThan(2.0 seconds)")
        #expect(CircuitBreakerPushback.disabled.description == "disabled")
        #expect(CircuitBreakerState.halfOpen.description == "halfOpen")
    }
}
