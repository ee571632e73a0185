/// What the failure of a credential's refresh says about the session, read from the one ``FailureAnalysis``.
///
/// A refresh fails **for good** when the auth server refused the session (a 400 or a 401,
/// an OAuth 2.0 `invalid_grant`), or the refresh threw an error of the app's own that the
/// analysis does not know: the person must sign in again. It fails **for now** when
/// the failure says nothing about the session: the auth server asked for less traffic
/// (429) or for a wait (a retry-after hint, whatever the status), timed out the request
/// (408), failed on its side or behind a proxy (any 5xx: even one a call is not retried
/// after, such as 501 or a captive portal's 511, is the server's or the network's fault,
/// not the session's, and signing in again would meet it too), could not be reached
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

    /// How long the recovery remembers a refresh's failure: for good, until its retry-after
    /// hint has passed (measured from `now`), or not at all.
    static func memory(of error: any Error, now: Duration) -> RefreshFailureMemory {
        let analysis = FailureAnalysis(error)
        guard Self.isTransient(error, analysis) else { return .forGood }
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
