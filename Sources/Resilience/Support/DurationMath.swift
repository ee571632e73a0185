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

    /// The duration in seconds, every digit written out: `1 second`, `1.5 seconds`,
    /// `4611686018.000000001 seconds`.
    ///
    /// `description` goes through `Double`, which keeps about 16 significant digits, so
    /// two durations a nanosecond apart past a few months read alike there. Error messages
    /// that compare a value with a limit use this instead, so that the two never read alike
    /// when they differ.
    package var exactDescription: String {
        let attosecondsPerSecond: UInt128 = 1_000_000_000_000_000_000
        let magnitude = self.attoseconds.magnitude
        let sign = self < .zero ? "-" : ""
        let fraction = magnitude % attosecondsPerSecond
        var text = sign + String(magnitude / attosecondsPerSecond)
        if fraction != 0 {
            let digits = String(fraction)
            let padded = String(repeating: "0", count: 18 - digits.count) + digits
            text += "." + padded.reversed().drop(while: { $0 == "0" }).reversed()
        }
        return text + (magnitude == attosecondsPerSecond ? " second" : " seconds")
    }

    /// `self` clamped to `0...resilienceMaximum`.
    package var clampedToResilienceRange: Duration {
        if self < .zero { return .zero }
        return Swift.min(self, .resilienceMaximum)
    }
}
