import Resilience
import ResilienceTesting
import Testing

extension CircuitBreakerReliability {
    /// Every invalid setting of a ``CircuitBreaker``, a ``CircuitBreakerConfiguration`` and a
    /// ``CircuitBreakerRegistry`` is rejected at construction with a thrown
    /// ``ConfigurationError`` (the project's decision: a thrown error, never a precondition)
    /// whose message names the setting, the accepted range and the value given. The same
    /// settings are checked through both the configuration's and the breaker's initializer,
    /// and values at the edge of each range are shown to be accepted.
    @Suite("Circuit breaker configuration validation")
    struct ConfigurationValidationTests {
        struct Invalid: Sendable, CustomTestStringConvertible {
            var setting: String
            var accepted: String
            /// The value as the message shows it.
            var value: String
            var apply: @Sendable (inout BreakerSettings) -> Void

            init(
                _ setting: String,
                accepted: String,
                value: String,
                _ apply: @escaping @Sendable (inout BreakerSettings) -> Void
            ) {
                self.setting = setting
                self.accepted = accepted
                self.value = value
                self.apply = apply
            }

            var testDescription: String { "\(self.setting) = \(self.value)" }

            var settings: BreakerSettings {
                var settings = BreakerSettings()
                self.apply(&settings)
                return settings
            }
        }

        static let positiveInt = "in 1...Int.max"
        static let threshold = "greater than 0 and at most 1"
        static let positive = "greater than zero"
        static let multiplier = "a finite number in 1..."

