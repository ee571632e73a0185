public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The stages of ``ResiliencePipeline/standardHTTP(name:concurrencyLimit:totalTimeout:maximumAttempts:breakerConfiguration:attemptTimeout:clock:)``,
/// outermost first: a concurrency limiter, a total timeout, a retry policy, a circuit breaker and an attempt timeout.
public typealias StandardHTTPStrategies = NestedStrategies<
    NestedStrategies<NestedStrategies<NestedStrategies<ConcurrencyLimiter, Timeout>, RetryPolicy>, CircuitBreaker>,
    Timeout
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
    /// let (data, _) = try await http.data(for: URLRequest(url: statusURL))
    /// ```
    ///
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
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
        for (setting, value) in [("totalTimeout", totalTimeout), ("attemptTimeout", attemptTimeout)] {
            try ConfigurationError.requirePositive(value, setting)
            try ConfigurationError.require(
                value <= .resilienceMaximum, setting, value, "at most \(Duration.resilienceMaximum)")
        }
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

extension ResiliencePipeline {
    /// Loads `request` through `session` and every stage, and returns the body and
    /// response of the first acceptable answer.
    ///
    /// The call is declared with the request's ``Idempotency``, so no stage
    /// repeats a `POST` the server may have acted on, and an unacceptable status
    /// fails the attempt with an ``HTTPResponseError``, as
    /// ``RetryPolicy/data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:isolation:)`` does.
    ///
    /// - Parameters:
    ///   - request: The request to send.
    ///   - session: The session that sends it; `URLSession.shared` unless given.
    ///   - acceptableStatusCodes: The statuses that count as success; defaults to 2xx.
    /// - Returns: The body and the HTTP response.
    /// - Throws: What the outermost stage ends the call with.
    public nonisolated(nonsending) func data(
        for request: URLRequest,
        session: URLSession = .shared,
        acceptableStatusCodes: Range<Int> = HTTPResponseValidation.defaultAcceptableStatusCodes
    ) async throws -> (data: Data, response: HTTPURLResponse) {
        let idempotency = Idempotency.http(request)
        var scope = CallScope.current
        scope.idempotency = idempotency
        return try await CallScope.$current.withValue(scope) {
            try await self.strategies.executeInPipeline { @Sendable in
                let data: Data
                let response: URLResponse
                do {
                    (data, response) = try await session.data(for: request)
                } catch let error as URLError {
                    throw RetryPolicy.annotated(error, idempotency: idempotency)
                }
                return try HTTPResponseValidation.validate(
                    data, response, idempotency: idempotency, acceptableStatusCodes: acceptableStatusCodes,
                    receivedAt: Date())
            }
        }
    }
}
