/// A classifier's answer for one failure: retry with the backoff, retry after a
/// given delay, or stop.
///
/// ```swift
/// let decision: RetryDecision = .retry(after: .seconds(5))
/// decision.isRetryable  // true
/// decision.retryAfter   // 5 seconds
/// ```
public struct RetryDecision: Sendable, Hashable, CustomStringConvertible {
    /// Whether the failed operation may be attempted again.
    public let isRetryable: Bool
    /// The least delay before the next attempt, if the classifier asks for one.
    ///
    /// The policy waits at least this long and at least its backoff delay.
    public let retryAfter: Duration?
    /// For a final failure, the stop reason the policy reports; ``RetryStopReason/notRetryable`` when `nil`.
    public let stopReason: RetryStopReason?

    private init(isRetryable: Bool, retryAfter: Duration?, stopReason: RetryStopReason? = nil) {
        self.isRetryable = isRetryable
        self.retryAfter = retryAfter
        self.stopReason = stopReason
    }

    /// Retry after the policy's backoff delay (or any hint the error itself carries).
    public static let retry = RetryDecision(isRetryable: true, retryAfter: nil)

    /// Do not retry: the failure is final.
    public static let doNotRetry = RetryDecision(isRetryable: false, retryAfter: nil)

    /// Do not retry, and report `reason` as why the call stopped.
    ///
    /// ```swift
    /// .doNotRetry(because: .authenticationRequired)  // send the user to sign in
    /// ```
    public static func doNotRetry(because reason: RetryStopReason) -> RetryDecision {
        RetryDecision(isRetryable: false, retryAfter: nil, stopReason: reason)
    }

    /// Retry, waiting at least `delay` (and at least the backoff delay).
    ///
    /// Negative delays count as zero, and one beyond the package's longest duration (about
    /// 146 years) as that longest, as every server hint does; the policy's
    /// ``RetryPolicy/maximumRetryAfter`` then decides whether to wait it.
    public static func retry(after delay: Duration) -> RetryDecision {
        RetryDecision(isRetryable: true, retryAfter: delay.clampedToResilienceRange)
    }

    /// `retry`, `retry(after: …)` or `doNotRetry`.
    public var description: String {
        guard self.isRetryable else {
            guard let stopReason = self.stopReason else { return "doNotRetry" }
            return "doNotRetry(because: \(stopReason))"
        }
        guard let retryAfter = self.retryAfter else { return "retry" }
        return "retry(after: \(retryAfter))"
    }
}
