extension RetryPolicy {
    /// The scope a call hands down to the calls nested in it, or `nil` when it has nothing to hand down.
    nonisolated func scopeToHandDown(_ options: CallOptions) -> CallScope? {
        var scope = CallScope.declaring(options.idempotency)
        if let deadline = self.deadline {
            // Installed only by calls with a deadline, which already take the full path.
            let limited = InheritedDeadline.scope(limit: deadline, clock: self.clock)
            if scope == nil { scope = limited } else { scope?.deadline = limited.deadline }
        }
        return scope
    }

    /// The time left before this call's deadline or an enclosing call's, whichever is sooner; `nil` for none.
    nonisolated func timeLeft(start: Duration) -> Duration? {
        let own = self.deadline.map { $0 - (self.clock.now() - start) }
        return InheritedDeadline.remaining(within: own)
    }

    /// The stop a failure calls for because of the layers nested in this call, or `nil`.
    ///
    /// A local rejection by an ``AdaptiveThrottle`` is never retried; a failure an inner
    /// policy retried to exhaustion is not retried again here, unless this policy opted out.
    nonisolated func nestedStop(after error: any Error, call: inout CallState) -> RetryStopReason? {
        if error is AdaptiveThrottleRejection { return .throttled }
        guard !self.nestedRetries.retriesExhaustedFailures else { return nil }
        guard
            let writers = NestedRetryLedger.takeExhausted(
                error, by: ObjectIdentifier(self), writtenAfter: call.ledgerMark)
        else { return nil }
        call.innerWriters = writers
        return .retriedByInnerPolicy
    }

    /// Leaves word for an enclosing policy when this call retried `error` to exhaustion.
    nonisolated func noteStop(_ reason: RetryStopReason, error: any Error, call: CallState) {
        if (reason == .exhausted && call.attempts > 1) || reason == .retriedByInnerPolicy {
            NestedRetryLedger.recordExhausted(error, by: self, passingOn: call.innerWriters)
        }
    }
}
