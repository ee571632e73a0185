extension RetryPolicy {
    /// Runs one attempt of a call, through the policy's ``throttle`` when it has one.
    ///
    /// A policy with a throttle takes the full path even for a first attempt (see
    /// `needsFullPath`), so a policy without one pays nothing here but a `nil` test.
    ///
    /// - Throws: ``AdaptiveThrottleRejection`` without running the attempt when the
    ///   throttle rejects it; otherwise the attempt's error, unchanged.
    func attempt<Value>(
        isolation: isolated (any Actor)?,
        remaining: Duration?,
        _ attempt: (Duration?) async throws -> Value
    ) async throws -> Value {
        guard let throttle = self.throttle else { return try await attempt(remaining) }
        guard throttle.admit() else {
            throw AdaptiveThrottleRejection(rejectionProbability: throttle.rejectionProbability)
        }
        let value: Value
        do {
            value = try await attempt(remaining)
        } catch {
            throttle.record(error)
            throw error
        }
        throttle.recordAccepted()
        return value
    }
}
