import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Every duration, count and rate setting of the public surface at its bad values: zero,
/// negative, NaN and the infinities (for a `Double`), durations past the package's longest
/// (about 146 years) and `Int.max` counts, given in code and, where the setting is
/// `Codable`, in JSON.
///
/// Each row either expects a ``ConfigurationError`` naming the setting, with the accepted
/// range and the value given, or checks the meaning the setting's documentation gives the
/// value. No row traps, and none is cut short without a word: where a duration past the
/// longest is accepted (the retry policy's limits and delays, a connectivity wait's limit,
/// a classifier's hint), the documentation says it counts as the longest.
@Suite("Bad settings get a clear error and lose nothing", .timeLimit(.minutes(5)))
struct SettingBoundsTests {
    /// One setting at one bad value, and what must come of it.
    struct Row: Sendable, CustomTestStringConvertible {
        enum Expected: Sendable {
            /// A ``ConfigurationError`` with this setting and accepted range, and the value
            /// rendered as given (not checked when `nil`).
            case refused(setting: String, accepted: String, value: String?)
            /// Accepted; `run` itself checks the documented meaning.
            case meaningful(String)
        }

        let label: String
        let expected: Expected
        let run: @Sendable () async throws -> Void

        var testDescription: String {
            switch self.expected {
            case .refused(let setting, _, _): "\(self.label): refused naming \(setting)"
            case .meaningful(let meaning): "\(self.label): \(meaning)"
            }
        }
    }

    // MARK: - Values

    static let maximum = Duration.resilienceMaximum
    /// Durations past the longest: just past it, `Int64.max` seconds, and beyond what
    /// `Duration.components` can represent.
    static let pastLongest: [Duration] = [maximum + .nanoseconds(1), .seconds(Int64.max), .seconds(Int64.max) * 18]
    static let negative: [Duration] = [.nanoseconds(-1), .seconds(Int64.min)]
    static let notPositive: [Duration] = [.zero] + negative
    static let notFinite: [Double] = [.nan, .infinity, -.infinity]
    static let belowOne: [Int] = [0, -1, Int.min]

    static let positive = "greater than zero"
    static let nonNegative = "zero or greater"
    static let longest = "at most \(Duration.resilienceMaximum.exactDescription)"
    static let oneOrMore = "in 1...Int.max"

    /// A refused value as the error writes it: a duration to the last digit, anything else
    /// as its own description.
    static func rendered(_ value: some CustomStringConvertible) -> String {
        (value as? Duration)?.exactDescription ?? value.description
    }

    /// One row per value, each expected to be refused naming `setting`.
    static func refused<Value: Sendable & CustomStringConvertible>(
        _ owner: String, _ setting: String, _ accepted: String, _ values: [Value],
        _ build: @escaping @Sendable (Value) async throws -> Void
    ) -> [Row] {
        values.map { value in
            Row(
                label: "\(owner) \(setting) = \(value)",
                expected: .refused(setting: setting, accepted: accepted, value: rendered(value))
            ) { try await build(value) }
        }
    }

    /// One row per value, each accepted with the documented meaning `check` verifies.
    static func meaningful<Value: Sendable & CustomStringConvertible>(
        _ owner: String, _ setting: String, _ meaning: String, _ values: [Value],
        _ check: @escaping @Sendable (Value) async throws -> Void
    ) -> [Row] {
        values.map { value in
            Row(label: "\(owner) \(setting) = \(value)", expected: .meaningful(meaning)) { try await check(value) }
        }
    }

    // MARK: - Circuit breaker

    static func breaker(
        tripRule: CircuitBreakerTripRule = .default,
        slowCallRule: CircuitBreakerSlowCallRule? = nil,
        openDuration: CircuitBreakerOpenDuration = .default,
        maximumProbes: Int = 1,
        successesToClose: Int = 1,
        probeLease: Duration = .seconds(60),
        pushback: CircuitBreakerPushback = .default
    ) throws(ConfigurationError) -> CircuitBreaker {
        try CircuitBreaker(
            name: "bounds", tripRule: tripRule, slowCallRule: slowCallRule, openDuration: openDuration,
            maximumProbes: maximumProbes, successesToClose: successesToClose, probeLease: probeLease,
            pushback: pushback, clock: TestClock())
    }

