/// Whether a server's retry-after hint on a failure opens the whole breaker for that long.
///
/// When a server says "come back in 5 seconds", backing off only the one call
/// that heard it is not enough: every other caller would keep knocking. With
/// pushback on, a counted failure that carries a hint (see
/// ``ErrorHints/retryAfter(of:)``) opens the breaker at once for the hinted time,
/// capped at `maximum`, even if the trip rule has not tripped. When the same
/// failure also trips the rule, or fails a half-open probe, the breaker stays open for
/// the longer of the hint and its ``CircuitBreakerOpenDuration``. A hint of zero
/// opens nothing.
///
/// ```swift
/// let breaker = try CircuitBreaker(name: "api", pushback: .anyRetryAfter(maximum: .seconds(120)))
/// ```
///
/// The default honours hints on HTTP 429 Too Many Requests only, the response
/// RFC 6585 defines for rate limiting, wherever the 429 sits in the error's chain.
///
/// A hint describes the server now, not the call that heard it: a hint carried
/// by a call admitted before the breaker last changed state still opens it (or
/// keeps it open longer), although that call's failure no longer counts toward
/// the trip rule. Opening for a hint is not a trip: it does not lengthen a
/// growing ``CircuitBreakerOpenDuration``.
public struct CircuitBreakerPushback: Sendable, Hashable, CustomStringConvertible {
    enum Scope: Sendable, Hashable {
        case disabled
        case tooManyRequests
        case anyRetryAfter
    }

    let scope: Scope
    /// The longest open time a hint can cause; longer hints are cut to it.
    public let maximum: Duration

    /// Hints are ignored; only the trip rule opens the breaker.
    public static let disabled = CircuitBreakerPushback(scope: .disabled, maximum: .zero)

    /// A failure reporting HTTP 429 with a retry-after hint opens the breaker for the hint, up to `maximum`.
    ///
    /// - Parameter maximum: The cap on the hinted open time; greater than zero, and at most
    ///   about 146 years (the package's longest duration). Defaults to 300 seconds, the
    ///   largest hint Envoy honours.
    public static func tooManyRequests(maximum: Duration = .seconds(300)) -> CircuitBreakerPushback {
        CircuitBreakerPushback(scope: .tooManyRequests, maximum: maximum)
    }

    /// Any counted failure with a retry-after hint (a 503 during maintenance, CloudKit's
    /// `CKErrorRetryAfterKey`) opens the breaker for the hint, up to `maximum`.
    ///
    /// - Parameter maximum: The cap on the hinted open time; greater than zero, and at most
    ///   about 146 years (the package's longest duration). Defaults to 300 seconds.
    public static func anyRetryAfter(maximum: Duration = .seconds(300)) -> CircuitBreakerPushback {
        CircuitBreakerPushback(scope: .anyRetryAfter, maximum: maximum)
    }

    /// The package default: ``tooManyRequests(maximum:)`` with a 300-second cap.
    public static let `default` = CircuitBreakerPushback.tooManyRequests()

    /// `disabled`, `tooManyRequests(maximum: 300.0 seconds)` or `anyRetryAfter(maximum: ...)`.
    public var description: String {
        switch self.scope {
        case .disabled: "disabled"
        case .tooManyRequests: "tooManyRequests(maximum: \(self.maximum))"
        case .anyRetryAfter: "anyRetryAfter(maximum: \(self.maximum))"
        }
    }

    /// The open time a failure asks for under this setting, or `nil` when it asks for none.
    func openDuration(for analysis: FailureAnalysis) -> Duration? {
        switch self.scope {
        case .disabled:
            return nil
        case .tooManyRequests:
            guard analysis.isTooManyRequests else { return nil }
        case .anyRetryAfter:
            break
        }
        guard let hint = analysis.retryAfter, hint > .zero else { return nil }
        return Swift.min(hint, self.maximum)
    }

    /// Checks the cap, naming it `<prefix>.maximum`.
    func validate(settingPrefix prefix: String = "pushback") throws(ConfigurationError) {
        if self.scope != .disabled {
            let name = ConfigurationError.settingName(prefix, "maximum")
            try ConfigurationError.requirePositive(self.maximum, name)
            try ConfigurationError.requireAtMostResilienceMaximum(self.maximum, name)
        }
    }
}
