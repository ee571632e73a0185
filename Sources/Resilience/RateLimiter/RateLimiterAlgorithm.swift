/// How a ``RateLimiter`` counts permits: a token bucket or a sliding window.
///
/// The settings follow .NET's `System.Threading.RateLimiting` limiters
/// (`TokenBucketRateLimiter`, `SlidingWindowRateLimiter`), so numbers carried
/// over from a .NET service mean the same here.
public struct RateLimiterAlgorithm: Sendable, Hashable {
    enum Kind: Hashable {
        case tokenBucket(capacity: Int, tokensPerPeriod: Int, period: Duration)
        case slidingWindow(limit: Int, window: Duration, segments: Int)
    }

    let kind: Kind

    /// A bucket of `capacity` tokens, refilled with `tokensPerPeriod` every `period`; each call takes one.
    ///
    /// It allows bursts of up to `capacity` calls and, over time, `tokensPerPeriod / period`.
    /// - Throws: ``ConfigurationError`` naming `capacity`, `tokensPerPeriod` or `period`
    ///   when zero, negative or huge.
    public static func tokenBucket(
        capacity: Int,
        tokensPerPeriod: Int,
        period: Duration
    ) throws(ConfigurationError) -> RateLimiterAlgorithm {
        try ConfigurationError.require(
            (1...1_000_000_000).contains(capacity), "capacity", capacity, "in 1...1000000000")
        try ConfigurationError.require(
            (1...1_000_000_000).contains(tokensPerPeriod), "tokensPerPeriod", tokensPerPeriod, "in 1...1000000000")
        try ConfigurationError.require(
            period >= .microseconds(1) && period <= .seconds(86_400 * 366), "period", period,
            "in 1 microsecond...366 days")
        return RateLimiterAlgorithm(
            kind: .tokenBucket(capacity: capacity, tokensPerPeriod: tokensPerPeriod, period: period))
    }

    /// At most `limit` calls per `window`, counted in `segments` slices of the window.
    ///
    /// Each call counts in the segment it falls in, and a segment's calls stop counting one
    /// `window` after the segment began, so a call late in a segment is forgotten up to one
    /// segment early. What holds exactly: at most `limit` calls in any span shorter than
    /// `window` less one segment (`window / segments`), and at most `limit` in any window
    /// that starts where a segment starts. Two bursts of `limit` calls can come closer than `window`: at the end of one segment
    /// and at the start of the segment after the window has moved past it. More segments
    /// follow the window more closely, for a little more memory; `segments: 1` is a fixed
    /// window, which allows `2 * limit` calls around a window's boundary.
    /// - Throws: ``ConfigurationError`` naming `limit`, `window` or `segments`
    ///   when zero, negative or huge.
    public static func slidingWindow(
        limit: Int,
        window: Duration,
        segments: Int = 10
    ) throws(ConfigurationError) -> RateLimiterAlgorithm {
        try ConfigurationError.require((1...1_000_000_000).contains(limit), "limit", limit, "in 1...1000000000")
        try ConfigurationError.require((1...1_000).contains(segments), "segments", segments, "in 1...1000")
        try ConfigurationError.require(
            window >= .microseconds(1) * segments && window <= .seconds(86_400 * 366), "window", window,
            "in \(segments) microseconds (one per segment)...366 days")
        return RateLimiterAlgorithm(kind: .slidingWindow(limit: limit, window: window, segments: segments))
    }
}
