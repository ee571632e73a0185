/// The stages of ``ResiliencePipeline/standardHTTP(name:concurrencyLimit:totalTimeout:maximumAttempts:breakerConfiguration:attemptTimeout:clock:)``,
/// outermost first: a concurrency limiter, a total timeout, a retry policy, a circuit breaker and an attempt timeout.
public typealias StandardHTTPStrategies = NestedStrategies<
    ConcurrencyLimiter,
    NestedStrategies<Timeout, NestedStrategies<RetryPolicy, NestedStrategies<CircuitBreaker, Timeout>>>
>

extension ResiliencePipeline where Strategies == StandardHTTPStrategies {
    /// The standard order for HTTP calls, with the defaults of .NET's standard
    /// resilience handler (`AddStandardResilienceHandler` in
    /// Microsoft.Extensions.Http.Resilience, as documented on Microsoft Learn).
    ///
    /// Outermost first:
    /// 1. a limiter of requests in flight (1,000, no queue), which .NET's documentation calls its rate limiter;
    /// 2. a total timeout of 30 seconds over every attempt and wait;
    /// 3. a retry policy: 3 retries, exponential backoff from 2 seconds with full jitter;
    /// 4. a circuit breaker that opens for 5 seconds when at least 10% of at least
    ///    100 calls in 30 seconds failed, so each attempt passes through it;
    /// 5. an attempt timeout of 10 seconds, which the breaker counts as a failure.
    ///
    /// ```swift
    /// let http = try ResiliencePipeline.standardHTTP()
    /// let status = try await http.execute { try await api.status() }
    /// ```
    ///
    /// With `ResilienceURLSession`, `http.data(for: request)` sends a `URLRequest`
    /// through it in one line.
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting; `attemptTimeout`
    ///   must be at most `totalTimeout`.
    public static func standardHTTP(
        name: String = "http",
        concurrencyLimit: Int = 1_000,
        totalTimeout: Duration = .seconds(30),
        maximumAttempts: Int = 4,
        breakerConfiguration: CircuitBreakerConfiguration? = nil,
        attemptTimeout: Duration = .seconds(10),
        clock: some Clock<Duration> = ContinuousClock()
    ) throws -> ResiliencePipeline<StandardHTTPStrategies> {
        // Validated here under the preset's own names, before any stage is made.
        try ConfigurationError.require(
            (1...1_000_000).contains(concurrencyLimit), "concurrencyLimit", concurrencyLimit, "in 1...1000000")
        // In the order of the parameters, so that the first invalid one is the one named.
        func requireTimeout(_ value: Duration, _ setting: String) throws {
            try ConfigurationError.requirePositive(value, setting)
            try ConfigurationError.requireAtMostResilienceMaximum(value, setting)
        }
        try requireTimeout(totalTimeout, "totalTimeout")
        _ = try RetryPolicyConfiguration(maximumAttempts: maximumAttempts)  // the retry stage's own rule
        try requireTimeout(attemptTimeout, "attemptTimeout")
        // An attempt could never use time the whole call does not have; .NET's handler refuses it too.
        try ConfigurationError.require(
            attemptTimeout <= totalTimeout, "attemptTimeout", attemptTimeout,
            "at most totalTimeout (\(totalTimeout.exactDescription))")
        let breaker =
            try breakerConfiguration
            ?? CircuitBreakerConfiguration(
                tripRule: .failureRate(threshold: 0.1, minimumCalls: 100, window: .time(.seconds(30), buckets: 10)),
                openDuration: .fixed(.seconds(5)))
        return try ResiliencePipeline<StandardHTTPStrategies> {
            try ConcurrencyLimiter(name: "\(name).limiter", limit: concurrencyLimit, clock: clock)
            try Timeout(totalTimeout, name: "\(name).total-timeout", clock: clock)
            try RetryPolicy(
                maximumAttempts: maximumAttempts, backoff: .exponential(initial: .seconds(2), maximum: .seconds(30)),
                jitter: .full, classifier: HTTPRetryClassifier(), clock: clock)
            CircuitBreaker(name: "\(name).breaker", configuration: breaker, clock: clock)
            try Timeout(attemptTimeout, name: "\(name).attempt-timeout", clock: clock)
        }
    }
}
