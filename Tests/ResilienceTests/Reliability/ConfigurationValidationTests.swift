import Resilience
import Testing

extension Reliability {
    /// Every invalid setting of the retry engine is rejected when the policy or budget
    /// is built, by a thrown ``ConfigurationError`` (the project's choice over a
    /// precondition, so configuration read at run time fails recoverably) whose
    /// message names the setting and the range it accepts.
    @Suite("Configuration validation")
    struct ConfigurationValidationTests {
        @Test(
            "Invalid settings are rejected at construction, naming the setting and the accepted range",
            arguments: InvalidSetting.all)
        func invalidSettingIsRejected(_ invalid: InvalidSetting) throws {
            let error = try #require(throws: ConfigurationError.self) { try invalid.build() }
            #expect(error.setting == invalid.setting)
            #expect(error.accepted.contains(invalid.accepted))
            #expect(error.value == invalid.value)
            // The message a user reads carries all three.
            #expect(error.description.hasPrefix("\(invalid.setting) must be "))
            #expect(error.description.contains(invalid.accepted))
            #expect(error.description.hasSuffix("got \(invalid.value)"))
        }

        @Test("Settings on the edge of their range are accepted", arguments: ValidSetting.all)
        func boundarySettingIsAccepted(_ valid: ValidSetting) throws {
            try valid.build()
        }

        @Test("The first invalid setting is the one reported")
        func firstInvalidSettingIsReported() {
            let error = #expect(throws: ConfigurationError.self) {
                try RetryPolicy(
                    maximumAttempts: 0,
                    backoff: .exponential(initial: .zero, maximum: .seconds(1)),
                    jitter: .proportional(.nan),
                    deadline: .zero
                )
            }
            #expect(error?.setting == "maximumAttempts")
        }

        @Test("Durations beyond the package's maximum are accepted and clamped, not rejected")
        func hugeDurationsAreClamped() throws {
            let policy = try RetryPolicy(
                deadline: .seconds(Int64.max),
                maximumRetryAfter: .seconds(Int64.max)
            )
            #expect(policy.deadline == .resilienceMaximum)
            #expect(policy.maximumRetryAfter == .resilienceMaximum)
        }

        /// Found by the fuzzer: 2.017578125 used to round to a capacity of 2.018 tokens.
        @Test(
            "A budget never holds more tokens than the maximum it was given",
            arguments: [2.017_578_125, 1.0006, 1.0005, 1.001, 999_999.999_9, 10])
        func budgetCapacityIsNotRoundedUp(_ maximumTokens: Double) throws {
            let budget = try RetryBudget(maximumTokens: maximumTokens, tokenRatio: 1)
            #expect(budget.tokens <= maximumTokens)
            #expect(budget.tokens > maximumTokens - 0.001)
            budget.recordFailure()
            budget.recordSuccess()
            #expect(budget.tokens <= maximumTokens)
        }

        @Test("A budget's refund is kept in thousandths of a token")
        func budgetAcceptsTheSmallestRefund() throws {
            let budget = try RetryBudget(maximumTokens: 1, tokenRatio: 0.001)
            budget.recordFailure()
            #expect(budget.tokens == 0)
            budget.recordSuccess()
            #expect(budget.tokens == 0.001)
        }
    }
}

extension Reliability.ConfigurationValidationTests {
    /// A setting that must be rejected, with what the error must say.
    struct InvalidSetting: Sendable, CustomTestStringConvertible {
        let label: String
        let setting: String
        let accepted: String
        let value: String
        let build: @Sendable () throws -> Void

        var testDescription: String { self.label }

        static let all: [InvalidSetting] =
            attempts + deadlines + retryAfterLimits + backoffs + multipliers + jitterRatios + budgets

        static let attempts = [0, -1, Int.min].map { attempts in
            InvalidSetting(
                label: "maximumAttempts \(attempts)", setting: "maximumAttempts", accepted: "1...Int.max",
                value: "\(attempts)"
            ) { _ = try RetryPolicy(maximumAttempts: attempts) }
        }

        static let deadlines = ([.zero, .nanoseconds(-1), .seconds(-1), .seconds(Int64.min)] as [Duration]).map {
            deadline in
            InvalidSetting(
                label: "deadline \(deadline)", setting: "deadline", accepted: "greater than zero",
                value: deadline.exactDescription
            ) { _ = try RetryPolicy(deadline: deadline) }
        }

        static let retryAfterLimits: [InvalidSetting] = [Duration.nanoseconds(-1), .seconds(-60)].map { limit in
            InvalidSetting(
                label: "maximumRetryAfter \(limit)", setting: "maximumRetryAfter", accepted: "zero or greater",
                value: limit.exactDescription
            ) { _ = try RetryPolicy(maximumRetryAfter: limit) }
        }

