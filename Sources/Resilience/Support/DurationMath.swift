/// Overflow-free conversions between `Duration` and floating-point seconds.
///
/// Backoff arithmetic runs in `Double` seconds so that `multiplier^10_000`
/// becomes infinity, which clamps, instead of trapping an integer multiply.
extension Duration {
    /// The largest duration the package ever produces: about 146 years.
    ///
    /// Anything longer is clamped to this, so adding it to an instant cannot overflow,
    /// and an instant that far ahead still fits a clock's 64-bit nanosecond count.
    package static let resilienceMaximum = Duration.seconds(Int64.max / 2_000_000_000)

    /// The duration in seconds as a `Double`.
    ///
    /// Exact to the attosecond for every duration `components` can represent, and
    /// finite for the rest: `components` traps beyond `Int64.max` seconds, so those
    /// are converted from the 128-bit attosecond count instead.
    package var secondsValue: Double {
        if self <= Self.largestWithComponents && self >= Self.smallestWithComponents {
            let (seconds, attoseconds) = self.components
            return Double(seconds) + Double(attoseconds) * 1e-18
        }
        return Double(self.attoseconds) * 1e-18
    }

    private static let largestWithComponents = Duration.seconds(Int64.max)
    private static let smallestWithComponents = Duration.seconds(Int64.min + 1)

    /// A duration from seconds, clamped to `0...resilienceMaximum`; NaN becomes zero.
    package static func clampedSeconds(_ seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }  // also catches NaN
        let maximum = Duration.resilienceMaximum
        guard seconds < maximum.secondsValue else { return maximum }
        let whole = seconds.rounded(.down)
        let nanoseconds = ((seconds - whole) * 1e9).rounded()
        return .seconds(Int64(whole)) + .nanoseconds(Int64(nanoseconds))
    }

    /// `self` clamped to `0...resilienceMaximum`.
    package var clampedToResilienceRange: Duration {
        if self < .zero { return .zero }
        return Swift.min(self, .resilienceMaximum)
    }
}
