/// The full story of one call through a ``RetryPolicy``: its result, how many
/// attempts ran, and why it stopped.
///
/// ```swift
/// let outcome = await policy.outcome { try await api.fetchProfile() }
/// if outcome.stopReason == .tooManyRequests, let wait = outcome.retryAfter {
///     showBanner("Busy; try again in \(wait)")
/// }
/// let profile = try outcome.result.get()
/// ```
public struct RetryOutcome<Value> {
    /// The value, or the error that ended the call: the operation's own error,
    /// unchanged, or `CancellationError` when the call was cancelled.
    public var result: Result<Value, any Error>
    /// How many attempts the call made: the times the operation ran, plus any attempt
    /// refused before it could run (by an ``AdaptiveThrottle``, or for want of time before an
    /// enclosing deadline). A ``CredentialRecovery``'s refresh retries are not attempts here.
    public var attempts: Int
    /// Why the call stopped.
    public var stopReason: RetryStopReason
    /// The last retry-after hint seen, even one the policy refused to honour. Inside an attempt
    /// of a ``Hedging`` call, a hint another of its attempts got counts, for what was left of it
    /// when the policy heard of it (it held a retry back, or stopped the call).
    public var retryAfter: Duration?
    /// The time from the first attempt's start to the end, on the policy's clock.
    public var elapsed: Duration

    /// Creates an outcome; the policy makes these.
    @inlinable
    public init(
        result: Result<Value, any Error>,
        attempts: Int,
        stopReason: RetryStopReason,
        retryAfter: Duration?,
        elapsed: Duration
    ) {
        self.result = result
        self.attempts = attempts
        self.stopReason = stopReason
        self.retryAfter = retryAfter
        self.elapsed = elapsed
    }

    /// The value, or throws the error that ended the call.
    @inlinable
    public func get() throws -> Value {
        try self.result.get()
    }
}

extension RetryOutcome: Sendable where Value: Sendable {}
