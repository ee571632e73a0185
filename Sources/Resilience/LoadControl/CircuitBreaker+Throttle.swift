extension CircuitBreaker {
    /// Runs `operation` as ``execute(operation:)`` does, asking `throttle` first.
    ///
    /// The throttle decides before the breaker, so a call it rejects takes no permit
    /// and leaves the breaker's counts alone; a call the breaker rejects after the
    /// throttle admitted it is not counted by the throttle (``AdaptiveThrottle/admit()``
    /// counts nothing, and ``AdaptiveThrottle/record(_:)`` ignores a breaker's rejection).
    /// The breaker's observer hears of a call the throttle rejects, as of any rejected call
    /// (``CircuitBreakerRejectionEvent/throttleRejection``).
    ///
    /// The breaker's part is ``executeWithoutThrottle(operation:)``, the body of the
    /// unthrottled ``execute(operation:)`` too, inlined into both.
    @usableFromInline
    nonisolated(nonsending) func execute<Value>(
        throttledBy throttle: AdaptiveThrottle,
        operation: () async throws -> Value
    ) async throws -> Value {
        guard throttle.admit() else { throw self.throttleRejection(by: throttle) }
        let value: Value
        do {
            value = try await self.executeWithoutThrottle(operation: operation)
        } catch {
            // The breaker's own rejection lands here too; `record(_:)` ignores it.
            throttle.record(error)
            throw error
        }
        throttle.recordAccepted()
        return value
    }
}
