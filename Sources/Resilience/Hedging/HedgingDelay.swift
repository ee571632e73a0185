/// When ``Hedging`` starts another attempt: after a fixed delay, or after a
/// latency percentile of the recent successful calls.
public struct HedgingDelay: Sendable, Hashable {
    enum Kind: Hashable {
        case fixed(Duration)
        case percentile(Double, sampleCount: Int, initial: Duration)
    }

    let kind: Kind

    /// Start another attempt once the running one has taken `delay`.
    ///
    /// - Throws: ``ConfigurationError`` naming `delay` when negative or huge.
    public static func fixed(_ delay: Duration) throws(ConfigurationError) -> HedgingDelay {
        try ConfigurationError.requireNonNegative(delay, "delay")
        try ConfigurationError.requireAtMostResilienceMaximum(delay, "delay")
        return HedgingDelay(kind: .fixed(delay))
    }

    /// Start another attempt once the running one has taken longer than the
    /// `percentile` of the last `sampleCount` successful latencies; `initial` until
    /// enough have been seen. The 95th percentile hedges about one call in twenty.
    ///
    /// - Throws: ``ConfigurationError`` naming `percentile` (in 50...99.99),
    ///   `sampleCount` (the `ofLast` argument, in 10...10,000) or `initial`.
    public static func percentile(
        _ percentile: Double,
        ofLast sampleCount: Int = 1_000,
        initial: Duration
    ) throws(ConfigurationError) -> HedgingDelay {
        try ConfigurationError.require(
            percentile.isFinite && percentile >= 50 && percentile <= 99.99, "percentile", percentile, "in 50...99.99")
        try ConfigurationError.require((10...10_000).contains(sampleCount), "sampleCount", sampleCount, "in 10...10000")
        try ConfigurationError.requirePositive(initial, "initial")
        try ConfigurationError.requireAtMostResilienceMaximum(initial, "initial")
        return HedgingDelay(kind: .percentile(percentile, sampleCount: sampleCount, initial: initial))
    }
}