    static let breakerRows: [Row] =
        refused("breaker", "openDuration.duration", positive, notPositive) { _ = try breaker(openDuration: .fixed($0)) }
        + refused("breaker", "openDuration.duration", longest, pastLongest) {
            _ = try breaker(openDuration: .fixed($0))
        }
        + refused("jittered breaker", "openDuration.duration", longest, pastLongest) {
            _ = try breaker(openDuration: .fixed($0).jittered(by: 0.2, generator: SeededRandomNumberGenerator(seed: 1)))
        }
        + refused("breaker", "openDuration.initial", positive, notPositive) {
            _ = try breaker(openDuration: .growing(initial: $0, maximum: .seconds(10)))
        }
        + refused("breaker", "openDuration.initial", longest, pastLongest) {
            _ = try breaker(openDuration: .growing(initial: $0, maximum: $0))
        }
        + refused("breaker", "openDuration.maximum", longest, pastLongest) {
            _ = try breaker(openDuration: .growing(initial: .seconds(1), maximum: $0))
        }
        + refused("breaker", "openDuration.multiplier", "a finite number in 1...", notFinite + [0, -2, 0.5]) {
            _ = try breaker(openDuration: .growing(initial: .seconds(1), multiplier: $0, maximum: .seconds(10)))
        }
        + meaningful(
            "breaker", "openDuration.multiplier", "the second trip opens for the cap", [Double.greatestFiniteMagnitude]
        ) {
            let open = try breaker(openDuration: .growing(initial: .seconds(1), multiplier: $0, maximum: .seconds(60)))
                .configuration.openDuration
            #expect(open.duration(forTrip: 1) == .seconds(1))
            #expect(open.duration(forTrip: 2) == .seconds(60))
        }
        + refused("breaker", "openDuration.jitter", "in 0...1", notFinite + [-0.1, 1.1]) {
            _ = try breaker(openDuration: .fixed(.seconds(30)).jittered(by: $0))
        }
        + refused("breaker", "slowCallRule.threshold", positive, notPositive) {
            _ = try breaker(slowCallRule: .slowerThan($0))
        }
        + refused("breaker", "slowCallRule.threshold", longest, pastLongest) {
            _ = try breaker(slowCallRule: .slowerThan($0))
        }
        + refused("breaker", "tripRule.count", oneOrMore, belowOne) {
            _ = try breaker(tripRule: .consecutiveFailures($0))
        }
        + meaningful("breaker", "tripRule.count", "kept as given: a run that long opens it", [Int.max]) {
            let rule = try breaker(tripRule: .consecutiveFailures($0)).configuration.tripRule
            #expect(rule == .consecutiveFailures($0))
        }
        + refused(
            "breaker", "tripRule.threshold", "greater than 0 and at most 1",
            notFinite + [0, -0.5, 1.5, .greatestFiniteMagnitude]
        ) { _ = try breaker(tripRule: .failureRate(threshold: $0)) }
        + refused("breaker", "tripRule.minimumCalls", oneOrMore, belowOne) {
            _ = try breaker(tripRule: .failureRate(threshold: 0.5, minimumCalls: $0))
        }
        + refused(
            "breaker", "tripRule.minimumCalls", "at most the window's size (100), or the rule could never trip",
            [Int.max]
        ) { _ = try breaker(tripRule: .failureRate(threshold: 0.5, minimumCalls: $0, window: .count(100))) }
        + meaningful(
            "breaker", "tripRule.minimumCalls", "kept as given over a time window, whose size has no bound", [Int.max]
        ) { _ = try breaker(tripRule: .failureRate(threshold: 0.5, minimumCalls: $0, window: .time(.seconds(30)))) }
        + refused("breaker", "tripRule.window.calls", "in 1...100000", belowOne + [100_001, Int.max]) {
            _ = try breaker(tripRule: .failureRate(threshold: 0.5, minimumCalls: 1, window: .count($0)))
        }
        + refused("breaker", "tripRule.window.duration", positive, notPositive) {
            _ = try breaker(tripRule: .failureRate(threshold: 0.5, window: .time($0)))
        }
        + refused("breaker", "tripRule.window.duration", longest, pastLongest) {
            _ = try breaker(tripRule: .failureRate(threshold: 0.5, window: .time($0)))
        }
        + refused("breaker", "tripRule.window.buckets", "in 1...1000", belowOne + [1_001, Int.max]) {
            _ = try breaker(tripRule: .failureRate(threshold: 0.5, window: .time(.seconds(30), buckets: $0)))
        }
        + refused("breaker", "maximumProbes", oneOrMore, belowOne) { _ = try breaker(maximumProbes: $0) }
        + meaningful("breaker", "maximumProbes", "no bound on probes in flight", [Int.max]) {
            let configuration = try breaker(maximumProbes: $0).configuration
            #expect(configuration.maximumProbes == $0)
        }
        + refused("breaker", "successesToClose", oneOrMore, belowOne) { _ = try breaker(successesToClose: $0) }
        + meaningful("breaker", "successesToClose", "kept as given; probes run in turns", [Int.max]) {
            let configuration = try breaker(successesToClose: $0).configuration
            #expect(configuration.successesToClose == $0)
        }
        + refused("breaker", "probeLease", positive, notPositive) { _ = try breaker(probeLease: $0) }
        + refused("breaker", "probeLease", longest, pastLongest) { _ = try breaker(probeLease: $0) }
        + refused("breaker", "pushback.maximum", positive, notPositive) {
            _ = try breaker(pushback: .tooManyRequests(maximum: $0))
        }
        + refused("breaker", "pushback.maximum", longest, pastLongest) {
            _ = try breaker(pushback: .tooManyRequests(maximum: $0))
        }
        + refused("breaker (any hint)", "pushback.maximum", longest, pastLongest) {
            _ = try breaker(pushback: .anyRetryAfter(maximum: $0))
        }
        + refused("breaker registry", "maximumCount", oneOrMore, belowOne) {
            _ = try CircuitBreakerRegistryConfiguration(maximumCount: $0)
        }
        + refused("breaker registry", "maximumCount", oneOrMore, belowOne) {
            _ = try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: $0, clock: TestClock())
        }
        + meaningful("breaker registry", "maximumCount", "no bound on the breakers kept", [Int.max]) {
            let registry = try CircuitBreakerRegistry<String>(name: "hosts", maximumCount: $0, clock: TestClock())
            #expect(registry.maximumCount == $0)
        }

    // MARK: - Retry policy and budget

    static let retryRows: [Row] =
        refused("policy", "maximumAttempts", oneOrMore, belowOne) { _ = try RetryPolicy(maximumAttempts: $0) }
        + meaningful("policy", "maximumAttempts", "no bound on attempts", [Int.max]) {
            let policy = try RetryPolicy(maximumAttempts: $0)
            #expect(policy.maximumAttempts == $0)
        }
        + refused("policy", "deadline", positive, notPositive) { _ = try RetryPolicy(deadline: $0) }
        + meaningful("policy", "deadline", "counts as the longest, as documented", pastLongest) {
            let configuration = try RetryPolicyConfiguration(deadline: $0)
            #expect(configuration.deadline == $0, "the configuration keeps it as given")
            let policy = try RetryPolicy(deadline: $0)
            #expect(policy.deadline == maximum)
        }
        + refused("policy", "maximumRetryAfter", nonNegative, negative) { _ = try RetryPolicy(maximumRetryAfter: $0) }
        + meaningful("policy", "maximumRetryAfter", "zero honours no hint", [Duration.zero]) {
            let policy = try RetryPolicy(maximumRetryAfter: $0)
            #expect(policy.maximumRetryAfter == .zero)
        }
        + meaningful("policy", "maximumRetryAfter", "counts as the longest, as documented", pastLongest) {
            let policy = try RetryPolicy(maximumRetryAfter: $0)
            #expect(policy.maximumRetryAfter == maximum)
        }
        + refused("policy", "attemptTimeout", positive, notPositive) {
            let policy = RetryPolicy(configuration: .default, clock: TestClock())
            let outcome = await policy.outcome(attemptTimeout: $0) { 1 }
            #expect(outcome.attempts == 0, "nothing runs")
            _ = try outcome.get()
        }
        + meaningful("policy", "attemptTimeout", "counts as the longest, as documented", pastLongest) {
            let policy = RetryPolicy(configuration: .default, clock: TestClock())
            let value = try await policy.execute(attemptTimeout: $0) { 1 }
            #expect(value == 1)
        }
        + refused("policy", "backoff.delay", nonNegative, negative) { _ = try RetryPolicy(backoff: .constant($0)) }
        + meaningful("policy", "backoff.delay", "kept as given, waits the longest, as documented", pastLongest) {
            let policy = try RetryPolicy(backoff: .constant($0))
            #expect(policy.backoff.maximum == $0)
            #expect(policy.backoff.delay(forAttempt: 0) == maximum)
        }
        + refused("policy", "backoff.initial", positive, notPositive) {
            _ = try RetryPolicy(backoff: .exponential(initial: $0, maximum: .seconds(1)))
        }
        + refused("policy", "backoff.initial", nonNegative, negative) {
            _ = try RetryPolicy(backoff: .linear(initial: $0, increment: .seconds(1), maximum: .seconds(5)))
        }
        + refused("policy", "backoff.increment", nonNegative, negative) {
            _ = try RetryPolicy(backoff: .linear(initial: .seconds(1), increment: $0, maximum: .seconds(5)))
        }
        + meaningful("policy", "backoff.maximum", "no cap short of the longest, as documented", pastLongest) {
            let backoff = Backoff.exponential(initial: .seconds(1), maximum: $0)
            let policy = try RetryPolicy(backoff: backoff)
            #expect(policy.backoff.maximum == $0)
            #expect(backoff.delay(forAttempt: 3) == .seconds(8))
            #expect(backoff.delay(forAttempt: 1_000) == maximum)
        }
        + refused("policy", "backoff.multiplier", "a finite number in 1...", notFinite + [0, -2, 0.5]) {
            _ = try RetryPolicy(backoff: .exponential(initial: .seconds(1), multiplier: $0, maximum: .seconds(9)))
        }
        + refused("policy", "jitter.ratio", "in 0...1", notFinite + [-0.1, 1.1]) {
            _ = try RetryPolicy(jitter: .proportional($0))
        }
        + refused("budget", "maximumTokens", "in 1...1000000", notFinite + [0, -1, 1e300]) {
            _ = try RetryBudget(maximumTokens: $0)
        }
        + refused("budget", "tokenRatio", "in 0.001...maximumTokens (10.0)", notFinite + [0, -0.1, 10.5]) {
            _ = try RetryBudget(maximumTokens: 10, tokenRatio: $0)
        }
        + refused("connectivity wait", "maximumWaits", "in 1...100", belowOne + [101, Int.max]) {
            _ = try ConnectivityWait(monitor: TestConnectivityMonitor(), limit: .seconds(1), maximumWaits: $0)
        }
        + meaningful("connectivity wait", "limit", "negative counts as zero, as documented", negative) {
            #expect(ConnectivityWait(monitor: TestConnectivityMonitor(), limit: $0).limit == .zero)
            let bounded = try ConnectivityWait(monitor: TestConnectivityMonitor(), limit: $0, maximumWaits: 1)
            #expect(bounded.limit == .zero)
        }
        + meaningful("connectivity wait", "limit", "counts as the longest, as documented", pastLongest) {
            #expect(ConnectivityWait(monitor: TestConnectivityMonitor(), limit: $0).limit == maximum)
            let bounded = try ConnectivityWait(monitor: TestConnectivityMonitor(), limit: $0, maximumWaits: 1)
            #expect(bounded.limit == maximum)
        }
        + meaningful("classifier", "retry(after:)", "negative counts as zero, as documented", negative) {
            #expect(RetryDecision.retry(after: $0).retryAfter == .zero)
        }
        + meaningful("classifier", "retry(after:)", "counts as the longest, as documented", pastLongest) {
            #expect(RetryDecision.retry(after: $0).retryAfter == maximum)
        }

    // MARK: - Toolbox

    static let bucket = try! RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1))
    static let billion = "in 1...1000000000"

    static let toolboxRows: [Row] =
        refused("timeout", "duration", positive, notPositive) { _ = try Timeout($0, clock: TestClock()) }
        + refused("timeout", "duration", longest, pastLongest) { _ = try Timeout($0, clock: TestClock()) }
        + refused("concurrency limiter", "limit", "in 1...1000000", belowOne + [1_000_001, Int.max]) {
            _ = try ConcurrencyLimiter(limit: $0, clock: TestClock())
        }
        + refused("concurrency limiter", "queueLimit", "in 0...1000000", [-1, Int.min, 1_000_001, Int.max]) {
            _ = try ConcurrencyLimiter(limit: 1, queueLimit: $0, clock: TestClock())
        }
        + refused("concurrency limiter", "queueTimeout", positive, notPositive) {
            _ = try ConcurrencyLimiter(limit: 1, queueLimit: 1, queueTimeout: $0, clock: TestClock())
        }
        + refused("concurrency limiter", "queueTimeout", longest, pastLongest) {
            _ = try ConcurrencyLimiter(limit: 1, queueLimit: 1, queueTimeout: $0, clock: TestClock())
        }
        + refused("rate limiter", "maximumWait", nonNegative, negative) {
            _ = try RateLimiter(bucket, maximumWait: $0, clock: TestClock())
        }
        + refused("rate limiter", "maximumWait", longest, pastLongest) {
            _ = try RateLimiter(bucket, maximumWait: $0, clock: TestClock())
        }
        + meaningful("rate limiter", "maximumWait", "zero refuses at once", [Duration.zero]) {
            let limiter = try RateLimiter(bucket, maximumWait: $0, clock: TestClock())
            _ = try await limiter.execute { 1 }
            await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 2 } }
        }
        + refused("rate limiter", "capacity", billion, belowOne + [1_000_000_001, Int.max]) {
            _ = try RateLimiterAlgorithm.tokenBucket(capacity: $0, tokensPerPeriod: 1, period: .seconds(1))
        }
        + refused("rate limiter", "tokensPerPeriod", billion, belowOne + [1_000_000_001, Int.max]) {
            _ = try RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: $0, period: .seconds(1))
        }
        + refused("rate limiter", "period", "in 1 microsecond...366 days", notPositive + pastLongest) {
            _ = try RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: $0)
        }
        + refused("rate limiter", "limit", billion, belowOne + [1_000_000_001, Int.max]) {
            _ = try RateLimiterAlgorithm.slidingWindow(limit: $0, window: .seconds(1))
        }
        + refused("rate limiter", "segments", "in 1...1000", belowOne + [1_001, Int.max]) {
            _ = try RateLimiterAlgorithm.slidingWindow(limit: 1, window: .seconds(1), segments: $0)
        }
        + refused(
            "rate limiter", "window", "in 10 microseconds (one per segment)...366 days", notPositive + pastLongest
        ) {
            _ = try RateLimiterAlgorithm.slidingWindow(limit: 1, window: $0)
        }
        + refused("rate limiter registry", "maximumCount", "in 1...10000000", belowOne + [10_000_001, Int.max]) {
            _ = try RateLimiterRegistry<String>(name: "hosts", algorithm: bucket, maximumCount: $0, clock: TestClock())
        }
        + refused("rate limiter registry", "maximumWait", longest, pastLongest) {
            _ = try RateLimiterRegistry<String>(name: "hosts", algorithm: bucket, maximumWait: $0, clock: TestClock())
        }
        + refused("pipeline registry", "maximumCount", "in 1...10000000", belowOne + [10_000_001, Int.max]) {
            _ = try ResiliencePipelineRegistry<String, Timeout>(maximumCount: $0) { _ in
                ResiliencePipeline { try! Timeout(.seconds(1)) }
            }
        }
        + refused("hedging", "delay", nonNegative, negative) { _ = try HedgingDelay.fixed($0) }
        + refused("hedging", "delay", longest, pastLongest) { _ = try HedgingDelay.fixed($0) }
        + meaningful("hedging", "delay", "zero hedges at once", [Duration.zero]) {
            let hedging = try Hedging(delay: .fixed($0), clock: TestClock())
            #expect(hedging.currentDelay == .zero)
        }
        + refused("hedging", "percentile", "in 50...99.99", notFinite + [0, 49.9, 100, -95]) {
            _ = try HedgingDelay.percentile($0, initial: .seconds(1))
        }
        + refused("hedging", "sampleCount", "in 10...10000", belowOne + [9, 10_001, Int.max]) {
            _ = try HedgingDelay.percentile(95, ofLast: $0, initial: .seconds(1))
        }
        + refused("hedging", "initial", positive, notPositive) { _ = try HedgingDelay.percentile(95, initial: $0) }
        + refused("hedging", "initial", longest, pastLongest) { _ = try HedgingDelay.percentile(95, initial: $0) }
        + refused("hedging", "maximumHedges", "in 1...10", belowOne + [11, Int.max]) {
            _ = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: $0, clock: TestClock())
        }
        + refused("adaptive throttle", "multiplier", "finite and at least 1", notFinite + [0, -2, 0.5]) {
            _ = try AdaptiveThrottle(multiplier: $0, clock: TestClock())
        }
        + refused("adaptive throttle", "window", positive, notPositive) {
            _ = try AdaptiveThrottle(window: $0, clock: TestClock())
        }
        + refused("adaptive throttle", "window", longest, pastLongest) {
            _ = try AdaptiveThrottle(window: $0, clock: TestClock())
        }
        + refused("adaptive throttle", "floor", nonNegative, [-1, Int.min]) {
            _ = try AdaptiveThrottle(floor: $0, clock: TestClock())
        }
        + meaningful("adaptive throttle", "floor", "never rejects", [Int.max]) {
            let throttle = try AdaptiveThrottle(floor: $0, clock: TestClock())
            for _ in 0..<100 {
                #expect(throttle.admit())
                throttle.recordRejected()
            }
        }
        + refused("rate-limit gate", "maximumWait", nonNegative, negative) {
            _ = try RateLimitGate(maximumWait: $0, clock: TestClock())
        }
        + refused("rate-limit gate", "maximumWait", longest, pastLongest) {
            _ = try RateLimitGate(maximumWait: $0, clock: TestClock())
        }
        + refused("standard HTTP", "concurrencyLimit", "in 1...1000000", belowOne + [1_000_001, Int.max]) {
            _ = try ResiliencePipeline.standardHTTP(concurrencyLimit: $0, clock: TestClock())
        }
        + refused("standard HTTP", "totalTimeout", positive, notPositive) {
            _ = try ResiliencePipeline.standardHTTP(totalTimeout: $0, clock: TestClock())
        }
        + refused("standard HTTP", "totalTimeout", longest, pastLongest) {
            _ = try ResiliencePipeline.standardHTTP(totalTimeout: $0, clock: TestClock())
        }
        + refused("standard HTTP", "maximumAttempts", oneOrMore, belowOne) {
            _ = try ResiliencePipeline.standardHTTP(maximumAttempts: $0, clock: TestClock())
        }
        + refused("standard HTTP", "attemptTimeout", positive, notPositive) {
            _ = try ResiliencePipeline.standardHTTP(attemptTimeout: $0, clock: TestClock())
        }
        + refused("standard HTTP", "attemptTimeout", longest, pastLongest) {
            _ = try ResiliencePipeline.standardHTTP(totalTimeout: maximum, attemptTimeout: $0, clock: TestClock())
        }
        + meaningful("HTTP error", "bodyExcerptLimit", "negative keeps nothing, as documented", [-1, Int.min]) {
            let error = HTTPResponseError(statusCode: 500, body: Data("body".utf8), bodyExcerptLimit: $0)
            #expect(error.bodyExcerpt.isEmpty)
        }

    // MARK: - JSON

    /// A decoding row: `json` decoded as `Settings` is refused naming `setting`.
    static func decoding<Settings: Decodable & Sendable>(
        _ type: Settings.Type, _ setting: String, _ accepted: String, value: Duration, _ json: String
    ) -> Row {
        Row(
            label: "\(Settings.self) from \(json)",
            expected: .refused(setting: setting, accepted: accepted, value: value.exactDescription)
        ) { _ = try JSONDecoder().decode(Settings.self, from: Data(json.utf8)) }
    }

    /// 4,611,686,019 seconds: one second past the longest duration.
    static let pastLongestSeconds = Duration.seconds(Int64.max / 2_000_000_000 + 1)

    static let jsonRows: [Row] =
        [
            decoding(
                CircuitBreakerRegistryConfiguration.self, "breaker.openDuration.duration", longest,
                value: .seconds(Int64.max),
                #"{"breaker": {"openDuration": {"kind": "fixed", "duration": "9223372036854775807s"}}}"#),
            decoding(
                CircuitBreakerConfiguration.self, "openDuration.duration", longest, value: pastLongestSeconds,
                #"{"openDuration": {"kind": "fixed", "duration": 4611686019, "jitter": 0.1}}"#),
            decoding(
                CircuitBreakerConfiguration.self, "openDuration.initial", longest, value: pastLongestSeconds,
                #"{"openDuration": {"kind": "growing", "initial": "4611686019s", "maximum": "4611686019s"}}"#),
            decoding(
                CircuitBreakerConfiguration.self, "openDuration.maximum", longest, value: .seconds(10_000_000_000),
                #"{"openDuration": {"kind": "growing", "initial": "5s", "maximum": 1e10}}"#),
            decoding(
                CircuitBreakerOpenDuration.self, "maximum", longest, value: .seconds(Int64.max),
                #"{"kind": "growing", "initial": "5s", "maximum": "9223372036854775807s"}"#),
            decoding(
                CircuitBreakerConfiguration.self, "slowCallRule.threshold", longest, value: pastLongestSeconds,
                #"{"slowCallRule": {"threshold": "4611686019s"}}"#),
            decoding(
                CircuitBreakerSlowCallRule.self, "threshold", longest, value: .seconds(Int64.max),
                #"{"threshold": "9223372036854775807s"}"#),
            decoding(
                CircuitBreakerConfiguration.self, "tripRule.window.duration", longest, value: pastLongestSeconds,
                #"{"tripRule": {"kind": "failureRate", "threshold": 0.5, "window": {"kind": "time", "duration": "4611686019s"}}}"#
            ),
            decoding(
                CircuitBreakerWindow.self, "duration", longest, value: .seconds(Int64.max),
                #"{"kind": "time", "duration": "9223372036854775807s", "buckets": 10}"#),
            decoding(
                CircuitBreakerRegistryConfiguration.self, "breaker.pushback.maximum", longest,
                value: pastLongestSeconds,
                #"{"breaker": {"pushback": {"kind": "anyRetryAfter", "maximum": "4611686019s"}}}"#),
            decoding(
                CircuitBreakerPushback.self, "maximum", longest, value: .seconds(Int64.max),
                #"{"kind": "tooManyRequests", "maximum": "9223372036854775807s"}"#),
            decoding(
                CircuitBreakerConfiguration.self, "probeLease", longest, value: pastLongestSeconds,
                #"{"probeLease": "4611686019s"}"#),
        ]
        + [
            Row(
                label: "a policy's deadline past the longest, from JSON", expected: .meaningful("counts as the longest")
            ) {
                let json = #"{"deadline": "9223372036854775807s", "maximumRetryAfter": "9223372036854775807s"}"#
                let configuration = try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(json.utf8))
                #expect(configuration.deadline == .seconds(Int64.max), "the configuration keeps it as given")
                let policy = RetryPolicy(configuration: configuration)
                #expect(policy.deadline == maximum)
                #expect(policy.maximumRetryAfter == maximum)
            },
            Row(label: "a backoff cap past the longest, from JSON", expected: .meaningful("kept as given")) {
                let json = #"{"kind": "exponential", "initial": "1s", "maximum": "9223372036854775807s"}"#
                let backoff = try JSONDecoder().decode(Backoff.self, from: Data(json.utf8))
                #expect(backoff.maximum == .seconds(Int64.max))
                #expect(backoff.delay(forAttempt: 1_000) == maximum)
            },
        ]

    static let all = breakerRows + retryRows + toolboxRows + jsonRows

    @Test("Each bad value is refused naming its setting, or has its documented meaning", arguments: all)
    func eachBadValueIsRefusedOrMeaningful(_ row: Row) async throws {
        switch row.expected {
        case .refused(let setting, let accepted, let value):
            let error = await #expect(throws: ConfigurationError.self) { try await row.run() }
            #expect(error?.setting == setting)
            #expect(error?.accepted == accepted)
            if let value { #expect(error?.value == value) }
        case .meaningful:
            try await row.run()
        }
    }

    /// The longest duration itself is accepted by every setting that refuses a longer one,
    /// and a breaker made with it reports it as given.
    @Test("The longest duration is accepted where a longer one is refused")
    func theLongestDurationIsAccepted() async throws {
        let open = try Self.breaker(
            tripRule: .failureRate(threshold: 0.5, window: .time(Self.maximum)),
            slowCallRule: .slowerThan(Self.maximum),
            openDuration: .growing(initial: Self.maximum, maximum: Self.maximum),
            pushback: .anyRetryAfter(maximum: Self.maximum))
        #expect(open.configuration.openDuration.duration(forTrip: 1) == Self.maximum)
        #expect(open.configuration.slowCallRule == .slowerThan(Self.maximum))
        #expect(open.configuration.pushback == .anyRetryAfter(maximum: Self.maximum))
        let clock = TestClock()
        let fixed = try CircuitBreaker(
            name: "longest", tripRule: .consecutiveFailures(1), openDuration: .fixed(Self.maximum), clock: clock)
        await fixed.fail()
        #expect(fixed.snapshot().remainingOpenTime == Self.maximum)
        let decoded = try JSONDecoder().decode(
            CircuitBreakerConfiguration.self,
            from: Data(#"{"openDuration": {"kind": "fixed", "duration": "4611686018s"}}"#.utf8))
        #expect(decoded.openDuration == .fixed(Self.maximum))
    }

    /// A refused duration and the limit it broke are written to the last digit: one
    /// nanosecond past the longest must not read as the longest itself.
    @Test("A duration one nanosecond past the longest reads differently from the longest")
    func aDurationJustPastTheLongestReadsDifferently() throws {
        let justPast = Self.maximum + .nanoseconds(1)
        let error = #expect(throws: ConfigurationError.self) { try Self.breaker(openDuration: .fixed(justPast)) }
        #expect(error?.value == "4611686018.000000001 seconds")
        #expect(error?.accepted == "at most 4611686018 seconds")
        #expect(
            error?.description
                == "openDuration.duration must be at most 4611686018 seconds, got 4611686018.000000001 seconds")
    }

    @Test(
        "A duration is written out exactly",
        arguments: [
            (Duration.zero, "0 seconds"),
            (.seconds(1), "1 second"),
            (.seconds(-1), "-1 second"),
            (.milliseconds(1_500), "1.5 seconds"),
            (.milliseconds(-250), "-0.25 seconds"),
            (.nanoseconds(1), "0.000000001 seconds"),
            (Duration(secondsComponent: 0, attosecondsComponent: 1), "0.000000000000000001 seconds"),
            (.seconds(Int64.max) * 4 + .nanoseconds(7), "36893488147419103228.000000007 seconds"),
            (.seconds(Int64.min), "-9223372036854775808 seconds"),
        ])
    func aDurationIsWrittenOutExactly(_ duration: Duration, _ text: String) {
        #expect(duration.exactDescription == text)
    }
}
