/// Why a ``CircuitBreaker`` changed state.
///
/// A struct with static members rather than an enum, so that new reasons can be
/// added without breaking a `switch`: compare with `==`.
public struct CircuitBreakerTransitionReason: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier, such as `"tripped"`, suitable for logs and metrics.
    public let rawValue: String

    /// Creates a reason from its identifier.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The trip rule's threshold was reached while closed.
    public static let tripped = CircuitBreakerTransitionReason(rawValue: "tripped")
    /// A failure carried a server retry-after hint that opened the breaker (see ``CircuitBreakerPushback``).
    public static let pushback = CircuitBreakerTransitionReason(rawValue: "pushback")
    /// The open time passed and a caller arrived (or a snapshot was taken): probing begins.
    public static let openDurationElapsed = CircuitBreakerTransitionReason(rawValue: "openDurationElapsed")
    /// A half-open probe failed, so the breaker re-opened.
    public static let probeFailed = CircuitBreakerTransitionReason(rawValue: "probeFailed")
    /// Enough half-open probes succeeded to close the breaker.
    public static let probesSucceeded = CircuitBreakerTransitionReason(rawValue: "probesSucceeded")
    /// ``CircuitBreaker/isolate()`` was called.
    public static let isolated = CircuitBreakerTransitionReason(rawValue: "isolated")
    /// ``CircuitBreaker/reset()`` was called.
    public static let reset = CircuitBreakerTransitionReason(rawValue: "reset")
    /// A ``CircuitBreakerRegistry`` forgot the key's breaker at its bound while it was not closed:
    /// the next ``CircuitBreakerRegistry/breaker(for:)`` for the key makes a fresh, closed one. The
    /// forgotten breaker keeps its state for anyone still holding it.
    public static let forgotten = CircuitBreakerTransitionReason(rawValue: "forgotten")

    /// The identifier.
    public var description: String { self.rawValue }
}
