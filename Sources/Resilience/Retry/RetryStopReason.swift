/// Why a call through a ``RetryPolicy`` stopped.
///
/// A struct with static members rather than an enum, so that new reasons can be
/// added without breaking a `switch`: compare with `==`.
public struct RetryStopReason: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier, such as `"exhausted"`, suitable for logs and metrics.
    public let rawValue: String

    /// Creates a reason from its identifier.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The operation returned a value.
    public static let succeeded = RetryStopReason(rawValue: "succeeded")
    /// Every allowed attempt failed.
    public static let exhausted = RetryStopReason(rawValue: "exhausted")
    /// The classifier judged the failure final.
    public static let notRetryable = RetryStopReason(rawValue: "notRetryable")
    /// The failure reported HTTP 429 Too Many Requests, which is never retried.
    public static let tooManyRequests = RetryStopReason(rawValue: "tooManyRequests")
    /// The server asked for a longer wait than the policy's `maximumRetryAfter`.
    public static let retryAfterTooLong = RetryStopReason(rawValue: "retryAfterTooLong")
    /// Another attempt could not finish within the policy's overall deadline.
    public static let deadlineExceeded = RetryStopReason(rawValue: "deadlineExceeded")
    /// The shared ``RetryBudget`` had too few tokens left for a retry.
    public static let budgetExhausted = RetryStopReason(rawValue: "budgetExhausted")
    /// The calling task was cancelled.
    ///
    /// A call whose attempt a library time limit ended before the caller cancelled (a
    /// ``Timeout``, an attempt timeout, its error as thrown, wrapped or bridged) stops with
    /// this reason only when the time-out would have been retried; otherwise with the reason
    /// the time-out gives. A call whose deadline the clock passed during a wait (before a
    /// retry, for a credential's refresh, for the network) before the caller cancelled
    /// stops with ``deadlineExceeded``.
    public static let cancelled = RetryStopReason(rawValue: "cancelled")
    /// The device stayed offline for longer than the call would wait for the network
    /// (see ``ConnectivityWait``), or a credential's refresh failed because it was offline
    /// (see ``CredentialRecovery``).
    public static let offline = RetryStopReason(rawValue: "offline")
    /// The failure needs the user to sign in again; retrying cannot help.
    public static let authenticationRequired = RetryStopReason(rawValue: "authenticationRequired")
    /// The request relies on something the app sets up on the service, and it is missing:
    /// a CloudKit record zone the person deleted (`userDeletedZone`), that does not exist
    /// (`zoneNotFound`), or that the person's reset of their encrypted data deleted (an error
    /// carrying ``CloudKitErrorCode/userDidResetEncryptedDataKey``). The same request fails the
    /// same way until the app sets it up again (creates the zone and its subscriptions, and after
    /// a reset uploads the zone's data again), and succeeds after; unlike ``notRetryable``, the
    /// failure is not final. A CloudKit `partialFailure` whose every item failed that way stops
    /// with this reason too (send the items it names again once the zone exists, not the whole
    /// batch); one that mixes them with other items' errors stops with ``partialFailure``.
    public static let setupRequired = RetryStopReason(rawValue: "setupRequired")
    /// The request is not idempotent and may have reached the server, so sending it
    /// again could repeat its effect (see ``Idempotency``). A request whose body is a
    /// stream, which the first send read to its end, stops with this reason too. When the
    /// classifier stops the failure for sign-in anyway, the call reports
    /// ``authenticationRequired`` instead, and is not sent again either. For an item of a
    /// CloudKit batch (``CloudKitBatchResult/failureReasons``): the item may have been applied,
    /// so it was held back while the items that provably had no effect were sent again; a batch
    /// that held items back and had nothing else left to send stops with this reason too
    /// (``CloudKitBatchResult/stopReason``). A whole call that fails with CloudKit's
    /// `serverResponseLost` stops with this reason too when nothing said a second send is
    /// harmless (no declaration `.idempotent`, no `CloudKitRetryClassifier(operationIsIdempotent:
    /// true)`): the classifier stops it, since the request may have been applied, and a policy
    /// around the call does not send it again either. A CloudKit partial failure every item of
    /// which failed for want of its zone stops a call declared not idempotent with
    /// ``setupRequired``: no item's outcome is unknown.
    public static let notIdempotent = RetryStopReason(rawValue: "notIdempotent")
    /// Some items of a batch failed; the whole batch is not re-sent, only the failed items
    /// (see ``CloudKitPartialFailure``). When every item failed for want of its zone, the call
    /// stops with ``setupRequired`` instead.
    public static let partialFailure = RetryStopReason(rawValue: "partialFailure")
    /// An ``AdaptiveThrottle`` rejected the call locally; retrying would defeat its purpose.
    public static let throttled = RetryStopReason(rawValue: "throttled")
    /// A credential's refresh failed for a reason that passes (the auth server was
    /// unavailable, asked for a wait or timed out), and kept failing until the call ran
    /// out of attempts, each refresh retry taking one. Unlike ``authenticationRequired``,
    /// the person need not sign in again: a later call refreshes again (see
    /// ``CredentialRecovery``). A refresh the auth server answered with 429 stops the call
    /// with ``tooManyRequests`` instead, and one that failed offline with ``offline``; a
    /// deadline, a hint over the policy's limit or an empty budget with their own reasons.
    public static let credentialRefreshFailed = RetryStopReason(rawValue: "credentialRefreshFailed")
    /// A policy nested inside this one already retried the failure to exhaustion, so
    /// this layer does not multiply its attempts (see ``NestedRetries``).
    public static let retriedByInnerPolicy = RetryStopReason(rawValue: "retriedByInnerPolicy")

    /// The identifier.
    public var description: String { self.rawValue }
}
