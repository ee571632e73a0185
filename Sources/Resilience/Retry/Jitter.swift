/// Randomness added to each backoff delay so that clients that failed together
/// do not retry together.
///
/// With `t` the capped backoff delay for retry `n`, `base` the backoff's initial
/// delay and `cap` its maximum:
///
/// | kind | delay | range |
/// |---|---|---|
/// | ``none`` | `t` | exactly `t` |
/// | ``full`` | `random(0, t)` | `0...t` |
/// | ``equal`` | `t/2 + random(0, t/2)` | `t/2...t` |
/// | ``proportional(_:)`` | `t * (1 + random(-r, r))` | `t*(1-r)...t*(1+r)` |
/// | ``decorrelated`` | `min(cap, random(base, previous * 3))` | `base...cap` |
///
/// Decorrelated jitter (the AWS formula) grows from the previous delay rather than
/// from `n`, so it ignores the backoff's shape and uses only its initial delay and
/// maximum. A ``RetryPolicy`` passes it the wait it actually made before the previous
/// retry: when a server's retry-after hint made that wait longer than the draw, the
/// next draw grows from the hint's wait, as the formula's "previous sleep" reads.
///
/// The default is ``full``. In Brooker's contention model (100 clients racing
/// optimistic writes, base 5 ms, cap 2 s) full jitter made the fewest calls of all
/// schedules (about 795 against 1,853 for exponential without jitter) and finished
/// within 10% of the fastest; see the benchmark executable's contention table.
public struct Jitter: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline
    enum Kind: Sendable, Hashable {
        case none
        case full
        case equal
        case proportional(Double)
        case decorrelated
    }

    @usableFromInline
    let kind: Kind

    init(kind: Kind) {
        self.kind = kind
    }

    /// No randomness: every client waits exactly the backoff delay.
    public static let none = Jitter(kind: .none)
    /// A uniformly random delay between zero and the backoff delay.
    public static let full = Jitter(kind: .full)
    /// Half the backoff delay, plus a random amount up to the other half.
    public static let equal = Jitter(kind: .equal)
    /// The AWS "decorrelated" schedule: random between the base and three times the previous delay, capped.
    public static let decorrelated = Jitter(kind: .decorrelated)

    /// The backoff delay scaled by a random factor in `1-ratio ... 1+ratio`.
    ///
    /// ``RetryPolicy`` rejects a ratio outside `0...1`; used on its own, such a ratio is
    /// clamped into `0...1` (NaN counts as 0), so no delay is ever negative or unbounded.
    ///
    /// - Parameter ratio: The spread, in `0...1`; 0.2 is gRPC's choice and 0.25 a common one.
    public static func proportional(_ ratio: Double) -> Jitter {
        Jitter(kind: .proportional(ratio))
    }

    /// The package default, ``full``.
    public static let `default` = Jitter.full

    /// A readable form such as `full` or `proportional(0.2)`.
    public var description: String {
        switch self.kind {
        case .none: "none"
        case .full: "full"
        case .equal: "equal"
        case .proportional(let ratio): "proportional(\(ratio))"
        case .decorrelated: "decorrelated"
        }
    }

    /// Applies this jitter to the delay `backoff` gives for retry `attempt`.
    ///
    /// - Parameters:
    ///   - backoff: The schedule supplying the un-jittered delay, base and cap.
    ///   - attempt: The retry number, 0 for the first retry.
    ///   - previous: The wait made before the previous retry (a retry-after hint's, when that was
    ///     longer than the draw), or `nil` before the first; only ``decorrelated`` reads it.
    ///   - generator: The source of randomness; pass a seeded one to make the result repeatable.
    /// - Returns: The delay to wait, never negative and always within ``range(for:attempt:)``.
    public func delay(
        for backoff: Backoff,
        attempt: Int,
        previous: Duration?,
        using generator: inout some RandomNumberGenerator
    ) -> Duration {
        let t = backoff.delay(forAttempt: attempt)
        let bounds = self.range(forDelay: t, of: backoff)
        let drawn: Duration
        switch self.kind {
        case .none:
            return t
        case .full:
            drawn = .clampedSeconds(Self.uniform(0, t.secondsValue, &generator))
        case .equal:
            let half = t.secondsValue / 2
            drawn = .clampedSeconds(half + Self.uniform(0, half, &generator))
        case .proportional(let ratio):
            let spread = Self.clampedRatio(ratio)
            let factor = 1 + Self.uniform(-spread, spread, &generator)
            drawn = .clampedSeconds(t.secondsValue * factor)
        case .decorrelated:
            let base = bounds.lowerBound.secondsValue
            let upper = Swift.max(base, (previous ?? backoff.initial).secondsValue * 3)
            drawn = .clampedSeconds(Swift.min(bounds.upperBound.secondsValue, Self.uniform(base, upper, &generator)))
        }
        // The draw is made in Double seconds, which can round a nanosecond or so past
        // a bound (a Double near 10^9 s is only good to about 100 ns); keep the range exact.
        return Swift.min(Swift.max(drawn, bounds.lowerBound), bounds.upperBound)
    }

    /// The range every delay for retry `attempt` falls in, for documentation and tests.
    ///
    /// Total for every backoff and ratio, even ones ``RetryPolicy`` would reject:
    /// the bounds are clamped as ``delay(for:attempt:previous:using:)`` clamps them.
    public func range(for backoff: Backoff, attempt: Int) -> ClosedRange<Duration> {
        self.range(forDelay: backoff.delay(forAttempt: attempt), of: backoff)
    }

    /// The range for the un-jittered delay `t` of `backoff`.
    private func range(forDelay t: Duration, of backoff: Backoff) -> ClosedRange<Duration> {
        switch self.kind {
        case .none:
            return t...t
        case .full:
            return .zero...t
        case .equal:
            return (t / 2)...t
        case .proportional(let ratio):
            let spread = Self.clampedRatio(ratio)
            let lower = Duration.clampedSeconds(t.secondsValue * (1 - spread))
            return lower...Duration.clampedSeconds(t.secondsValue * (1 + spread))
        case .decorrelated:
            let cap = backoff.maximum.clampedToResilienceRange
            return Swift.min(backoff.initial.clampedToResilienceRange, cap)...cap
        }
    }

    /// `ratio` limited to `0...1`, NaN as 0.
    private static func clampedRatio(_ ratio: Double) -> Double {
        guard ratio > 0 else { return 0 }  // also catches NaN
        return Swift.min(ratio, 1)
    }

    /// Checks the ratio of a proportional jitter, naming it `<prefix>.ratio`.
    func validate(settingPrefix prefix: String = "jitter") throws(ConfigurationError) {
        if case .proportional(let ratio) = self.kind {
            try ConfigurationError.require(
                ratio.isFinite && ratio >= 0 && ratio <= 1, ConfigurationError.settingName(prefix, "ratio"), ratio,
                "in 0...1")
        }
    }

    private static func uniform(_ lower: Double, _ upper: Double, _ generator: inout some RandomNumberGenerator)
        -> Double
    {
        // Double.random(in:) traps on an infinite span, so an unbounded one draws nothing.
        guard upper > lower, (upper - lower).isFinite else { return Swift.max(lower, 0) }
        return Double.random(in: lower...upper, using: &generator)
    }
}
