/// The package's default rules for what counts as a failure of the dependency.
///
/// In order, each looking through the error's whole chain (``FailureAnalysis``):
/// 1. `CancellationError`: does not count; the caller gave up, the dependency did not fail.
///    A time limit's cancellation is not the caller's: it counts (rule 8).
/// 2. ``CircuitBreakerOpenError`` from another breaker inside the operation: counts,
///    since that dependency is unavailable to this one. Unlike a limiter's rejection,
///    which says only that this process is busy, an inner breaker's says the dependency
///    itself is known to be failing. A classifier of your own may leave it out.
/// 3. A rejection by one of the library's own limiters inside the operation: a
///    ``LimiterRejectionError`` from a ``ConcurrencyLimiter`` or a ``RateLimiter``, an
///    ``AdaptiveThrottleRejection`` from a throttle (a policy's ``RetryPolicy/throttle``,
///    a pipeline stage): does not count; the request was never sent, so it says nothing
///    of the dependency. A breaker never asks its classifier about one, wherever it sits
///    in the error's chain (``Rulebook/countsAsFailure(_:)``); this rule answers a direct
///    question the same way, and so for a call a retry policy refused to start because an
///    enclosing deadline had passed (``LimiterRejectionError/Reason/noTimeLeft``).
/// 4. An HTTP status (see ``ErrorHints/httpStatus(of:)``) in 400...499 other than
///    408 Request Timeout and 429 Too Many Requests: does not count. A 404 or a 422
///    is the client's problem and proves the server is answering.
/// 5. A failure that asks for credentials and carries no HTTP status
///    (``FailureAnalysis/needsCredentials``: CloudKit's `notAuthenticated`,
///    `URLError.userAuthenticationRequired`): does not count, like the HTTP 401 of
///    rule 4. A stale credential is the caller's to renew, not a sign of a failing
///    dependency, so a breaker inside a call that refreshes its credential
///    (``RetryPolicy/execute(recovering:waitingFor:idempotency:operation:)``) lets the
///    retry with the new one through.
/// 6. A request the dependency refused before acting on it, for a reason of the app's own
///    (``FailureAnalysis/delivery`` at ``RequestDelivery/refused``): CloudKit's
///    `userDeletedZone` and `zoneNotFound`, which found no zone to write to (the app's setup,
///    which ``RetryStopReason/setupRequired`` asks it to redo), and `batchRequestFailed`,
///    an item rolled back with an atomic batch another item of which failed (that item's
///    error is the one to judge): does not count. The service answered; it is healthy.
/// 7. A CloudKit partial failure (`partialFailure`): does not count, unless one of its
///    items says the service is busy or unavailable: HTTP 429, or CloudKit's
///    `serviceUnavailable`, `zoneBusy` or `requestRateLimited`. Such an item counts as the same
///    error on the whole request would, and its `CKRetryAfter` is the breaker's pushback as
///    that error's would be (a 429's under the default ``CircuitBreakerPushback``, any hint
///    under ``CircuitBreakerPushback/anyRetryAfter(maximum:)``). Otherwise CloudKit answered
///    the batch and saved the items in no error; what its items' errors ask for (a record to
///    merge, a zone to create, an item to send again) is the app's to do item by item, and
///    says nothing of the service's health.
/// 8. Anything else counts: 5xx responses, 408, 429, transport errors, timeouts.
///
/// A request that never left an offline device is not this classifier's to judge:
/// the ``Rulebook`` never counts it (``Rulebook/countsAsFailure(_:)``).
public struct DefaultCircuitBreakerFailureClassifier: CircuitBreakerFailureClassifier {
    /// The client-error statuses that still count as failures.
    public static let countedClientErrorStatuses: Set<Int> = [408, 429]

    /// Creates the default classifier.
    public init() {}

    /// Whether `error` counts under the default rules.
    ///
    /// Each rule reads the whole of the error's chain, as the breaker does: a cancellation,
    /// a breaker's or a limiter's rejection wrapped in an error of the app's own, kept under
    /// `NSUnderlyingErrorKey` or bridged to `NSError` is judged as itself. The error is
    /// judged, not the task asking: a question asked in a cancelled task gets the same answer.
    public func countsAsFailure(_ error: any Error) -> Bool {
        self.countsAsFailure(error, analysis: FailureAnalysis(error, isCancelled: false, timeLimitFired: false))
    }

    /// Whether `error` counts under the default rules, with its analysis already made (a breaker's).
    func countsAsFailure(_ error: any Error, analysis: FailureAnalysis) -> Bool {
        if analysis.interruption == .caller || analysis.interruption == .superseded { return false }
        if analysis.isBreakerRejection { return true }
        if analysis.isLocalRejection || analysis.isRefusedForWantOfTime { return false }
        if analysis.reportsOnItems { return analysis.isTooManyRequests || analysis.reportsServiceBusy }
        if let status = analysis.httpStatus {
            guard (400...499).contains(status) else { return true }
            return Self.countedClientErrorStatuses.contains(status)
        }
        if analysis.delivery == .refused { return false }
        return !analysis.needsCredentials
    }
}
