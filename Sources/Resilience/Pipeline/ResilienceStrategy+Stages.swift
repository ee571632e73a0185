extension Timeout: ResilienceStrategy {
    /// Runs `operation` under this time limit, as ``execute(idempotency:operation:)`` does.
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute(operation: operation)
    }
}

extension ConcurrencyLimiter: ResilienceStrategy {
    /// Runs `operation` in a slot, as ``execute(operation:)`` does.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute { try await operation() }
    }
}

extension RateLimiter: ResilienceStrategy {
    /// Runs `operation` with a permit, as ``execute(operation:)`` does.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute { try await operation() }
    }
}

extension Hedging: ResilienceStrategy {
    /// Runs `operation`, hedged, as ``execute(idempotency:operation:)`` does.
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute(operation: operation)
    }
}

extension CircuitBreaker: ResilienceStrategy {
    /// Runs `operation` if the breaker allows it, as `execute(operation:)` does.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute { try await operation() }
    }
}

extension RetryPolicy: ResilienceStrategy {
    /// Runs `operation`, retrying as the policy allows, as `execute(operation:)` does.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute { try await operation() }
    }
}

extension AdaptiveThrottle: ResilienceStrategy {
    /// Runs `operation` if the throttle admits it, as ``execute(operation:)`` does, so a
    /// pipeline can reject locally while its dependency is failing.
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.execute { try await operation() }
    }
}
