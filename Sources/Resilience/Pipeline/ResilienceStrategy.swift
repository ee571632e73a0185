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
    @inlinable @inline(__always)
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
    ///
    /// Always inlined, as ``NestedStrategies/executeInPipeline(_:)`` is: a stage that
    /// inlines its operation spares the closure only if inlining reaches the caller.
    @inlinable @inline(__always)
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
    ///
    /// A ``Hedging`` stage in either, with no classifier of its own, is copied here to know the
    /// classifier of the nearest ``RetryPolicy`` stage around it in `outer`, as the pipeline is
    /// built (see `HedgingStagesResolving`); a pipeline in either is copied to pass it on. The
    /// copy shares the hedging strategy's state: the two are one strategy.
    @inlinable
    public init(outer: Outer, inner: Inner) {
        self.init(outer: outer, inner: inner, retryClassifierAround: nil)
    }

    /// Nests `inner` inside `outer`, in a place where `around` is the classifier of the nearest
    /// ``RetryPolicy`` stage around the pair (`nil` for none), handing each stage the classifier
    /// around it: for `inner`, the innermost retry stage's in `outer`, else `around`.
    @usableFromInline
    init(outer: Outer, inner: Inner, retryClassifierAround around: (any RetryClassifier)?) {
        let aroundInner = RetryStages.innermostClassifier(in: outer) ?? around
        self.outer = RetryStages.resolving(outer, around: around)
        self.inner = RetryStages.resolving(inner, around: aroundInner)
    }

    /// Runs `operation` through ``inner``, inside ``outer``; the pair is a plain value, not a closure.
    ///
    /// Always inlined: forwarding only, it must not be where inlining stops, or the
    /// caller's closure could no longer be dropped (see ``RetryPolicy``'s stage).
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.outer.executeInPipeline(StagedOperation(stage: self.inner, rest: operation))
    }
}

/// Composes a pipeline's stages, outermost first, up to ten.
///
/// The stages nest to the right, `NestedStrategies<First, NestedStrategies<Second, ...>>`,
/// so that as the call goes in, each ``NestedStrategies`` hands a smaller
/// composition the same operation type. (Nested to the left, each level would
/// hand the level above it a larger operation type, and the compiler stops
/// specializing a function that calls itself with ever larger types: the
/// pipeline would then run as unspecialized generic code.)
@resultBuilder
public enum ResiliencePipelineBuilder {
    /// One stage.
    @inlinable
    public static func buildBlock<S0: ResilienceStrategy>(_ s0: S0) -> S0 {
        s0
    }

    /// 2 stages, the first outermost.
    @inlinable
    public static func buildBlock<S0: ResilienceStrategy, S1: ResilienceStrategy>(_ s0: S0, _ s1: S1)
        -> NestedStrategies<S0, S1>
    {
        NestedStrategies(outer: s0, inner: s1)
    }

    /// 3 stages, the first outermost.
    @inlinable
    public static func buildBlock<S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy>(
        _ s0: S0, _ s1: S1, _ s2: S2
    ) -> NestedStrategies<S0, NestedStrategies<S1, S2>> {
        NestedStrategies(outer: s0, inner: NestedStrategies(outer: s1, inner: s2))
    }

