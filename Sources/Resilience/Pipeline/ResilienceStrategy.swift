/// A stage of a ``ResiliencePipeline``: something that runs an operation its own way.
///
/// ``Timeout``, ``ConcurrencyLimiter``, ``RateLimiter``, ``Hedging``,
/// ``CircuitBreaker`` and ``RetryPolicy`` adopt it, so each can be a stage. A
/// stage's operation is `@Sendable` and escaping because some stages
/// (``Timeout``, ``Hedging``) run it in a task of their own; the stages that run
/// it inline call it in the caller's isolation.
///
/// Call a strategy's own `execute(operation:)` when you use it alone; this
/// entry point is what a pipeline calls.
public protocol ResilienceStrategy: Sendable {
    /// Runs `operation` through this stage.
    ///
    /// - Parameter operation: The rest of the pipeline, or the user's operation for the innermost stage.
    /// - Returns: The operation's value.
    nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value
}

/// Two stages, one inside the other: what a pipeline's builder makes of consecutive stages.
public struct NestedStrategies<Outer: ResilienceStrategy, Inner: ResilienceStrategy>: ResilienceStrategy {
    /// The stage that runs first and sees the result last.
    public let outer: Outer
    /// The stage that runs inside ``outer``.
    public let inner: Inner

    /// Nests `inner` inside `outer`.
    public init(outer: Outer, inner: Inner) {
        self.outer = outer
        self.inner = inner
    }

    /// Runs `operation` through ``inner``, inside ``outer``.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Value: Sendable>(
        _ operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        let inner = self.inner
        return try await self.outer.executeInPipeline { try await inner.executeInPipeline(operation) }
    }
}

/// Composes a pipeline's stages, outermost first.
@resultBuilder
public enum ResiliencePipelineBuilder {
    /// The first (outermost) stage.
    public static func buildPartialBlock<First: ResilienceStrategy>(first: First) -> First {
        first
    }

    /// The stages so far, with `next` nested inside them.
    public static func buildPartialBlock<Outer: ResilienceStrategy, Inner: ResilienceStrategy>(
        accumulated: Outer,
        next: Inner
    ) -> NestedStrategies<Outer, Inner> {
        NestedStrategies(outer: accumulated, inner: next)
    }
}
