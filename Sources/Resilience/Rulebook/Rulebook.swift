/// The rules that no classifier can change, applied to every failure at every
/// entry point before any classifier is asked.
///
/// 1. **Cancellation ends the call.** A failure in a cancelled task, or a
///    `CancellationError`, is never retried (``RetryStopReason/cancelled``).
/// 2. **HTTP 429 is never retried**, wherever it sits in the error's chain, a
///    response an error holds as a value included (``HTTPResponseReporting``)
///    (``RetryStopReason/tooManyRequests``). The server's retry-after hint is
///    still reported.
/// 3. **A request that is not idempotent is never sent twice once it may have
///    reached the server** (``RetryStopReason/notIdempotent``): after a timeout, a
///    dropped connection or any answer from the server, a 503 included. Only a
///    failure that proves the request never left (``RequestDelivery/notSent``)
///    lets it be sent again. When the classifier would stop the call anyway to send
///    the person to sign in (``RetryDecision/doNotRetry(because:)`` with
///    ``RetryStopReason/authenticationRequired``), the call stops with that reason
///    instead: nothing is sent again either way, and signing in is what helps (unless the
///    refusal answered another request, such as a redirect's target: see
///    ``HTTPResponseError/recordedDelivery``). So it
///    does with ``RetryStopReason/setupRequired`` for a CloudKit partial failure every
///    item of which failed for want of its zone: those items provably had no effect and
///    the others were saved, so no outcome is unknown, and creating the zone is what helps.
///
/// Three more rules are about counting, not retrying (``countsAsFailure(_:)``):
///
/// 4. **A ``CircuitBreaker`` never counts a call the caller cancelled.**
/// 5. **It always counts an attempt the library's own time limit ended**, unless the
///    attempt ended in front of the dependency: the limit cut short a wait for a limiter's
///    slot or permit (``LimiterRejectionError/Reason/waitCutShort``), the attempt ended with
///    a limiter's or a throttle's refusal (a bulkhead's queue timeout), or the limit cut short
///    a wait for the network on an offline device that never let the request leave; and
///    unless, even then, the library saw a request of that attempt that may have left before
///    (a ``RetryPolicy`` inside tells the limits around it of such a failure, and a call declared
///    not idempotent inside of its success). The answer is the same for a
///    breaker outside the limit, which reads its error, and for one inside it, which reads
///    the failure the operation ends with in the task the limit cancelled.
/// 6. **It never counts a call that never reached the dependency**: one of the
///    library's own limiters refused it (``FailureAnalysis/isLocalRejection``: a
///    ``ConcurrencyLimiter``'s or a ``RateLimiter``'s ``LimiterRejectionError``, or an
///    ``AdaptiveThrottleRejection``, wherever it sits in the error's chain), a
///    time-limited attempt did not start because an enclosing deadline had passed
///    (``LimiterRejectionError/Reason/noTimeLeft``, a deadline's outcome rather than a
///    rejection), or the device was offline and the request never left it (``FailureAnalysis/isOffline``
///    with ``FailureAnalysis/delivery`` at ``RequestDelivery/notSent``:
///    `URLError.notConnectedToInternet`, CloudKit's `networkUnavailable`). So a breaker
///    around a full bulkhead does not open on a healthy dependency, and one inside a
///    call that waits for the network does not refuse the retry once it is back. A
///    ``CircuitBreakerOpenError`` from a breaker inside is not such a rejection: it
///    says the dependency is known to be failing, and the classifier decides (the
///    default one counts it). The same reading keeps an ``AdaptiveThrottle`` from
///    recording such a call, and a ``RetryPolicy`` from spending a ``RetryBudget``
///    token on retrying it.
///
/// ```swift
/// let analysis = FailureAnalysis(error)
/// Rulebook.stopReason(for: analysis, idempotency: .notIdempotent)  // .notIdempotent after a timeout
///
/// let full = LimiterRejectionError(limiterName: "uploads", reason: .queueFull)
/// Rulebook.countsAsFailure(FailureAnalysis(AppError.transport(full)))  // false, whatever the classifier says
/// ```
public enum Rulebook {
    /// The stop reason the rules impose on a failure, or `nil` when they leave it to the classifiers.
    ///
    /// - Parameters:
    ///   - analysis: The failure, read once.
    ///   - idempotency: Whether the call may run twice. The request's own report
    ///     (``FailureAnalysis/requestIdempotency``) can make it stricter, never looser:
    ///     a call declared not idempotent stays so when the request that failed was a `GET`.
    public static func stopReason(for analysis: FailureAnalysis, idempotency: Idempotency) -> RetryStopReason? {
        if analysis.interruption == .caller || analysis.interruption == .superseded { return .cancelled }
        if analysis.isTooManyRequests { return .tooManyRequests }
        let idempotency = idempotency.tightened(by: analysis.requestIdempotency)
        if !idempotency.isIdempotent, !analysis.delivery.provesNotSent { return .notIdempotent }
        return nil
    }