        static let invalidSettings: [Invalid] =
            [0, -1, Int.min].map { count in
                Invalid("tripRule.count", accepted: positiveInt, value: "\(count)") {
                    $0.tripRule = .consecutiveFailures(count)
                }
            }
            + [0, -0.0, -0.5, 1.0.nextUp, 1.000_000_1, 1.5, -.leastNonzeroMagnitude, .nan, .infinity, -.infinity]
            .map { value in
                Invalid("tripRule.threshold", accepted: threshold, value: "\(value)") {
                    $0.tripRule = .failureRate(threshold: value)
                }
            }
            + [0, -1, Int.min].map { calls in
                Invalid("tripRule.minimumCalls", accepted: positiveInt, value: "\(calls)") {
                    $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: calls)
                }
            }
            + [
                Invalid(
                    "tripRule.minimumCalls", accepted: "at most the window's size (100), or the rule could never trip",
                    value: "101"
                ) { $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: 101, window: .count(100)) },
                Invalid(
                    "tripRule.minimumCalls", accepted: "at most the window's size (1), or the rule could never trip",
                    value: "2"
                ) { $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: 2, window: .count(1)) },
            ]
            + [0, -1, Int.min, 100_001, Int.max].map { size in
                Invalid("tripRule.window.calls", accepted: "in 1...100000", value: "\(size)") {
                    $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: 1, window: .count(size))
                }
            }
            + [Duration.zero, .nanoseconds(-1), .seconds(Int64.min)].map { span in
                Invalid("tripRule.window.duration", accepted: positive, value: span.exactDescription) {
                    $0.tripRule = .failureRate(threshold: 0.5, window: .time(span))
                }
            }
            + [
                Invalid(
                    "tripRule.window.duration", accepted: "at least one nanosecond per bucket (10 buckets)",
                    value: Duration.nanoseconds(9).exactDescription
                ) { $0.tripRule = .failureRate(threshold: 0.5, window: .time(.nanoseconds(9), buckets: 10)) }
            ]
            + [0, -1, Int.min, 1_001, Int.max].map { buckets in
                Invalid("tripRule.window.buckets", accepted: "in 1...1000", value: "\(buckets)") {
                    $0.tripRule = .failureRate(threshold: 0.5, window: .time(.seconds(30), buckets: buckets))
                }
            }
            + [Duration.zero, .nanoseconds(-1), .seconds(Int64.min)].flatMap { duration in
                [
                    Invalid("slowCallRule.threshold", accepted: positive, value: duration.exactDescription) {
                        $0.slowCallRule = .slowerThan(duration)
                    },
                    Invalid("openDuration.duration", accepted: positive, value: duration.exactDescription) {
                        $0.openDuration = .fixed(duration)
                    },
                    Invalid("openDuration.initial", accepted: positive, value: duration.exactDescription) {
                        $0.openDuration = .growing(initial: duration, maximum: .seconds(10))
                    },
                    Invalid("probeLease", accepted: positive, value: duration.exactDescription) {
                        $0.probeLease = duration
                    },
                    Invalid("pushback.maximum", accepted: positive, value: duration.exactDescription) {
                        $0.pushback = .tooManyRequests(maximum: duration)
                    },
                    Invalid("pushback.maximum", accepted: positive, value: duration.exactDescription) {
                        $0.pushback = .anyRetryAfter(maximum: duration)
                    },
                ]
            }
            + [.nan, .infinity, -.infinity, 0.999_999, 0, -2, -.greatestFiniteMagnitude].map {
                (factor: Double) in
                Invalid("openDuration.multiplier", accepted: multiplier, value: "\(factor)") {
                    $0.openDuration = .growing(initial: .seconds(1), multiplier: factor, maximum: .seconds(10))
                }
            }
            + [
                Invalid(
                    "openDuration.maximum", accepted: "at least openDuration.initial (10 seconds)",
                    value: Duration.seconds(9).exactDescription
                ) { $0.openDuration = .growing(initial: .seconds(10), maximum: .seconds(9)) }
            ]
            + [0, -1, Int.min].flatMap { count in
                [
                    Invalid("maximumProbes", accepted: positiveInt, value: "\(count)") { $0.maximumProbes = count },
                    Invalid("successesToClose", accepted: positiveInt, value: "\(count)") {
                        $0.successesToClose = count
                    },
                ]
            }

        @Test(
            "An invalid setting makes the configuration throw an error naming it, its range and the value",
            arguments: invalidSettings)
        func anInvalidConfigurationSettingThrowsNamingIt(_ invalid: Invalid) {
            let error = #expect(throws: ConfigurationError.self) { try invalid.settings.configuration() }
            #expect(error?.setting == invalid.setting)
            #expect(error?.accepted == invalid.accepted)
            #expect(error?.value == invalid.value)
            #expect(error?.description == "\(invalid.setting) must be \(invalid.accepted), got \(invalid.value)")
        }

        @Test("An invalid setting makes the breaker's own initializer throw the same error", arguments: invalidSettings)
        func anInvalidBreakerSettingThrowsTheSameError(_ invalid: Invalid) {
            let fromBreaker = #expect(throws: ConfigurationError.self) { try invalid.settings.breaker() }
            let fromConfiguration = #expect(throws: ConfigurationError.self) { try invalid.settings.configuration() }
            #expect(fromBreaker == fromConfiguration)
        }

        @Test("A registry bound below 1 is rejected by both initializers", arguments: [0, -1, Int.min])
        func aRegistryBoundBelowOneIsRejected(_ maximumCount: Int) {
            let named = #expect(throws: ConfigurationError.self) {
                try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: maximumCount, clock: TestClock())
            }
            let custom = #expect(throws: ConfigurationError.self) {
                try CircuitBreakerRegistry<String>(maximumCount: maximumCount) { key in
                    CircuitBreaker(name: key, configuration: .default)
                }
            }
            for error in [named, custom] {
                #expect(error?.setting == "maximumCount")
                #expect(error?.description == "maximumCount must be in 1...Int.max, got \(maximumCount)")
            }
        }

        /// Values at the very edge of each accepted range.
        static let edgeSettings: [(String, @Sendable (inout BreakerSettings) -> Void)] = [
            ("consecutive failures Int.max", { $0.tripRule = .consecutiveFailures(.max) }),
            ("threshold 1", { $0.tripRule = .failureRate(threshold: 1) }),
            ("threshold just above 0", { $0.tripRule = .failureRate(threshold: .leastNonzeroMagnitude) }),
            (
                "minimum calls equal to the count window",
                { $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: 100_000, window: .count(100_000)) }
            ),
            ("a count window of 1", { $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: 1, window: .count(1)) }),
            (
                "minimum calls Int.max over a time window",
                { $0.tripRule = .failureRate(threshold: 0.5, minimumCalls: .max, window: .time(.seconds(1))) }
            ),
            (
                "one nanosecond per bucket",
                { $0.tripRule = .failureRate(threshold: 0.5, window: .time(.nanoseconds(1_000), buckets: 1_000)) }
            ),
            ("a slow-call threshold of one attosecond", { $0.slowCallRule = .slowerThan(Duration(attoseconds: 1)) }),
            ("an open time of one attosecond", { $0.openDuration = .fixed(Duration(attoseconds: 1)) }),
            (
                "a multiplier of 1 and a maximum equal to the initial",
                { $0.openDuration = .growing(initial: .seconds(5), multiplier: 1, maximum: .seconds(5)) }
            ),
            (
                "the largest finite multiplier",
                {
                    $0.openDuration = .growing(
                        initial: .seconds(1), multiplier: .greatestFiniteMagnitude, maximum: .resilienceMaximum)
                }
            ),
            (
                "Int.max probes and successes",
                {
                    $0.maximumProbes = .max
                    $0.successesToClose = .max
                }
            ),
            ("a lease of one attosecond", { $0.probeLease = Duration(attoseconds: 1) }),
            ("disabled pushback", { $0.pushback = .disabled }),
            ("the longest pushback maximum", { $0.pushback = .anyRetryAfter(maximum: .resilienceMaximum) }),
        ]

        @Test("Values at the edge of each range are accepted, and the breaker works with them")
        func valuesAtTheEdgeOfEachRangeAreAccepted() async throws {
            for (name, apply) in Self.edgeSettings {
                var settings = BreakerSettings()
                apply(&settings)
                let breaker = try #require(try? settings.breaker(), "\(name) was rejected")
                #expect(try await breaker.execute { name } == name)
                await breaker.fail()
                #expect(breaker.snapshot().state != .isolated)
            }
            _ = try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: 1, clock: TestClock())
            _ = try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: .max, clock: TestClock())
        }

        @Test("The first invalid setting, in the initializer's order, is the one reported")
        func theFirstInvalidSettingIsReported() {
            let error = #expect(throws: ConfigurationError.self) {
                try CircuitBreakerConfiguration(
                    tripRule: .consecutiveFailures(0), openDuration: .fixed(.zero), maximumProbes: 0,
                    successesToClose: 0, probeLease: .zero)
            }
            #expect(error?.setting == "tripRule.count")
        }
    }
}

