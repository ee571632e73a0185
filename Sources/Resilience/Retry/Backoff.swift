/// How long to wait before each retry, before jitter is applied.
///
/// A backoff maps the retry number `n` (0 for the first retry) to a delay.
/// Every kind is capped by a maximum, and the arithmetic is done so that huge
/// `n` (even `Int.max`) yields the cap rather than overflowing or trapping.
/// A duration given beyond the package's longest (about 146 years) is kept as
/// given and waits that longest: a cap of `.seconds(Int64.max)` means no cap
/// short of it. (``CircuitBreakerOpenDuration``, which shares this arithmetic,
/// is refused beyond it by a breaker's configuration.)
///
/// ```swift
/// let backoff = Backoff.exponential(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(5))
/// backoff.delay(forAttempt: 0)       // 100 ms
/// backoff.delay(forAttempt: 3)       // 800 ms
/// backoff.delay(forAttempt: 10_000)  // 5 s
/// ```
///
/// `Backoff` is a struct with static factories rather than a public enum so that
/// new kinds can be added without breaking anyone's `switch`.
public struct Backoff: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline
    enum Kind: Sendable, Hashable {
        case constant(Duration)
        case linear(initial: Duration, increment: Duration, maximum: Duration)
        case exponential(initial: Duration, multiplier: Double, maximum: Duration)
    }

    @usableFromInline
    let kind: Kind

    init(kind: Kind) {
        self.kind = kind
    }

    /// The same delay before every retry.
    public static func constant(_ delay: Duration) -> Backoff {
        Backoff(kind: .constant(delay))
    }

    /// A delay that grows by `increment` per retry: `initial + increment * n`, capped at `maximum`.
    public static func linear(initial: Duration, increment: Duration, maximum: Duration) -> Backoff {
        Backoff(kind: .linear(initial: initial, increment: increment, maximum: maximum))
    }

    /// A delay that grows geometrically: `initial * multiplier^n`, capped at `maximum`.
    ///
    /// - Parameters:
    ///   - initial: The delay before the first retry; greater than zero.
    ///   - multiplier: The growth factor per retry; finite and at least 1. Defaults to 2.
    ///   - maximum: The cap, applied before jitter; at least `initial`.
    public static func exponential(
        initial: Duration,
        multiplier: Double = 2,
        maximum: Duration
    ) -> Backoff {
        Backoff(kind: .exponential(initial: initial, multiplier: multiplier, maximum: maximum))
    }

    /// The package default: exponential from 100 ms, doubling, capped at 10 s.
    public static let `default` = Backoff.exponential(initial: .milliseconds(100), maximum: .seconds(10))

    /// The delay before the first retry; jitter kinds that need a base use it.
    public var initial: Duration {
        switch self.kind {
        case .constant(let delay): delay
        case .linear(let initial, _, _): initial
        case .exponential(let initial, _, _): initial
        }
    }

    /// The cap; no un-jittered delay exceeds it.
    public var maximum: Duration {
        switch self.kind {
        case .constant(let delay): delay
        case .linear(_, _, let maximum): maximum
        case .exponential(_, _, let maximum): maximum
        }
    }

    /// The delay before retry number `attempt` (0 for the first retry), before jitter.
    ///
    /// Negative `attempt` is treated as 0. The result never exceeds ``maximum``, is
    /// never negative, and is never longer than about 146 years, however large the
    /// configured durations: a wait that long would overflow a clock's instant.
    public func delay(forAttempt attempt: Int) -> Duration {
        let n = Swift.max(attempt, 0)
        switch self.kind {
        case .constant(let delay):
            return delay.clampedToResilienceRange
        case .linear(let initial, let increment, let maximum):
            let seconds = initial.secondsValue + increment.secondsValue * Double(n)
            return Swift.min(Duration.clampedSeconds(seconds), maximum.clampedToResilienceRange)
        case .exponential(let initial, let multiplier, let maximum):
            // The power overflows to +infinity for huge n, which clamps to the maximum below.
            let cap = maximum.clampedToResilienceRange
            let seconds = initial.secondsValue * power(multiplier, Double(n))
            guard seconds < cap.secondsValue else { return cap }
            return Swift.min(Duration.clampedSeconds(seconds), cap)
        }
    }

    /// A readable form such as `exponential(initial: 0.1 seconds, multiplier: 2.0, maximum: 10.0 seconds)`.
    public var description: String {
        switch self.kind {
        case .constant(let delay):
            "constant(\(delay))"
        case .linear(let initial, let increment, let maximum):
            "linear(initial: \(initial), increment: \(increment), maximum: \(maximum))"
        case .exponential(let initial, let multiplier, let maximum):
            "exponential(initial: \(initial), multiplier: \(multiplier), maximum: \(maximum))"
        }
    }

    /// Checks the settings, naming them `<prefix>.delay`, `<prefix>.initial`, `<prefix>.multiplier` and so on,
    /// after the factories' parameters (and the keys of the encoded form).
    func validate(settingPrefix prefix: String = "backoff") throws(ConfigurationError) {
        func name(_ key: String) -> String { ConfigurationError.settingName(prefix, key) }
        switch self.kind {
        case .constant(let delay):
            try ConfigurationError.requireNonNegative(delay, name("delay"))
        case .linear(let initial, let increment, let maximum):
            try ConfigurationError.requireNonNegative(initial, name("initial"))
            try ConfigurationError.requireNonNegative(increment, name("increment"))
            try ConfigurationError.require(
                maximum >= initial, name("maximum"), maximum,
                "at least \(name("initial")) (\(initial.exactDescription))")
        case .exponential(let initial, let multiplier, let maximum):
            try ConfigurationError.requirePositive(initial, name("initial"))
            try ConfigurationError.require(
                multiplier.isFinite && multiplier >= 1, name("multiplier"), multiplier,
                "a finite number in 1...")
            try ConfigurationError.require(
                maximum >= initial, name("maximum"), maximum,
                "at least \(name("initial")) (\(initial.exactDescription))")
        }
    }
}

/// `base` raised to a whole-number `exponent`, saturating to infinity.
///
/// Exponentiation by squaring: exact for the small powers users preview, and it
/// stops as soon as the result is infinite, so `Int.max` costs at most 63 steps.
private func power(_ base: Double, _ exponent: Double) -> Double {
    if exponent == 0 { return 1 }
    if base == 1 { return 1 }
    var result = 1.0
    var b = base
    var e = exponent
    while e >= 1 {
        if e.truncatingRemainder(dividingBy: 2) == 1 { result *= b }
        b *= b
        e = (e / 2).rounded(.down)
        if result.isInfinite { return result }
    }
    return result
}