    /// The reason a call reports when the idempotency rule stopped it
    /// (``RetryStopReason/notIdempotent``), given what the classifier decides about the failure.
    ///
    /// Rules 1 and 2 come first and are never replaced. Rule 3 exists to keep a request
    /// from being sent again; when the classifier's decision is not to send it again either,
    /// because the person must sign in (``RetryStopReason/authenticationRequired``, such as
    /// a REST SDK's failed token refresh), that reason says more, so it is reported instead.
    /// So is ``RetryStopReason/setupRequired`` for a CloudKit partial failure each item of
    /// which failed for want of its zone (the analysis's `everyItemNeedsSetup`): the items
    /// it names had no effect and the others were saved, so nothing about the batch is of
    /// unknown outcome. Any other decision, a retry included, leaves
    /// ``RetryStopReason/notIdempotent``, and so does a refusal that answered another request
    /// than the call's (a redirect's target's 401, see ``HTTPResponseError/recordedDelivery``):
    /// the call's own request may have been acted on, and signing in would not tell whether it was.
    static func reportedStop(forNotIdempotent decision: RetryDecision?, analysis: FailureAnalysis) -> RetryStopReason {
        guard let decision, !decision.isRetryable else { return .notIdempotent }
        switch decision.stopReason {
        case .authenticationRequired? where !analysis.refusalAnsweredAnotherRequest: return .authenticationRequired
        case .setupRequired? where analysis.everyItemNeedsSetup: return .setupRequired
        default: return .notIdempotent
        }
    }

    /// Whether the rules count a failure against the dependency, or `nil` when they leave
    /// it to the breaker's ``CircuitBreakerFailureClassifier``.
    ///
    /// - Returns: `false` for a call the caller cancelled (``Interruption/caller``), a hedge
    ///   another attempt won (``Interruption/superseded``), a call one of the library's
    ///   own limiters refused (``FailureAnalysis/isLocalRejection``), a time-limited attempt an
    ///   enclosing deadline left no time to start (``LimiterRejectionError/Reason/noTimeLeft``) and a request that never
    ///   left an offline device (``FailureAnalysis/isOffline``, ``RequestDelivery/notSent``);
    ///   `true` for an attempt the library's own time limit ended (``Interruption/timeLimit``),
    ///   unless it ended the operation at one of the library's gates (a wait for a limiter's slot
    ///   or permit, ``LimiterRejectionError/Reason/waitCutShort``, or a limiter's refusal) or what
    ///   ended it proves the request never left an offline device (``RequestDelivery/notSent``),
    ///   with no request of the attempt known to have left before; `nil` otherwise.
    public static func countsAsFailure(_ analysis: FailureAnalysis) -> Bool? {
        switch analysis.interruption {
        case .caller?, .superseded?: return false
        case .timeLimit?:
            // A time-out counts because its request may have reached a slow dependency; one whose
            // operation provably never left (an offline device), or that ended it in front of the
            // dependency at a limiter, says nothing of the dependency's health (rule 6), unless a
            // request of the attempt may have left before (the analysis reads that too).
            return analysis.delivery != .notSent && !analysis.endedWaitingAtAGate
        default:
            let neverLeft = analysis.isOffline && analysis.delivery == .notSent
            return analysis.isLocalRejection || analysis.isRefusedForWantOfTime || neverLeft ? false : nil
        }
    }

    /// Whether a failure put load on the dependency. One that did not is a refusal by one of
    /// the library's own gates before the call ran (a limiter's, an adaptive throttle's, an
    /// open breaker's), or any failure the rules never count (``countsAsFailure(_:)``).
    ///
    /// Only a failure that did costs a ``RetryBudget`` token: a ``RetryPolicy`` charges its
    /// retries by it, ``Hedging`` the attempts that replace a failed one, and a shared
    /// credential refresh its failure to each budget. An ``AdaptiveThrottle`` records only
    /// such failures.
    static func loadedTheDependency(_ analysis: FailureAnalysis) -> Bool {
        !analysis.isRefusedBeforeRunning && Self.countsAsFailure(analysis) != false
    }

    /// The idempotency a call is judged by.
    ///
    /// The call's own reading comes first: its declaration, then the enclosing call's,
    /// then the classifier's (which wins over an enclosing policy's classifier), then
    /// idempotent. The request's own report then tightens it, never loosens it: the
    /// call may have sent a `POST` before the `GET` that failed.
    static func idempotency(
        of analysis: FailureAnalysis,
        declared: Idempotency?,
        classifier: any RetryClassifier
    ) -> Idempotency {
        let call =
            declared ?? CallScope.current.handedDownIdempotency(over: classifier.declaredIdempotency) ?? .idempotent
        return call.tightened(by: analysis.requestIdempotency)
    }

    /// Whether a call declared the idempotency it is judged by: `declared`, the call's own
    /// declaration, or an enclosing call's, handed down (an enclosing policy's classifier's
    /// word is not a declaration). Read on the failure path only, for ``RetryContext/idempotencyIsDeclared``.
    static func idempotencyIsDeclared(_ declared: Idempotency?) -> Bool {
        if declared != nil { return true }
        let scope = CallScope.current
        return scope.idempotency != nil && !scope.idempotencyIsAClassifiers
    }
}
