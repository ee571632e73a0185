/// Receives what a ``RetryPolicy`` does: each failed attempt, each scheduled
/// retry and each finished call.
///
/// Every method has an empty default, so implement only what you need. Calls
/// arrive in the caller's isolation, synchronously, on the call's own path:
/// keep them cheap and hand heavy work elsewhere. A policy without an observer
/// pays nothing for this hook.
///
/// ```swift
/// struct Logging: RetryObserver {
///     func retryScheduled(_ event: RetryScheduledEvent) {
///         print("\(event.policyName): retry \(event.attempt) in \(event.delay) after \(event.error)")
///     }
/// }
/// ```
///
/// Every event type has a public initializer, so a test can feed an observer
/// the events it wants to check without running a policy.
public protocol RetryObserver: Sendable {
    /// An attempt failed; the event carries its error and any HTTP status or hint it reported.
    func attemptFailed(_ event: RetryAttemptFailedEvent)
    /// The policy will wait `event.delay` and try again.
    ///
    /// A policy nested in an attempt of a ``Hedging`` call that hears, while it waits or as it
    /// is about to retry at once, of a retry-after hint another attempt got, waits longer
    /// before the same retry: it reports the extra wait in one more event for the same
    /// `attempt`, so the delays of a retry's events add up to the time it waited.
    func retryScheduled(_ event: RetryScheduledEvent)
    /// The call ended, successfully or not.
    func callFinished(_ event: RetryCallFinishedEvent)
}

extension RetryObserver {
    /// Does nothing.
    public func attemptFailed(_ event: RetryAttemptFailedEvent) {}
    /// Does nothing.
    public func retryScheduled(_ event: RetryScheduledEvent) {}
    /// Does nothing.
    public func callFinished(_ event: RetryCallFinishedEvent) {}
}

/// One failed attempt.
public struct RetryAttemptFailedEvent: Sendable {
    /// The ``RetryPolicy/name`` of the policy that made the attempt.
    public var policyName: String
    /// The attempt's number, 1 for the first.
    public var attempt: Int
    /// The error the operation threw.
    public var error: any Error
    /// The HTTP status the error reports, if any.
    public var httpStatus: Int?
    /// The retry-after hint the error or classifier gave, if any.
    public var retryAfter: Duration?

    /// Creates an event, as a policy does; tests of an observer make their own.
    public init(policyName: String, attempt: Int, error: any Error, httpStatus: Int? = nil, retryAfter: Duration? = nil)
    {
        self.policyName = policyName
        self.attempt = attempt
        self.error = reportedError(error)
        self.httpStatus = httpStatus
        self.retryAfter = retryAfter
    }
}

/// A retry the policy has decided on.
public struct RetryScheduledEvent: Sendable {
    /// The ``RetryPolicy/name`` of the policy that will retry.
    public var policyName: String
    /// The number of the attempt that failed; the retry will be `attempt + 1`.
    public var attempt: Int
    /// How long the policy will wait before the retry, or wait more, in a further event for the
    /// same attempt (see ``RetryObserver/retryScheduled(_:)``).
    public var delay: Duration
    /// The error that caused the retry.
    public var error: any Error
    /// The server's or classifier's hint, when it set a floor under the delay; inside an attempt
    /// of a ``Hedging`` call, what was left of a hint another of its attempts got, when longer.
    public var retryAfter: Duration?

    /// Creates an event, as a policy does; tests of an observer make their own.
    public init(policyName: String, attempt: Int, delay: Duration, error: any Error, retryAfter: Duration? = nil) {
        self.policyName = policyName
        self.attempt = attempt
        self.delay = delay
        self.error = reportedError(error)
        self.retryAfter = retryAfter
    }
}

/// A finished call.
public struct RetryCallFinishedEvent: Sendable {
    /// The ``RetryPolicy/name`` of the policy that ran the call.
    public var policyName: String
    /// How many attempts the call made, counted as ``RetryOutcome/attempts`` counts them.
    public var attempts: Int
    /// Why the call stopped.
    public var stopReason: RetryStopReason
    /// The last retry-after hint seen, as ``RetryOutcome/retryAfter`` reports it.
    public var retryAfter: Duration?
    /// The call's duration on the policy's clock.
    public var elapsed: Duration
    /// The error that ended the call, or `nil` on success.
    public var error: (any Error)?

    /// Creates an event, as a policy does; tests of an observer make their own.
    public init(
        policyName: String,
        attempts: Int,
        stopReason: RetryStopReason,
        retryAfter: Duration? = nil,
        elapsed: Duration,
        error: (any Error)? = nil
    ) {
        self.policyName = policyName
        self.attempts = attempts
        self.stopReason = stopReason
        self.retryAfter = retryAfter
        self.elapsed = elapsed
        self.error = error.map(reportedError)
    }
}
