/// A stage of a ``ResiliencePipeline``: something that runs an operation its own way.
///
/// ``Timeout``, ``ConcurrencyLimiter``, ``RateLimiter``, ``Hedging``,
/// ``CircuitBreaker``, ``RetryPolicy``, ``AdaptiveThrottle`` and ``Fallback``
/// adopt it, so each can be a stage. A stage receives the rest of the pipeline as
/// a value of a generic ``PipelineOperation`` type, never as a closure made for
/// the call: a pipeline of stages that run the operation inline (all but
/// ``Timeout`` and ``Hedging``) is specialized by the compiler into straight-line
/// code, with no existential and no heap allocation per call on its success path.
/// A stage that runs the operation in a task of its own copies the operation
/// into it; operations are `Sendable` for that reason.
///
/// A stage of your own calls ``PipelineOperation/run()`` once per attempt:
///
/// ```swift
/// struct Logged: ResilienceStrategy {
///     nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
///         _ operation: Operation
///     ) async throws -> Operation.Value {
///         print("calling")
///         return try await operation.run()
///     }
/// }
/// ```
///
/// Call a strategy's own `execute(operation:)` when you use it alone; this
/// entry point is what a pipeline calls.
public protocol ResilienceStrategy: Sendable {
    /// Runs `operation` through this stage.
    ///
    /// - Parameter operation: The rest of the pipeline, or the user's operation for the innermost stage.
    /// - Returns: The operation's value.
    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value
}

/// What a pipeline hands each stage: the stages inside it and, innermost, the user's operation.
///
/// A value of a concrete generic type rather than a closure, so passing it down
/// allocates nothing and the compiler sees the whole composition. ``run()`` is
/// `nonisolated(nonsending)`: the stages run on their caller's executor, and the
/// user's operation, innermost, runs in the isolation it was written in (a closure
/// written on the main actor runs on the main actor).
public protocol PipelineOperation<Value>: Sendable {
    /// What the operation returns.
    associatedtype Value: Sendable

    /// Runs the operation once: the next stage, or the user's call for the innermost one.
    nonisolated(nonsending) func run() async throws -> Value
}

/// The user's operation at the centre of a pipeline: a closure that runs in the isolation it was written in.
public struct IsolatedOperation<Value: Sendable>: PipelineOperation {
    /// The closure, isolated to the actor it was written on, if any.
    public let body: @Sendable @isolated(any) () async throws -> Value

    /// Wraps `body`.
    @inlinable
    public init(_ body: @escaping @Sendable @isolated(any) () async throws -> Value) {
        self.body = body
    }

    /// Calls the closure in its own isolation; no hop when the caller is already there.
    @inlinable
    public nonisolated(nonsending) func run() async throws -> Value {
        try await self.body()
    }
}

/// One stage with the rest of the pipeline inside it, as one operation for the stage outside.
public struct StagedOperation<Stage: ResilienceStrategy, Rest: PipelineOperation>: PipelineOperation {
    /// The stage that runs `rest`.
    public let stage: Stage
    /// What the stage runs.
    public let rest: Rest

    /// Puts `rest` inside `stage`.
    @inlinable
    public init(stage: Stage, rest: Rest) {
        self.stage = stage
        self.rest = rest
    }

    /// Runs ``rest`` through ``stage``.
    @inlinable
    public nonisolated(nonsending) func run() async throws -> Rest.Value {
        try await self.stage.executeInPipeline(self.rest)
    }
}

/// Two stages, one inside the other: what a pipeline's builder makes of consecutive stages.
public struct NestedStrategies<Outer: ResilienceStrategy, Inner: ResilienceStrategy>: ResilienceStrategy {
    /// The stage that runs first and sees the result last.
    public let outer: Outer
    /// The stage that runs inside ``outer``.
    public let inner: Inner

    /// Nests `inner` inside `outer`.
    @inlinable
    public init(outer: Outer, inner: Inner) {
        self.outer = outer
        self.inner = inner
    }

    /// Runs `operation` through ``inner``, inside ``outer``; the pair is a plain value, not a closure.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.outer.executeInPipeline(StagedOperation(stage: self.inner, rest: operation))
    }
}

/// Composes a pipeline's stages, outermost first.
@resultBuilder
public enum ResiliencePipelineBuilder {
    /// The first (outermost) stage.
    @inlinable
    public static func buildPartialBlock<First: ResilienceStrategy>(first: First) -> First {
        first
    }

    /// The stages so far, with `next` nested inside them.
    @inlinable
    public static func buildPartialBlock<Outer: ResilienceStrategy, Inner: ResilienceStrategy>(
        accumulated: Outer,
        next: Inner
    ) -> NestedStrategies<Outer, Inner> {
        NestedStrategies(outer: accumulated, inner: next)
    }
}