    /// 4 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3) -> NestedStrategies<S0, NestedStrategies<S1, NestedStrategies<S2, S3>>> {
        NestedStrategies(outer: s0, inner: NestedStrategies(outer: s1, inner: NestedStrategies(outer: s2, inner: s3)))
    }

    /// 5 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy,
        S4: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3, _ s4: S4) -> NestedStrategies<
        S0, NestedStrategies<S1, NestedStrategies<S2, NestedStrategies<S3, S4>>>
    > {
        NestedStrategies(
            outer: s0,
            inner: NestedStrategies(
                outer: s1, inner: NestedStrategies(outer: s2, inner: NestedStrategies(outer: s3, inner: s4))))
    }

    /// 6 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy,
        S4: ResilienceStrategy, S5: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3, _ s4: S4, _ s5: S5) -> NestedStrategies<
        S0, NestedStrategies<S1, NestedStrategies<S2, NestedStrategies<S3, NestedStrategies<S4, S5>>>>
    > {
        NestedStrategies(
            outer: s0,
            inner: NestedStrategies(
                outer: s1,
                inner: NestedStrategies(
                    outer: s2, inner: NestedStrategies(outer: s3, inner: NestedStrategies(outer: s4, inner: s5)))))
    }

    /// 7 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy,
        S4: ResilienceStrategy, S5: ResilienceStrategy, S6: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3, _ s4: S4, _ s5: S5, _ s6: S6) -> NestedStrategies<
        S0,
        NestedStrategies<S1, NestedStrategies<S2, NestedStrategies<S3, NestedStrategies<S4, NestedStrategies<S5, S6>>>>>
    > {
        NestedStrategies(
            outer: s0,
            inner: NestedStrategies(
                outer: s1,
                inner: NestedStrategies(
                    outer: s2,
                    inner: NestedStrategies(
                        outer: s3, inner: NestedStrategies(outer: s4, inner: NestedStrategies(outer: s5, inner: s6))))))
    }

    /// 8 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy,
        S4: ResilienceStrategy, S5: ResilienceStrategy, S6: ResilienceStrategy, S7: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3, _ s4: S4, _ s5: S5, _ s6: S6, _ s7: S7) -> NestedStrategies<
        S0,
        NestedStrategies<
            S1,
            NestedStrategies<
                S2, NestedStrategies<S3, NestedStrategies<S4, NestedStrategies<S5, NestedStrategies<S6, S7>>>>
            >
        >
    > {
        NestedStrategies(
            outer: s0,
            inner: NestedStrategies(
                outer: s1,
                inner: NestedStrategies(
                    outer: s2,
                    inner: NestedStrategies(
                        outer: s3,
                        inner: NestedStrategies(
                            outer: s4, inner: NestedStrategies(outer: s5, inner: NestedStrategies(outer: s6, inner: s7))
                        )))))
    }

    /// 9 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy,
        S4: ResilienceStrategy, S5: ResilienceStrategy, S6: ResilienceStrategy, S7: ResilienceStrategy,
        S8: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3, _ s4: S4, _ s5: S5, _ s6: S6, _ s7: S7, _ s8: S8) -> NestedStrategies<
        S0,
        NestedStrategies<
            S1,
            NestedStrategies<
                S2,
                NestedStrategies<
                    S3, NestedStrategies<S4, NestedStrategies<S5, NestedStrategies<S6, NestedStrategies<S7, S8>>>>
                >
            >
        >
    > {
        NestedStrategies(
            outer: s0,
            inner: NestedStrategies(
                outer: s1,
                inner: NestedStrategies(
                    outer: s2,
                    inner: NestedStrategies(
                        outer: s3,
                        inner: NestedStrategies(
                            outer: s4,
                            inner: NestedStrategies(
                                outer: s5,
                                inner: NestedStrategies(outer: s6, inner: NestedStrategies(outer: s7, inner: s8))))))))
    }

    /// 10 stages, the first outermost.
    @inlinable
    public static func buildBlock<
        S0: ResilienceStrategy, S1: ResilienceStrategy, S2: ResilienceStrategy, S3: ResilienceStrategy,
        S4: ResilienceStrategy, S5: ResilienceStrategy, S6: ResilienceStrategy, S7: ResilienceStrategy,
        S8: ResilienceStrategy, S9: ResilienceStrategy
    >(_ s0: S0, _ s1: S1, _ s2: S2, _ s3: S3, _ s4: S4, _ s5: S5, _ s6: S6, _ s7: S7, _ s8: S8, _ s9: S9)
        -> NestedStrategies<
            S0,
            NestedStrategies<
                S1,
                NestedStrategies<
                    S2,
                    NestedStrategies<
                        S3,
                        NestedStrategies<
                            S4,
                            NestedStrategies<S5, NestedStrategies<S6, NestedStrategies<S7, NestedStrategies<S8, S9>>>>
                        >
                    >
                >
            >
        >
    {
        NestedStrategies(
            outer: s0,
            inner: NestedStrategies(
                outer: s1,
                inner: NestedStrategies(
                    outer: s2,
                    inner: NestedStrategies(
                        outer: s3,
                        inner: NestedStrategies(
                            outer: s4,
                            inner: NestedStrategies(
                                outer: s5,
                                inner: NestedStrategies(
                                    outer: s6,
                                    inner: NestedStrategies(outer: s7, inner: NestedStrategies(outer: s8, inner: s9)))))
                    ))))
    }
}
