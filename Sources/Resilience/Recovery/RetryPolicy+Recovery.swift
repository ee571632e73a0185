extension RetryPolicy {
    /// Runs `operation` with the recovery's current credential, retrying as the policy allows,
    /// and recovering the credential once when the operation fails for it.
    ///
    /// After a failure that the recovery recognizes (see
    /// ``CredentialRecovery/isCredentialFailure``), the call waits for the
    /// recovery's shared refresh, or finds that another call already refreshed,
    /// and tries again with the new credential: at once, or when the rest of the
    /// failure's retry-after hint has passed (a `Retry-After`, CloudKit's `CKRetryAfter`;
    /// a hint over ``maximumRetryAfter`` stops the call with
    /// ``RetryStopReason/retryAfterTooLong`` before any refresh). That attempt does not
    /// count against ``maximumAttempts``. A call recovers at most once: a second
    /// credential failure goes to the classifier, which stops it with
    /// ``RetryStopReason/authenticationRequired``.
    ///
    /// A refresh that fails for good (the auth server refused the session) ends the call
    /// with ``RetryStopReason/authenticationRequired`` and the refresh's error: send the
    /// person to sign in. One that fails for now ends it with the refresh's error and
    /// ``RetryStopReason/tooManyRequests`` (the auth server answered 429; the hint is in
    /// ``RetryOutcome/retryAfter``), ``RetryStopReason/offline`` or
    /// ``RetryStopReason/credentialRefreshFailed``, and a later call refreshes again (see
    /// ``CredentialRecovery``).
    ///
    /// The ``Rulebook``'s rules come first: a call that is not idempotent is not
    /// sent again after the server answered it, a 401 included.
    ///
    /// ```swift
    /// let recovery = CredentialRecovery(credential: storedToken) { stale in
    ///     try await auth.refresh(using: stale)
    /// }
    /// let profile = try await policy.execute(recovering: recovery) { token in
    ///     try await api.profile(token: token)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - recovery: The credential and its refresh, shared by every call that uses it.
    ///   - connectivity: Waits for the network after offline failures, if given (see
    ///     ``execute(waitingFor:idempotency:operation:)``).
    ///   - idempotency: Whether the operation may run twice; `nil` inherits the enclosing
    ///     call's declaration, or takes the classifier's, or assumes idempotent.
    ///   - operation: The work to attempt with the credential. It runs in the caller's isolation.
    /// - Returns: The operation's value from the first attempt that succeeds.
    /// - Throws: The error of the last attempt, unchanged; the refresh's error when the
    ///   recovery failed, for good or for now; `CancellationError` when the task was
    ///   cancelled while waiting.
    public nonisolated(nonsending) func execute<Value, Credential>(
        recovering recovery: CredentialRecovery<Credential>,
        waitingFor connectivity: ConnectivityWait? = nil,
        idempotency: Idempotency? = nil,
        operation: (Credential) async throws -> Value
    ) async throws -> Value {
        try await self.outcome(
            recovering: recovery, waitingFor: connectivity, idempotency: idempotency,
            operation: operation
        ).get()
    }

    /// Runs `operation` as ``execute(recovering:waitingFor:idempotency:operation:)`` does,
    /// and reports the whole outcome.
    public nonisolated(nonsending) func outcome<Value, Credential>(
        recovering recovery: CredentialRecovery<Credential>,
        waitingFor connectivity: ConnectivityWait? = nil,
        idempotency: Idempotency? = nil,
        operation: (Credential) async throws -> Value
    ) async -> RetryOutcome<Value> {
        let call = CredentialRecoveryCall(recovery)
        let options = CallOptions(idempotency: idempotency, recovery: call, connectivity: connectivity)
        return await self.run(isolation: #isolation, firstFailure: nil, options: options) { _ in
            try await operation(call.begin())
        }
    }

    /// What follows a failure that a recovery or a wait for connectivity handles; `nil` for any other failure.
    ///
    /// Runs after the ``Rulebook``'s rules and before the classifier.
    func recoveryPlan(
        isolation: isolated (any Actor)?,
        after error: any Error,
        analysis: FailureAnalysis,
        options: CallOptions,
        call: inout CallState,
        start: Duration
    ) async -> Plan? {
        if let recovery = options.recovery, !call.hasRecovered, recovery.isCredentialFailure(error, analysis) {
            self.observer?.attemptFailed(
                .init(
                    policyName: self.name, attempt: call.attempts, error: error, httpStatus: analysis.httpStatus,
                    retryAfter: analysis.retryAfter))
            if let hint = analysis.retryAfter, hint > self.maximumRetryAfter { return .stop(.retryAfterTooLong) }
            let failedAt = self.clock.now()
            switch await recovery.recover() {
            case .success:
                call.hasRecovered = true
                return self.retryAfterRecovery(
                    after: error, hint: analysis.retryAfter, failedAt: failedAt, call: &call, start: start)
            case .failure(let failure):
                if Task.isCancelled { return .stopWithError(.cancelled, CancellationError()) }
                // The refresh's own failure, read by the same analysis: only one that refused
                // the session sends the person to sign in.
                let refusal = FailureAnalysis(failure)
                guard RefreshFailure.isTransient(failure, refusal) else {
                    return .stopWithError(.authenticationRequired, failure)
                }
                if let hint = refusal.retryAfter { call.lastHint = hint }
                return .stopWithError(RefreshFailure.stopReason(for: refusal), failure)
            }
        }
        if let connectivity = options.connectivity, analysis.isOffline,
            !connectivity.monitor.connectivity.isOnline
        {
            self.observer?.attemptFailed(
                .init(
                    policyName: self.name, attempt: call.attempts, error: error, httpStatus: analysis.httpStatus,
                    retryAfter: analysis.retryAfter))
            // The retry after the wait honours the failure's hint, so one the policy refuses ends the call now.
            if let hint = analysis.retryAfter, hint > self.maximumRetryAfter { return .stop(.retryAfterTooLong) }
            let failedAt = self.clock.now()
            // The wait counts against the deadline: it ends at the deadline if that comes first.
            var limit = connectivity.limit
            var deadlineComesFirst = false
            if let deadline = self.deadline {
                let left = deadline - (self.clock.now() - start)
                if left <= limit {
                    limit = Swift.max(left, .zero)
                    deadlineComesFirst = true
                }
            }
            switch await connectivity.waitForConnection(upTo: limit, clock: self.clock) {
            case .connected:
                return self.retryAfterRecovery(
                    after: error, hint: analysis.retryAfter, failedAt: failedAt, call: &call, start: start)
            case .limitReached:
                return .stop(deadlineComesFirst ? .deadlineExceeded : .offline)
            case .cancelled:
                return .stopWithError(.cancelled, CancellationError())
            }
        }
        return nil
    }

    /// Schedules an attempt that does not count against ``maximumAttempts``, now that the
    /// state that failed the last one has been recovered: at once, or when the rest of the
    /// failure's retry-after hint has passed.
    ///
    /// - Parameters:
    ///   - hint: The failure's retry-after hint, already known to be within ``maximumRetryAfter``.
    ///   - failedAt: When the failure came, on the policy's clock: the hint runs from then,
    ///     so the wait for the network or the refresh counts towards it.
    ///   - start: When the call began: a wait that would pass the deadline stops the call.
    private nonisolated func retryAfterRecovery(
        after error: any Error,
        hint: Duration?,
        failedAt: Duration,
        call: inout CallState,
        start: Duration
    ) -> Plan {
        let rest = Swift.max((hint ?? .zero) - (self.clock.now() - failedAt), .zero)
        if rest > .zero, let left = self.timeLeft(start: start), rest >= left { return .stop(.deadlineExceeded) }
        call.uncountedAttempts += 1
        call.retries += 1
        self.observer?.retryScheduled(
            .init(policyName: self.name, attempt: call.attempts, delay: rest, error: error, retryAfter: hint))
        return rest > .zero ? .wait(rest) : .retryNow
    }
}