extension CircuitBreakerReliability.ConfigurationValidationTests {
    /// Every setting of a breaker, defaulted, so that a test changes one at a time.
    struct BreakerSettings: Sendable {
        var tripRule = CircuitBreakerTripRule.default
        var slowCallRule: CircuitBreakerSlowCallRule?
        var openDuration = CircuitBreakerOpenDuration.default
        var maximumProbes = 1
        var successesToClose = 1
        var probeLease = Duration.seconds(60)
        var pushback = CircuitBreakerPushback.default

        func configuration() throws(ConfigurationError) -> CircuitBreakerConfiguration {
            try CircuitBreakerConfiguration(
                tripRule: self.tripRule, slowCallRule: self.slowCallRule, openDuration: self.openDuration,
                maximumProbes: self.maximumProbes, successesToClose: self.successesToClose, probeLease: self.probeLease,
                pushback: self.pushback)
        }

        func breaker() throws(ConfigurationError) -> CircuitBreaker {
            try CircuitBreaker(
                name: "settings", tripRule: self.tripRule, slowCallRule: self.slowCallRule,
                openDuration: self.openDuration, maximumProbes: self.maximumProbes,
                successesToClose: self.successesToClose, probeLease: self.probeLease, pushback: self.pushback,
                clock: TestClock())
        }
    }
}
