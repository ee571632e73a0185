/// The library's judgement of a failure for the person in front of the screen:
/// whether a retry button makes sense, after how long, and why.
///
/// It reads the error with the same ``FailureAnalysis`` and classifier as a
/// ``RetryPolicy``, so the interface never offers a retry the policy would
/// refuse, nor hides one it would take.
///
/// ```swift
/// do {
///     try await policy.execute { try await api.sendMessage(draft) }
/// } catch {
///     let advice = RetryAdvice(for: error)
///     if advice.isRetryUseful {
///         print("Try again in \(advice.retryAfter ?? .zero): \(advice.reason)")
///     }
/// }
/// ```
///
/// | Reason | When | Retry |
/// | --- | --- | --- |
/// | ``Reason/offline`` | the device has no network | when it is back |
/// | ``Reason/signInRequired`` | the credential was refused | not before signing in |
/// | ``Reason/rateLimited`` | HTTP 429 | after the server's hint, or ``defaultRateLimitWait`` without one; never at once |
/// | ``Reason/serverBusy`` | a failure that usually passes: 5xx, timeouts, an open breaker, an empty retry budget | after the hint, if any |
/// | ``Reason/outcomeUnknown`` | a request that is not idempotent may have reached the server, or one whose response was lost that nothing declared safe to repeat (CloudKit's `serverResponseLost`) | not before checking |
/// | ``Reason/setupRequired`` | something the request relies on is missing until the app sets it up again (a deleted CloudKit zone) | not before the app has |
/// | ``Reason/permanent`` | the same request will fail the same way | no |
/// | ``Reason/cancelled`` | the caller gave up | at once |
public struct RetryAdvice: Sendable, Hashable, CustomStringConvertible {
    /// Why a failure happened, in terms a person can act on.
    ///
    /// A struct with static members rather than an enum, so that new reasons can be
    /// added without breaking a `switch`: compare with `==`.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// A stable identifier, such as `"offline"`, suitable for logs and for looking up localized text.
        public let rawValue: String

        /// Creates a reason from its identifier.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The device has no network; retry when it is back.
        public static let offline = Reason(rawValue: "offline")
        /// The service refused the credential; the person must sign in before a retry can succeed.
        public static let signInRequired = Reason(rawValue: "signInRequired")
        /// The service asked for fewer requests (HTTP 429); retry after its hint, never at once.
        public static let rateLimited = Reason(rawValue: "rateLimited")
        /// The service, or the way to it, failed in a way that usually passes: a 5xx, a timeout,
        /// a dropped connection, a busy database, an open circuit breaker, an empty retry budget.
        public static let serverBusy = Reason(rawValue: "serverBusy")
        /// A request that is not idempotent may have reached the server: retrying blindly could
        /// repeat its effect (a second payment), so check its result first.
        ///
        /// So it is for a request whose response was lost when nothing said a second send is
        /// harmless (CloudKit's `serverResponseLost`, which a classifier stops with
        /// ``RetryStopReason/notIdempotent``): the request may have been applied, as an item of a
        /// batch held back for the same reason may have been.
        public static let outcomeUnknown = Reason(rawValue: "outcomeUnknown")
        /// Something the request relies on is missing, and the app must set it up again before a
        /// retry can succeed: a CloudKit record zone the person deleted in Settings
        /// (`userDeletedZone`), that does not exist (`zoneNotFound`), or that a reset of the person's
        /// encrypted data deleted (``CloudKitErrorCode/userDidResetEncryptedDataKey``). Create the
        /// zone and its subscriptions, then send the request again; no retry button helps before
        /// that. A zone the person deleted held data they chose to remove: ask them before
        /// uploading it again. After a reset, upload the zone's data again.
        /// A failure a classifier stops with ``RetryStopReason/setupRequired``, a CloudKit
        /// `partialFailure` whose every item failed for want of its zone included; one that mixes
        /// such items with items failed otherwise is ``permanent``.
        public static let setupRequired = Reason(rawValue: "setupRequired")
        /// The same request will fail the same way: a 4xx, invalid data, a missing record.
        public static let permanent = Reason(rawValue: "permanent")
        /// The caller cancelled the request; nothing is wrong with it.
        public static let cancelled = Reason(rawValue: "cancelled")