/// The recovery one call through a ``RetryPolicy`` may take after a credential failure.
protocol CallRecovery: Sendable {
    /// Whether `error` asks for a new credential.
    func isCredentialFailure(_ error: any Error, _ analysis: FailureAnalysis) -> Bool
    /// Obtains a credential newer than the one the last attempt carried.
    func recover() async -> Result<Void, any Error>
}

/// One call's view of a ``CredentialRecovery``: it remembers the credential the last attempt carried.
final class CredentialRecoveryCall<Credential: Sendable>: CallRecovery {
    private let recovery: CredentialRecovery<Credential>
    private let carried = Lock<CredentialRecovery<Credential>.Snapshot?>(nil)

    init(_ recovery: CredentialRecovery<Credential>) {
        self.recovery = recovery
    }

    /// The credential for the next attempt, remembered as the one it carries.
    func begin() -> Credential {
        let snapshot = self.recovery.current
        self.carried.withLock { $0 = snapshot }
        return snapshot.credential
    }

    func isCredentialFailure(_ error: any Error, _ analysis: FailureAnalysis) -> Bool {
        self.recovery.isCredentialFailure(error, analysis)
    }

    func recover() async -> Result<Void, any Error> {
        guard let stale = self.carried.withLock({ $0 }) else { return .success(()) }
        do {
            _ = try await self.recovery.recover(after: stale)
            return .success(())
        } catch {
            return .failure(error)
        }
    }
}
