import Foundation
import Resilience
import Testing

/// Decoding settings runs the initializers' validation and names each rejected setting by its coding path.
@Suite struct SettingsDecodingTests {
    struct InvalidJSON: Sendable, CustomTestStringConvertible {
        var setting: String
        var json: String
        var decode: @Sendable (Data) throws -> Void

        var testDescription: String { "\(self.setting) in \(self.json)" }

        static func decoding<Settings: Decodable & Sendable>(
            _ type: Settings.Type, _ setting: String, _ json: String
        ) -> InvalidJSON {
            InvalidJSON(setting: setting, json: json) { _ = try JSONDecoder().decode(Settings.self, from: $0) }
        }

        static func policy(_ setting: String, _ json: String) -> InvalidJSON {
            decoding(RetryPolicyConfiguration.self, setting, json)
        }

        static func breaker(_ setting: String, _ json: String) -> InvalidJSON {
            decoding(CircuitBreakerConfiguration.self, setting, json)
        }
    }

    static let policySettings: [InvalidJSON] = [
        .policy("maximumAttempts", #"{"maximumAttempts": 0}"#),
        .policy("maximumAttempts", #"{"maximumAttempts": -3}"#),
        .policy("maximumAttempts", #"{"maximumAttempts": 1e30}"#),
        .policy("maximumAttempts", #"{"maximumAttempts": 2.5}"#),
        .policy("maximumAttempts", #"{"maximumAttempts": "three"}"#),
        .policy("maximumAttempt", #"{"maximumAttempt": 3}"#),
        .policy("backoff", #"{"backoff": 5}"#),
        .policy("backoff.kind", #"{"backoff": {}}"#),
        .policy("backoff.kind", #"{"backoff": {"kind": "fibonacci"}}"#),
        .policy("backoff.kind", #"{"backoff": {"kind": 2}}"#),
        .policy("backoff.delay", #"{"backoff": {"kind": "constant", "delay": "-1ms"}}"#),
        .policy("backoff.delay", #"{"backoff": {"kind": "constant"}}"#),
        .policy("backoff.initial", #"{"backoff": {"kind": "constant", "initial": "1s"}}"#),
        .policy("backoff.initial", #"{"backoff": {"kind": "exponential", "initial": "0s", "maximum": "1s"}}"#),
        .policy("backoff.initial", #"{"backoff": {"kind": "exponential", "initial": -1, "maximum": "1s"}}"#),
        .policy("backoff.initial", #"{"backoff": {"kind": "exponential", "maximum": "1s"}}"#),
        .policy(
            "backoff.multiplier",
            #"{"backoff": {"kind": "exponential", "initial": "1s", "multiplier": 0.5, "maximum": "9s"}}"#),
        .policy(
            "backoff.multiplier",
            #"{"backoff": {"kind": "exponential", "initial": "1s", "multiplier": "x2", "maximum": "9s"}}"#),
        .policy("backoff.maximum", #"{"backoff": {"kind": "exponential", "initial": "2s", "maximum": "1s"}}"#),
        .policy(
            "backoff.increment",
            #"{"backoff": {"kind": "linear", "initial": "1s", "increment": "-1s", "maximum": "5s"}}"#),
        .policy(
            "backoff.maximum",
            #"{"backoff": {"kind": "linear", "initial": "2s", "increment": "1s", "maximum": "1s"}}"#),
        .policy("jitter.kind", #"{"jitter": "random"}"#),
        .policy("jitter", #"{"jitter": 0.2}"#),
        .policy("jitter.ratio", #"{"jitter": {"kind": "proportional", "ratio": 1.5}}"#),
        .policy("jitter.ratio", #"{"jitter": {"kind": "proportional", "ratio": -0.1}}"#),
        .policy("jitter.ratio", #"{"jitter": "proportional"}"#),
        .policy("jitter.spread", #"{"jitter": {"kind": "full", "spread": 1}}"#),
        .policy("deadline", #"{"deadline": "0s"}"#),
        .policy("deadline", #"{"deadline": "-5s"}"#),
        .policy("deadline", #"{"deadline": -5}"#),
        .policy("deadline", #"{"deadline": "soon"}"#),
        .policy("deadline", #"{"deadline": "12 parsecs"}"#),
        .policy("deadline", #"{"deadline": "1.2.3s"}"#),
        .policy("deadline", #"{"deadline": "s"}"#),
        .policy("deadline", #"{"deadline": 1e300}"#),
        .policy("deadline", #"{"deadline": "999999999999999999999999h"}"#),
        .policy("deadline", #"{"deadline": true}"#),
        .policy("maximumRetryAfter", #"{"maximumRetryAfter": "-1ns"}"#),
    ]

    static let budgetSettings: [InvalidJSON] = [
        .decoding(RetryBudgetConfiguration.self, "maximumTokens", #"{"maximumTokens": 0}"#),
        .decoding(RetryBudgetConfiguration.self, "maximumTokens", #"{"maximumTokens": 2000000}"#),
        .decoding(RetryBudgetConfiguration.self, "tokenRatio", #"{"tokenRatio": 0}"#),
        .decoding(RetryBudgetConfiguration.self, "tokenRatio", #"{"maximumTokens": 5, "tokenRatio": 6}"#),
        .decoding(RetryBudgetConfiguration.self, "tokens", #"{"tokens": 6}"#),
    ]

    static let breakerSettings: [InvalidJSON] = [
        .breaker("tripRule.count", #"{"tripRule": {"kind": "consecutiveFailures", "count": 0}}"#),
        .breaker("tripRule.count", #"{"tripRule": {"kind": "consecutiveFailures"}}"#),
        .breaker("tripRule.kind", #"{"tripRule": {"kind": "percent"}}"#),
        .breaker("tripRule.threshold", #"{"tripRule": {"kind": "failureRate", "threshold": 0}}"#),
        .breaker("tripRule.threshold", #"{"tripRule": {"kind": "failureRate", "threshold": 1.5}}"#),
        .breaker("tripRule.threshold", #"{"tripRule": {"kind": "failureRate"}}"#),
        .breaker(
            "tripRule.minimumCalls", #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "minimumCalls": 0}}"#),
        .breaker(
            "tripRule.minimumCalls",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "minimumCalls": 101, "window": {"kind": "count", "calls": 100}}}"#
        ),
        .breaker(
            "tripRule.window.calls",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "minimumCalls": 1, "window": {"kind": "count", "calls": 0}}}"#
        ),
        .breaker(
            "tripRule.window.calls",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "count", "calls": 200000}}}"#),
        .breaker(
            "tripRule.window.duration",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "time", "duration": "0s"}}}"#),
        .breaker(
            "tripRule.window.duration",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "time", "duration": "5ns"}}}"#),
        .breaker(
            "tripRule.window.buckets",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "time", "duration": "30s", "buckets": 0}}}"#
        ),
        .breaker(
            "tripRule.window.buckets",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "time", "duration": "30s", "buckets": 1001}}}"#
        ),
        .breaker(
            "tripRule.window.kind",
            #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "calls", "calls": 10}}}"#),
        .breaker("slowCallRule.threshold", #"{"slowCallRule": {"threshold": "0s"}}"#),
        .breaker("slowCallRule.threshold", #"{"slowCallRule": {}}"#),
        .breaker("slowCallRule.slowerThan", #"{"slowCallRule": {"slowerThan": "2s"}}"#),
        .breaker("openDuration.duration", #"{"openDuration": {"kind": "fixed", "duration": "0s"}}"#),
        .breaker("openDuration.initial", #"{"openDuration": {"kind": "growing", "initial": "0s", "maximum": "1m"}}"#),
        .breaker(
            "openDuration.multiplier",
            #"{"openDuration": {"kind": "growing", "initial": "5s", "multiplier": 0.5, "maximum": "1m"}}"#),
        .breaker("openDuration.maximum", #"{"openDuration": {"kind": "growing", "initial": "5s", "maximum": "1s"}}"#),
        .breaker("openDuration.kind", #"{"openDuration": {"kind": "linear"}}"#),
        .breaker("maximumProbes", #"{"maximumProbes": 0}"#),
        .breaker("successesToClose", #"{"successesToClose": 0}"#),
        .breaker("probeLease", #"{"probeLease": "0s"}"#),
        .breaker("probeLease", #"{"probeLease": "forever"}"#),
        .breaker("pushback.maximum", #"{"pushback": {"kind": "tooManyRequests", "maximum": "0s"}}"#),
        .breaker("pushback.maximum", #"{"pushback": {"kind": "anyRetryAfter", "maximum": "-1s"}}"#),
        .breaker("pushback.kind", #"{"pushback": "sometimes"}"#),
        .breaker("classifier", #"{"classifier": "default"}"#),
    ]

    static let registrySettings: [InvalidJSON] = [
        .decoding(CircuitBreakerRegistryConfiguration.self, "maximumCount", #"{"maximumCount": 0}"#),
        .decoding(
            CircuitBreakerRegistryConfiguration.self, "breaker.tripRule.threshold",
            #"{"breaker": {"tripRule": {"kind": "failureRate", "threshold": 2}}}"#),
        .decoding(
            CircuitBreakerRegistryConfiguration.self, "breaker.maximumProbes", #"{"breaker": {"maximumProbes": 0}}"#),
        .decoding(
            CircuitBreakerRegistryConfiguration.self, "breaker.probeLease", #"{"breaker": {"probeLease": "-1s"}}"#),
        .decoding(CircuitBreakerRegistryConfiguration.self, "breaker.probes", #"{"breaker": {"probes": 2}}"#),
    ]

    static let nestedSettings: [InvalidJSON] = [
        .decoding(
            [String: RetryPolicyConfiguration].self, "inventory.backoff.initial",
            #"{"search": {}, "inventory": {"backoff": {"kind": "exponential", "initial": "0s", "maximum": "1s"}}}"#),
        .decoding(
            [String: RetryPolicyConfiguration].self, "inventory.maximumAttempts",
            #"{"inventory": {"maximumAttempts": 0}}"#),
        .decoding([RetryPolicyConfiguration].self, "[1].deadline", #"[{}, {"deadline": "0s"}]"#),
        .decoding(Backoff.self, "initial", #"{"kind": "exponential", "initial": "0s", "maximum": "1s"}"#),
        .decoding(Jitter.self, "ratio", #"{"kind": "proportional", "ratio": 3}"#),
        .decoding(RetryPolicyConfiguration.self, "settings", #"[1, 2]"#),
        .policy("backoff", #"{"backoff": ["exponential"]}"#),
    ]

    @Test(arguments: policySettings + budgetSettings + breakerSettings + registrySettings + nestedSettings)
    func anInvalidSettingFailsToDecodeNamingIt(_ invalid: InvalidJSON) throws {
        let error = #expect(throws: ConfigurationError.self) { try invalid.decode(Data(invalid.json.utf8)) }
        #expect(error?.setting == invalid.setting)
        #expect(error?.description.hasPrefix("\(invalid.setting) must be ") == true)
    }

    @Test func anOutOfRangeValueNamesTheValueAndTheAcceptedRange() throws {
        let error = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(#"{"maximumAttempts": 0}"#.utf8))
        }
        #expect(error?.description == "maximumAttempts must be in 1...Int.max, got 0")
        let threshold = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(
                CircuitBreakerConfiguration.self,
                from: Data(#"{"tripRule": {"kind": "failureRate", "threshold": 1.5}}"#.utf8))
        }
        #expect(threshold?.description == "tripRule.threshold must be greater than 0 and at most 1, got 1.5")
        let deadline = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(#"{"deadline": "-5s"}"#.utf8))
        }
        #expect(deadline?.description == "deadline must be greater than zero, got -5 seconds")
        let list = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(#"{"backoff": [1]}"#.utf8))
        }
        #expect(list?.description == "backoff must be an object of settings, got a list")
        let word = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(#"{"maximumAttempts": "three"}"#.utf8))
        }
        #expect(word?.description == "maximumAttempts must be a whole number in Int.min...Int.max, got \"three\"")
    }

    // MARK: - Valid forms

    struct DurationForm: Sendable, CustomTestStringConvertible {
        var json: String
        var duration: Duration
        var testDescription: String { self.json }
    }

    static let durationForms: [DurationForm] = [
        .init(json: #""250ms""#, duration: .milliseconds(250)),
        .init(json: #""1.5s""#, duration: .milliseconds(1_500)),
        .init(json: #""2m""#, duration: .seconds(120)),
        .init(json: #""1h""#, duration: .seconds(3_600)),
        .init(json: #""0.5h""#, duration: .seconds(1_800)),
        .init(json: #""100us""#, duration: .microseconds(100)),
        .init(json: #""100µs""#, duration: .microseconds(100)),
        .init(json: #""7ns""#, duration: .nanoseconds(7)),
        .init(json: #"" 2 s ""#, duration: .seconds(2)),
        .init(json: #"".25s""#, duration: .milliseconds(250)),
        .init(json: #""+3s""#, duration: .seconds(3)),
        .init(json: #""0.000000000000000001s""#, duration: Duration(attoseconds: 1)),
        .init(json: "30", duration: .seconds(30)),
        .init(json: "0.25", duration: .milliseconds(250)),
        .init(json: "0.001", duration: .milliseconds(1)),
        // Below a nanosecond, a number is read to the attosecond, as a string with a unit is.
        .init(json: "1e-10", duration: .nanoseconds(1) / 10),
        .init(json: #""0.1ns""#, duration: .nanoseconds(1) / 10),
    ]

    /// A number too small to be a duration (it would round to zero) is refused as it was written,
    /// naming its setting, not reported as the zero it rounded to.
    @Test func aNumberTooSmallForADurationIsRefusedAsWritten() {
        let error = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(#"{"deadline": 1e-20}"#.utf8))
        }
        #expect(error?.setting == "deadline")
        #expect(error?.value == "1e-20", "\(String(describing: error))")
    }

    /// An open duration decoded on its own names its jitter by its key, as its other settings are,
    /// and by its path inside a breaker's settings, from a file as from code.
    @Test func anOpenDurationsJitterIsNamedByItsPath() {
        let alone = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(
                CircuitBreakerOpenDuration.self, from: Data(#"{"kind": "fixed", "duration": "1s", "jitter": 2}"#.utf8))
        }
        #expect(alone?.setting == "jitter")
        let nested = #expect(throws: ConfigurationError.self) {
            try JSONDecoder().decode(
                CircuitBreakerConfiguration.self,
                from: Data(#"{"openDuration": {"kind": "fixed", "duration": "1s", "jitter": 2}}"#.utf8))
        }
        #expect(nested?.setting == "openDuration.jitter")
        let fromCode = #expect(throws: ConfigurationError.self) {
            try CircuitBreakerConfiguration(openDuration: .fixed(.seconds(1)).jittered(by: 2))
        }
        #expect(fromCode?.setting == "openDuration.jitter")
    }

    @Test(arguments: durationForms)
    func durationsReadAsNumbersOfSecondsOrStringsWithAUnit(_ form: DurationForm) throws {
        let json = #"{"kind": "constant", "delay": \#(form.json)}"#
        let backoff = try JSONDecoder().decode(Backoff.self, from: Data(json.utf8))
        #expect(backoff == .constant(form.duration))
    }

    @Test func missingKeysTakeTheInitializersDefaults() throws {
        let policy = try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data("{}".utf8))
        #expect(policy == .default)
        let budget = try JSONDecoder().decode(RetryBudgetConfiguration.self, from: Data("{}".utf8))
        #expect(budget == .default)
        let breaker = try JSONDecoder().decode(CircuitBreakerConfiguration.self, from: Data("{}".utf8))
        SettingsRoundTripTests.expectSame(breaker, .default)
        let rule = try JSONDecoder().decode(
            CircuitBreakerTripRule.self, from: Data(#"{"kind": "failureRate", "threshold": 0.5}"#.utf8))
        #expect(rule == .failureRate(threshold: 0.5))
        let registry = try JSONDecoder().decode(CircuitBreakerRegistryConfiguration.self, from: Data("{}".utf8))
        #expect(registry.maximumCount == 1_000)
        let pushback = try JSONDecoder().decode(
            [CircuitBreakerPushback].self, from: Data(#"["tooManyRequests", "anyRetryAfter", "disabled"]"#.utf8))
        #expect(pushback == [.tooManyRequests(), .anyRetryAfter(), .disabled])
    }

    @Test func theEncodedFormIsReadable() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let policy = try RetryPolicyConfiguration(
            maximumAttempts: 4, backoff: .exponential(initial: .milliseconds(250), maximum: .seconds(10)),
            jitter: .proportional(0.2), deadline: .milliseconds(1_500))
        #expect(
            String(decoding: try encoder.encode(policy), as: UTF8.self)
                == #"{"backoff":{"initial":"250ms","kind":"exponential","maximum":"10s","multiplier":2},"#
                + #""deadline":"1500ms","jitter":{"kind":"proportional","ratio":0.2},"maximumAttempts":4,"#
                + #""maximumRetryAfter":"60s"}"#)
        #expect(
            String(decoding: try encoder.encode(CircuitBreakerConfiguration.default), as: UTF8.self)
                == #"{"maximumProbes":1,"openDuration":{"duration":"30s","kind":"fixed"},"probeLease":"60s","#
                + #""pushback":{"kind":"tooManyRequests","maximum":"300s"},"slowCallRule":null,"successesToClose":1,"#
                + #""tripRule":{"count":5,"kind":"consecutiveFailures"}}"#)
        #expect(String(decoding: try encoder.encode(Jitter.full), as: UTF8.self) == #""full""#)
    }

    static func decode<Settings: Decodable>(_ type: Settings.Type, _ json: String) throws -> Settings {
        try JSONDecoder().decode(Settings.self, from: Data(json.utf8))
    }

    /// A setting written twice: a decoder cannot tell, and `JSONDecoder` keeps the first value, the
    /// later one unread and unvalidated, as the settings article says. Should a decoder ever keep the
    /// last or refuse the document, the article must change with this test.
    @Test func aSettingWrittenTwiceKeepsItsFirstValue() throws {
        let attempts = try Self.decode(RetryPolicyConfiguration.self, #"{"maximumAttempts": 4, "maximumAttempts": 0}"#)
        #expect(attempts.maximumAttempts == 4)
        let backoff = try Self.decode(
            RetryPolicyConfiguration.self, #"{"backoff": {"kind": "constant", "delay": "1s", "delay": "-1s"}}"#)
        #expect(backoff.backoff == .constant(.seconds(1)))
        let deadline = try Self.decode(RetryPolicyConfiguration.self, #"{"deadline": "10s", "deadline": "soon"}"#)
        #expect(deadline.deadline == .seconds(10))
    }

    /// A number too small for a `Double` (`1e-400`), which a decoder may read as the whole number 0, is
    /// refused as any number that would round to zero is, never read as no delay at all.
    @Test(arguments: [("1e-20", "1e-20"), ("5e-324", "5e-324"), ("1e-400", "a number out of range")])
    func aNumberTooSmallForADurationIsNeverReadAsZero(number: String, rendered: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try Self.decode(Backoff.self, #"{"kind": "constant", "delay": \#(number)}"#)
        }
        #expect(error?.setting == "delay")
        #expect(error?.value == rendered)
    }

    /// A number beyond a `Double`'s range is refused naming its setting and saying what it was.
    @Test(arguments: [
        (#"{"maximumAttempts": 1e400}"#, "maximumAttempts"),
        (#"{"deadline": 1e400}"#, "deadline"),
        (#"{"deadline": -1e400}"#, "deadline"),
    ])
    func aNumberBeyondADoubleIsCalledOutOfRange(json: String, setting: String) {
        let error = #expect(throws: ConfigurationError.self) { try Self.decode(RetryPolicyConfiguration.self, json) }
        #expect(error?.setting == setting)
        #expect(error?.value == "a number out of range", "\(String(describing: error))")
    }

    @Test func anObjectWhereANumberBelongsIsCalledAnObject() {
        let error = #expect(throws: ConfigurationError.self) {
            try Self.decode(RetryPolicyConfiguration.self, #"{"maximumAttempts": {"value": 3}}"#)
        }
        #expect(error?.value == "an object")
    }

    /// A whole number of seconds past a `Double`'s 53 bits is still read exactly.
    @Test func aLargeWholeNumberOfSecondsIsReadExactly() throws {
        let backoff = try Self.decode(Backoff.self, #"{"kind": "constant", "delay": 9007199254740993}"#)
        #expect(backoff == .constant(.seconds(9_007_199_254_740_993)))
    }
}