        /// The identifier.
        public var description: String { self.rawValue }
    }

    /// Why the failure happened.
    public let reason: Reason
    /// Whether offering the person a retry makes sense now or after ``retryAfter``.
    public let isRetryUseful: Bool
    /// How long to wait before a retry can succeed, when known (a server's or a breaker's hint).
    ///
    /// `nil` with ``isRetryUseful`` means a retry may help at once, or, for
    /// ``Reason/offline``, once the network is back. The advice for an HTTP 429
    /// (``Reason/rateLimited``) always has a wait: the server's hint, or
    /// ``defaultRateLimitWait`` when it gave none.
    public let retryAfter: Duration?

    /// Creates advice from its parts; the initializers that read a failure make these, tests may too.
    public init(reason: Reason, isRetryUseful: Bool, retryAfter: Duration? = nil) {
        self.reason = reason
        self.isRetryUseful = isRetryUseful
        self.retryAfter = retryAfter
    }

    /// The advice for `error`, judged by the rules and the classifier a policy would use.
    ///
    /// - Parameters:
    ///   - error: The failure, as thrown.
    ///   - idempotency: Whether the request may run twice; `nil` takes the classifier's, then
    ///     assumes idempotent. The request's own report can make it stricter, never looser.
    ///   - classifier: The classifier your policy uses; `nil` answers fall back to
    ///     ``DefaultRetryClassifier``.
    public init(
        for error: any Error,
        idempotency: Idempotency? = nil,
        classifier: any RetryClassifier = DefaultRetryClassifier()
    ) {
        let analysis = FailureAnalysis(error)
        let isDeclared = Rulebook.idempotencyIsDeclared(idempotency)
        let idempotency = Rulebook.idempotency(of: analysis, declared: idempotency, classifier: classifier)
        self = Self.advice(
            for: error, analysis: analysis, idempotency: idempotency, isDeclared: isDeclared, classifier: classifier)
    }

    /// The advice for a call that a ``RetryPolicy`` ended, or `nil` when it succeeded.
    ///
    /// The stop reason sharpens the advice: a call that ran out of attempts, time or
    /// budget on a failure that usually passes is ``Reason/serverBusy`` (the policy sent it
    /// again, so it was safe to), and one stopped because its request may have been applied
    /// (``RetryStopReason/notIdempotent``: the idempotency rule, or a classifier's word for a lost
    /// response) is ``Reason/outcomeUnknown`` (unless the classifier stopped it for sign-in,
    /// which the policy then reports: ``Reason/signInRequired``).
    ///
    /// - Parameters:
    ///   - outcome: The call's outcome, from one of the policy's `outcome` methods.
    ///   - classifier: The classifier the policy used.
    public init?<Value>(for outcome: RetryOutcome<Value>, classifier: any RetryClassifier = DefaultRetryClassifier()) {
        guard case .failure(let error) = outcome.result else { return nil }
        let analysis = FailureAnalysis(error)
        let hint = outcome.retryAfter ?? analysis.retryAfter
        switch outcome.stopReason {
        case .cancelled:
            self.init(reason: .cancelled, isRetryUseful: true)
        case .offline:
            self.init(reason: .offline, isRetryUseful: true)
        case .authenticationRequired:
            self.init(reason: .signInRequired, isRetryUseful: false)
        case .setupRequired:
            self.init(reason: .setupRequired, isRetryUseful: false)
        case .tooManyRequests:
            self = .rateLimited(after: hint)
        case .notIdempotent:
            self.init(reason: .outcomeUnknown, isRetryUseful: false)
        case .retryAfterTooLong where analysis.isTooManyRequests:
            self = .rateLimited(after: hint)
        case .retryAfterTooLong:
            self.init(reason: .serverBusy, isRetryUseful: true, retryAfter: hint)
        case .budgetExhausted, .deadlineExceeded, .exhausted:
            let advice = RetryAdvice(for: error, classifier: classifier)
            if advice.reason == .permanent || advice.reason == .outcomeUnknown {
                // The policy retried it, so a classifier judged it transient and the call's
                // declaration, which the outcome does not carry, safe to send again.
                self.init(reason: .serverBusy, isRetryUseful: true, retryAfter: hint)
            } else {
                self = advice
            }
        default:
            self.init(for: error, classifier: classifier)
        }
    }

    /// How long the advice for an HTTP 429 asks to wait when the server gave no hint: 30 seconds.
    ///
    /// A 429 is never worth retrying at once: every retry adds to the load the server is
    /// shedding (Kii Cloud's guidance, for one, is not to retry it, to avoid congestion).
    /// So the advice always carries a wait: the server's hint when it gave one, this otherwise.
    public static let defaultRateLimitWait: Duration = .seconds(30)

    /// The advice for an HTTP 429 with the server's hint, if any: a retry is useful only after it.
    private static func rateLimited(after hint: Duration?) -> RetryAdvice {
        RetryAdvice(reason: .rateLimited, isRetryUseful: true, retryAfter: hint ?? Self.defaultRateLimitWait)
    }

    private static func advice(
        for error: any Error, analysis: FailureAnalysis, idempotency: Idempotency, isDeclared: Bool,
        classifier: any RetryClassifier
    ) -> RetryAdvice {
        if analysis.interruption == .caller { return RetryAdvice(reason: .cancelled, isRetryUseful: true) }
        if analysis.isOffline { return RetryAdvice(reason: .offline, isRetryUseful: true) }
        // A refusal of another request (a redirect's target) leaves a request that is not
        // idempotent of unknown outcome, which the idempotency rule reads below.
        if analysis.needsCredentials, !analysis.refusalAnsweredAnotherRequest {
            return RetryAdvice(reason: .signInRequired, isRetryUseful: false)
        }
        if analysis.isTooManyRequests { return .rateLimited(after: analysis.retryAfter) }
        let context = RetryContext(
            attempt: 1, idempotency: idempotency, analysis: analysis, idempotencyIsDeclared: isDeclared)
        let decision =
            classifier.decision(for: error, context: context)
            ?? DefaultRetryClassifier().decision(for: error, context: context) ?? .retry
        // As a policy reports it: a call stopped by the idempotency rule that the classifier
        // stops for sign-in anyway is sent to sign in, and a batch whose every item lacks its
        // zone to set it up (see `Rulebook.reportedStop`).
        if Rulebook.stopReason(for: analysis, idempotency: idempotency) == .notIdempotent,
            Rulebook.reportedStop(forNotIdempotent: decision, analysis: analysis) == .notIdempotent
        {
            return RetryAdvice(reason: .outcomeUnknown, isRetryUseful: false)
        }
        if decision.stopReason == .authenticationRequired {
            return RetryAdvice(reason: .signInRequired, isRetryUseful: false)
        }
        if decision.stopReason == .setupRequired { return RetryAdvice(reason: .setupRequired, isRetryUseful: false) }
        // A classifier that stops a request because it may have been applied (CloudKit's lost
        // response, with no word that a second send is harmless) says its outcome is unknown.
        if decision.stopReason == .notIdempotent { return RetryAdvice(reason: .outcomeUnknown, isRetryUseful: false) }
        guard decision.isRetryable else { return RetryAdvice(reason: .permanent, isRetryUseful: false) }
        let hints = [analysis.retryAfter, decision.retryAfter].compactMap { $0 }
        return RetryAdvice(reason: .serverBusy, isRetryUseful: true, retryAfter: hints.max())
    }

    /// The reason, whether to retry, and the hint, for logs.
    public var description: String {
        var text = "\(self.reason): \(self.isRetryUseful ? "retry" : "do not retry")"
        if let retryAfter = self.retryAfter { text += " after \(retryAfter)" }
        return text
    }
}
