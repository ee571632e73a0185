/// The calls a failure-rate rule looks at: the last N calls, or the calls of a recent stretch of time.
///
/// ```swift
/// CircuitBreakerWindow.count(100)                             // the last 100 calls
/// CircuitBreakerWindow.time(.seconds(30), buckets: 10)        // the last 30 s, in 3 s buckets
/// ```
///
/// A time window is kept as a ring of buckets, so the oldest bucket leaves the
/// window all at once: with 10 buckets over 30 s, the window covers between 27
/// and 30 seconds of calls. More buckets give a smoother window at the cost of
/// a few bytes each. A struct with static factories rather than a public enum,
/// so that new kinds of window do not break anyone's `switch`.
public struct CircuitBreakerWindow: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case count(Int)
        case time(Duration, buckets: Int)
    }

    let kind: Kind

    /// The largest count window accepted.
    public static let maximumCount = 100_000
    /// The most buckets a time window may have.
    public static let maximumBuckets = 1_000

    /// A window of the most recent `calls` calls.
    ///
    /// - Parameter calls: The window's size, in `1...100_000`.
    public static func count(_ calls: Int) -> CircuitBreakerWindow {
        CircuitBreakerWindow(kind: .count(calls))
    }

    /// A window of the calls that finished within the last `duration`, counted in `buckets` slices.
    ///
    /// - Parameters:
    ///   - duration: The span of the window; greater than zero, at least one nanosecond per
    ///     bucket, and at most about 146 years (the package's longest duration).
    ///   - buckets: The slices the span is cut into, in `1...1_000`. Defaults to 10, as Polly does.
    public static func time(_ duration: Duration, buckets: Int = 10) -> CircuitBreakerWindow {
        CircuitBreakerWindow(kind: .time(duration, buckets: buckets))
    }

    /// `count(100)` or `time(30.0 seconds, buckets: 10)`.
    public var description: String {
        switch self.kind {
        case .count(let calls): "count(\(calls))"
        case .time(let duration, let buckets): "time(\(duration), buckets: \(buckets))"
        }
    }

    /// Checks the window, naming its settings `<prefix>.calls`, `<prefix>.duration` and `<prefix>.buckets`.
    func validate(settingPrefix prefix: String = "tripRule.window") throws(ConfigurationError) {
        func name(_ key: String) -> String { ConfigurationError.settingName(prefix, key) }
        switch self.kind {
        case .count(let calls):
            try ConfigurationError.require(
                calls >= 1 && calls <= Self.maximumCount, name("calls"), calls, "in 1...\(Self.maximumCount)")
        case .time(let duration, let buckets):
            try ConfigurationError.requirePositive(duration, name("duration"))
            try ConfigurationError.requireAtMostResilienceMaximum(duration, name("duration"))
            try ConfigurationError.require(
                buckets >= 1 && buckets <= Self.maximumBuckets, name("buckets"), buckets,
                "in 1...\(Self.maximumBuckets)")
            try ConfigurationError.require(
                duration >= .nanoseconds(buckets), name("duration"), duration,
                "at least one nanosecond per bucket (\(buckets) buckets)")
        }
    }
}
