/// What the failure of a credential's refresh says about the session, read from the one ``FailureAnalysis``.
///
/// A refresh fails **for good** when the auth server refused the session (a 400 or a 401,
/// an OAuth 2.0 `invalid_grant`), the refresh threw an error of the app's own that the
/// analysis does not know, or its error carries an SDK code that the policy's
/// ``RESTServiceErrorClassifier`` lists as a failed token refresh, whatever the status beside
/// it (a 429 excepted, which the rules never let go): the person must sign in again. It
/// fails **for now** when the failure says nothing about the session otherwise: the auth
/// server asked for less traffic (429) or for a wait (a retry-after hint, whatever the
/// status), timed out the request (408), failed on its side or behind a proxy (any 5xx:
/// even one a call is not retried after, such as 501 or a captive portal's 511, is the
/// server's or the network's fault, not the session's, and signing in again would meet it
/// too), could not be reached
/// (offline, a refused connection, a timeout), or the refresh was cut short (a time
/// limit, a cancellation, a local limiter or breaker).
enum RefreshFailure {
    /// Whether the refresh failed for a reason that passes, so the session is not over.
    static func isTransient(_ error: any Error, _ analysis: FailureAnalysis) -> Bool {
        if analysis.needsCredentials { return false }
        if analysis.isTooManyRequests || analysis.isOffline || analysis.interruption != nil
            || analysis.isRefusedBeforeRunning || analysis.isRefusedForWantOfTime
        {
            return true
        }
        // A wait the server asked for passes, whatever the status that came with it.
        if analysis.retryAfter != nil { return true }
        if let status = analysis.httpStatus {
            // The server answered: a 408 or a 5xx says nothing about the session, even a final
            // one; any other status (a 4xx) is the auth server's word on it.
            return status >= 500 || DefaultRetryClassifier.retryableHTTPStatuses.contains(status)
        }
        if let category = analysis.urlErrorCategory { return category.isTransient }
        if case .retryable(let isRetryable)? = analysis.defaultRuling { return isRetryable }
        return false
    }

    /// Whether the refresh's failure ends the session: the analysis says so, or `judge`, the
    /// waiting call's REST classifier, reads a token refresh failure code in it. The rules'
    /// 429 stays a 429, whatever code came with it.
    static func endsSession(
        _ error: any Error, _ analysis: FailureAnalysis, judge: RESTServiceErrorClassifier?
    ) -> Bool {
        if !Self.isTransient(error, analysis) { return true }
        guard let judge, !analysis.isTooManyRequests else { return false }
        return judge.saysTokenRefreshFailed(error)
    }

    /// How long the recovery remembers a refresh's failure: for good, until its retry-after
    /// hint has passed (measured from `now`), or not at all. `judges` are the REST classifiers
    /// of the calls that asked for the refresh: the failure is remembered for good when one of
    /// them reads it as the session's end.
    static func memory(
        of error: any Error, now: Duration, judges: [RESTServiceErrorClassifier] = []
    ) -> RefreshFailureMemory {
        let analysis = FailureAnalysis(error)
        guard Self.isTransient(error, analysis) else { return .forGood }
        if !analysis.isTooManyRequests, judges.contains(where: { $0.saysTokenRefreshFailed(error) }) {
            return .forGood
        }
        guard let hint = analysis.retryAfter, hint > .zero else { return .notAtAll }
        return .until(now + hint)
    }

    /// The reason a call stops after a refresh that failed for now: ``RetryStopReason/tooManyRequests``
    /// for a 429 (never retried at once), ``RetryStopReason/offline`` when the device was offline,
    /// ``RetryStopReason/credentialRefreshFailed`` otherwise.
    static func stopReason(for analysis: FailureAnalysis) -> RetryStopReason {
        if analysis.isTooManyRequests { return .tooManyRequests }
        if analysis.isOffline { return .offline }
        return .credentialRefreshFailed
    }
}