        static let backoffs: [InvalidSetting] = [
            backoff(
                "constant negative", .constant(.nanoseconds(-1)), "backoff.delay", "zero or greater",
                Duration.nanoseconds(-1).exactDescription),
            backoff(
                "linear negative initial", .linear(initial: .seconds(-1), increment: .seconds(1), maximum: .seconds(5)),
                "backoff.initial", "zero or greater", Duration.seconds(-1).exactDescription),
            backoff(
                "linear negative increment",
                .linear(initial: .seconds(1), increment: .seconds(-1), maximum: .seconds(5)),
                "backoff.increment", "zero or greater", Duration.seconds(-1).exactDescription),
            backoff(
                "linear maximum below initial",
                .linear(initial: .seconds(2), increment: .seconds(1), maximum: .seconds(1)),
                "backoff.maximum", "at least backoff.initial", Duration.seconds(1).exactDescription),
            backoff(
                "exponential zero initial", .exponential(initial: .zero, maximum: .seconds(1)),
                "backoff.initial", "greater than zero", Duration.zero.exactDescription),
            backoff(
                "exponential negative initial", .exponential(initial: .seconds(-1), maximum: .seconds(1)),
                "backoff.initial", "greater than zero", Duration.seconds(-1).exactDescription),
            backoff(
                "exponential maximum below initial", .exponential(initial: .seconds(2), maximum: .seconds(1)),
                "backoff.maximum", "at least backoff.initial", Duration.seconds(1).exactDescription),
        ]

        static let multipliers: [InvalidSetting] = [
            Double.nan, .infinity, -.infinity, 0.999, 0, -2, .leastNonzeroMagnitude,
        ].map { multiplier in
            backoff(
                "multiplier \(multiplier)",
                .exponential(initial: .seconds(1), multiplier: multiplier, maximum: .seconds(9)),
                "backoff.multiplier", "1...", "\(multiplier)")
        }

        static let jitterRatios: [InvalidSetting] = [Double.nan, -0.01, 1.0001, 2, .infinity, -.infinity].map { ratio in
            InvalidSetting(
                label: "jitter ratio \(ratio)", setting: "jitter.ratio", accepted: "0...1", value: "\(ratio)"
            ) { _ = try RetryPolicy(jitter: .proportional(ratio)) }
        }

        static let budgets: [InvalidSetting] =
            [0, 0.999, -1, .nan, .infinity, 1_000_000.5, 1e300].map { tokens in
                InvalidSetting(
                    label: "maximumTokens \(tokens)", setting: "maximumTokens", accepted: "1...1000000",
                    value: "\(tokens)"
                ) { _ = try RetryBudget(maximumTokens: tokens) }
            }
            + [0, -0.1, .nan, .infinity, 0.0009, 10.5].map { ratio in
                InvalidSetting(
                    label: "tokenRatio \(ratio)", setting: "tokenRatio", accepted: "0.001...maximumTokens (10.0)",
                    value: "\(ratio)"
                ) { _ = try RetryBudget(maximumTokens: 10, tokenRatio: ratio) }
            }

        private static func backoff(
            _ label: String, _ backoff: Backoff, _ setting: String, _ accepted: String, _ value: String
        ) -> InvalidSetting {
            InvalidSetting(label: label, setting: setting, accepted: accepted, value: value) {
                _ = try RetryPolicy(backoff: backoff)
            }
        }
    }

    /// A setting at the edge of its accepted range.
    struct ValidSetting: Sendable, CustomTestStringConvertible {
        let label: String
        let build: @Sendable () throws -> Void

        var testDescription: String { self.label }

        static let all: [ValidSetting] = [
            ValidSetting(label: "maximumAttempts 1") { _ = try RetryPolicy(maximumAttempts: 1) },
            ValidSetting(label: "maximumAttempts Int.max") { _ = try RetryPolicy(maximumAttempts: .max) },
            ValidSetting(label: "deadline 1 ns") { _ = try RetryPolicy(deadline: .nanoseconds(1)) },
            ValidSetting(label: "maximumRetryAfter zero") { _ = try RetryPolicy(maximumRetryAfter: .zero) },
            ValidSetting(label: "constant zero backoff") { _ = try RetryPolicy(backoff: .constant(.zero)) },
            ValidSetting(label: "linear all zero") {
                _ = try RetryPolicy(backoff: .linear(initial: .zero, increment: .zero, maximum: .zero))
            },
            ValidSetting(label: "exponential multiplier 1, maximum equal to initial") {
                _ = try RetryPolicy(
                    backoff: .exponential(initial: .nanoseconds(1), multiplier: 1, maximum: .nanoseconds(1)))
            },
            ValidSetting(label: "exponential greatest finite multiplier") {
                _ = try RetryPolicy(
                    backoff: .exponential(
                        initial: .seconds(1), multiplier: .greatestFiniteMagnitude, maximum: .seconds(Int64.max)))
            },
            ValidSetting(label: "jitter ratio 0") { _ = try RetryPolicy(jitter: .proportional(0)) },
            ValidSetting(label: "jitter ratio 1") { _ = try RetryPolicy(jitter: .proportional(1)) },
            ValidSetting(label: "budget of 1 token") { _ = try RetryBudget(maximumTokens: 1, tokenRatio: 1) },
            ValidSetting(label: "budget of a million tokens") {
                _ = try RetryBudget(maximumTokens: 1_000_000, tokenRatio: 1_000_000)
            },
        ]
    }
}
