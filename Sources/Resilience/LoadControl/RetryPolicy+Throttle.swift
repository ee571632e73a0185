extension RetryPolicy {
    /// Asks the throttle to admit an attempt: `nil` to send it, or the ``AdaptiveThrottleRejection``
    /// the call handles as the attempt's failure, without sending it.
    ///
    /// Each attempt of a call goes through the policy's ``throttle`` when it has one: the
    /// loop asks before the attempt and records its outcome after. A policy with a throttle
    /// takes the full path even for a first attempt (see `needsFullPath`), so a policy
    /// without one pays nothing here but a `nil` test.
    nonisolated func admitAttempt() -> AdaptiveThrottleRejection? {
        guard let throttle = self.throttle, !throttle.admit() else { return nil }
        return AdaptiveThrottleRejection(rejectionProbability: throttle.rejectionProbability)
    }

    /// Records an attempt the throttle admitted and that succeeded.
    nonisolated func recordAttemptAccepted() {
        self.throttle?.recordAccepted()
    }

    /// Records an attempt the throttle admitted and that failed with `error`; one that held back
    /// items that may have been applied and left nothing to send again counts as accepted, as a
    /// success does (`AttemptFailureStandIn.endsTheCallAsNotIdempotent`).
    nonisolated func recordAttemptFailure(_ error: any Error) {
        guard let throttle = self.throttle else { return }
        if endsTheCallAsNotIdempotent(error) {
            throttle.recordAccepted()
        } else {
            throttle.record(error)
        }
    }
}
