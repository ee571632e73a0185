extension RetryPolicy {
    /// Runs `operation`, retrying as the policy allows, and waiting for the network
    /// instead of spending attempts while the device is offline.
    ///
    /// See ``ConnectivityWait`` for what counts as offline and how the wait ends. A call
    /// waits at most ``ConnectivityWait/maximumWaits`` times; past them an offline failure
    /// takes an attempt and the backoff, as any other failure does.
    ///
    /// ```swift
    /// let network = ConnectivityWait(monitor: monitor, limit: .seconds(300))
    /// let feed = try await policy.execute(waitingFor: network) { try await api.feed() }
    /// ```
    ///
    /// - Parameters:
    ///   - connectivity: The monitor to wait on and the longest wait.
    ///   - idempotency: Whether the operation may run twice; `nil` inherits the enclosing
    ///     call's declaration, or takes the classifier's, or assumes idempotent.
    ///   - operation: The work to attempt. It runs in the caller's isolation.
    /// - Returns: The operation's value from the first attempt that succeeds.
    /// - Throws: The error of the last attempt, unchanged, or `CancellationError` when
    ///   the task was cancelled while waiting.
    public nonisolated(nonsending) func execute<Value>(
        waitingFor connectivity: ConnectivityWait,
        idempotency: Idempotency? = nil,
        operation: () async throws -> Value
    ) async throws -> Value {
        try await self.outcome(
            waitingFor: connectivity, idempotency: idempotency, operation: operation
        ).get()
    }

    /// Runs `operation` as ``execute(waitingFor:idempotency:operation:)`` does,
    /// and reports the whole outcome.
    public nonisolated(nonsending) func outcome<Value>(
        waitingFor connectivity: ConnectivityWait,
        idempotency: Idempotency? = nil,
        operation: () async throws -> Value
    ) async -> RetryOutcome<Value> {
        let options = CallOptions(idempotency: idempotency, connectivity: connectivity)
        return await self.run(isolation: #isolation, firstFailure: nil, options: options) { _ in
            try await operation()
        }
    }
}
