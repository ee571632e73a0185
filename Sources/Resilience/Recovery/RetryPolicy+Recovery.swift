extension RetryPolicy {
    /// Runs `operation` with the recovery's current credential, retrying as the policy allows,
    /// and recovering the credential once when the operation fails for it.
    ///
    /// After a failure that the recovery recognizes (see
    /// ``CredentialRecovery/isCredentialFailure``), the call waits for the
    /// recovery's shared refresh, or finds that another call already refreshed,
    /// and tries again at once with the new credential. That attempt does not
    /// count against ``maximumAttempts``. A call recovers at most once: a second
    /// credential failure goes to the classifier, which stops it with
    /// ``RetryStopReason/authenticationRequired``. A failed refresh ends the call
    /// with ``RetryStopReason/authenticationRequired`` and the refresh's error.
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
    ///   recovery failed; `CancellationError` when the task was cancelled while waiting.
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
            switch await recovery.recover() {
            case .success:
                call.hasRecovered = true
                return self.retryNow(after: error, call: &call)
            case .failure(let failure):
                if Task.isCancelled { return .stopWithError(.cancelled, CancellationError()) }
                return .stopWithError(.authenticationRequired, failure)
            }
        }
        if let connectivity = options.connectivity, analysis.isOffline,
            !connectivity.monitor.connectivity.isOnline
        {
            self.observer?.attemptFailed(
                .init(
                    policyName: self.name, attempt: call.attempts, error: error, httpStatus: analysis.httpStatus,
                    retryAfter: analysis.retryAfter))
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
                return self.retryNow(after: error, call: &call)
            case .limitReached:
                return .stop(deadlineComesFirst ? .deadlineExceeded : .offline)
            case .cancelled:
                return .stopWithError(.cancelled, CancellationError())
            }
        }
        return nil
    }

    /// Schedules an attempt now that does not count against ``maximumAttempts``.
    private nonisolated func retryNow(after error: any Error, call: inout CallState) -> Plan {
        call.uncountedAttempts += 1
        call.retries += 1
        self.observer?.retryScheduled(
            .init(policyName: self.name, attempt: call.attempts, delay: .zero, error: error, retryAfter: nil))
        return .retryNow
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
