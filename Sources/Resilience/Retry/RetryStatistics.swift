/// Counters a ``RetryPolicy`` keeps across all its calls.
///
/// Calls that succeed on their first attempt are deliberately not counted: the
/// success path does no bookkeeping, so that it costs no more than a direct call.
public struct RetryStatistics: Sendable, Hashable {
    /// Failed attempts, over all calls.
    public var failedAttempts = 0
    /// Retries scheduled, over all calls.
    public var retries = 0
    /// Calls that needed a retry or failed, by the reason they stopped.
    public var stopReasons: [RetryStopReason: Int] = [:]

    /// Creates empty counters.
    public init() {}
}
