/// Decides whether an error thrown through a ``CircuitBreaker`` says something
/// about the dependency's health.
///
/// Errors that count feed the trip rule; errors that do not are left out
/// entirely (they neither fail nor succeed, and a half-open probe that ends
/// with one just frees its slot). Keep the decision fast and free of side
/// effects: it runs in the caller's isolation for every failed call.
///
/// ```swift
/// struct PaymentsClassifier: CircuitBreakerFailureClassifier {
///     func countsAsFailure(_ error: any Error) -> Bool {
///         if error is CardDeclinedError { return false }  // the service answered fine
///         return DefaultCircuitBreakerFailureClassifier().countsAsFailure(error)
///     }
/// }
/// ```
///
/// Three rules sit above every classifier (see ``Rulebook/countsAsFailure(_:)``),
/// which is not asked about the failures they settle:
/// - a call the caller cancelled is never counted, since giving up says nothing
///   about the dependency;
/// - a call one of the library's own limiters refused (a ``ConcurrencyLimiter``'s
///   or a ``RateLimiter``'s ``LimiterRejectionError``, an ``AdaptiveThrottleRejection``),
///   wherever it sits in the error's chain, is never counted, since it never reached
///   the dependency; a half-open probe refused that way just frees its slot;
/// - an attempt that the library's own time limit ended (a policy's
///   `attemptTimeout`, a ``Timeout``) is counted, half-open probes included, since the
///   dependency was too slow; unless the attempt provably never reached it: the limit
///   cut short its wait for a limiter's slot or permit
///   (``LimiterRejectionError/Reason/waitCutShort``) or for the network, or the attempt
///   ended with a limiter's refusal (a queue timeout); and no request of the attempt is
///   known to have left before. The answer is the same wherever the breaker sits, outside
///   the limit or inside it.
///
/// A ``CircuitBreakerOpenError`` from a breaker inside the operation is left to the
/// classifier: it says the dependency is known to be failing, and the default one counts it.
public protocol CircuitBreakerFailureClassifier: Sendable {
    /// Whether `error` counts as a failure of the dependency.
    ///
    /// Return `false` for errors that prove the dependency answered, such as a
    /// validation error or a 404: the call then counts neither as a failure nor
    /// as a success.
    func countsAsFailure(_ error: any Error) -> Bool
}

extension CircuitBreakerFailureClassifier where Self == DefaultCircuitBreakerFailureClassifier {
    /// The package's default rules; see ``DefaultCircuitBreakerFailureClassifier``.
    public static var `default`: DefaultCircuitBreakerFailureClassifier { DefaultCircuitBreakerFailureClassifier() }
}

extension CircuitBreakerFailureClassifier where Self == ClosureCircuitBreakerFailureClassifier {
    /// A classifier made from a closure that returns whether an error counts.
    ///
    /// ```swift
    /// let breaker = try CircuitBreaker(name: "db", classifier: .closure { error in
    ///     !(error is ValidationError)
    /// })
    /// ```
    public static func closure(
        _ body: @escaping @Sendable (any Error) -> Bool
    ) -> ClosureCircuitBreakerFailureClassifier {
        ClosureCircuitBreakerFailureClassifier(body)
    }
}
