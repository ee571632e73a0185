/// Strategies composed in one declared order, outermost first, built once and shared.
///
/// The order is the one written: the first stage sees the call first and its
/// result last. The pipeline is generic over its stages, and each stage hands the
/// next a plain value (a ``StagedOperation``), not a closure made for the call, so
/// the compiler sees the whole composition and specializes it: no stage is boxed
/// in an existential, and stages that run the operation inline allocate nothing
/// on the success path.
///
/// ```swift
/// let pipeline = try ResiliencePipeline {
///     try Timeout(.seconds(30), name: "total")
///     try RetryPolicy(maximumAttempts: 3)
///     CircuitBreaker(name: "billing")
///     try Timeout(.seconds(10), name: "attempt")
/// }
/// let invoice = try await pipeline.execute { try await billing.invoice(id) }
/// ```
///
/// See <doc:OrderingStrategies> for why the order matters.
public struct ResiliencePipeline<Strategies: ResilienceStrategy>: Sendable {
    /// The composed stages.
    public let strategies: Strategies

    /// Builds a pipeline from its stages, outermost first.
    ///
    /// - Throws: The first error a stage's initializer throws, such as a ``ConfigurationError``.
    public init(@ResiliencePipelineBuilder _ build: () throws -> Strategies) rethrows {
        self.strategies = try build()
    }

    /// Wraps already composed stages.
    public init(strategies: Strategies) {
        self.strategies = strategies
    }

    /// Runs `operation` through every stage.
    ///
    /// A closure written on an actor, such as the main actor, runs there, without
    /// a hop when every stage runs it inline; it is `@Sendable` because stages such
    /// as ``Timeout`` and ``Hedging`` run it in a task of their own.
    ///
    /// - Parameter operation: The call to protect.
    /// - Returns: The operation's value.
    /// - Throws: Whatever the outermost stage ends the call with.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func execute<Value: Sendable>(
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        try await self.strategies.executeInPipeline(IsolatedOperation(operation))
    }
}

extension ResiliencePipeline {
    /// Runs `operation` through every stage, declaring whether it may run twice.
    ///
    /// Every stage sees the declaration: a retry policy does not repeat a call that
    /// is not idempotent once it may have reached the server, and hedging does
    /// not start a second copy of it (see ``Idempotency``). So do the policies
    /// around the pipeline: a call declared not idempotent that fails in a way that
    /// does not prove its request never left tells them, as a policy that stops on
    /// it does (see ``NestedRetries``).
    ///
    /// - Parameters:
    ///   - idempotency: Whether the operation may run twice with the same effect as once.
    ///   - operation: The call to protect.
    /// - Returns: The operation's value.
    /// - Throws: Whatever the outermost stage ends the call with.
    public nonisolated(nonsending) func execute<Value: Sendable>(
        idempotency: Idempotency,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Value
    ) async throws -> Value {
        var scope = CallScope.current
        scope.declare(idempotency)
        // The policy stages inside, plain ones included, hear under this call's number of a call
        // nested in their attempt that may not run twice and succeeded (see
        // `NestedRetryLedger.noteSuccess(at:in:)`): declared not idempotent too, since the rules let
        // them retry a failure that proves the last step's request never left, though a `POST`
        // before it reached the server. The number's entry ends with the call, whatever its
        // outcome, and what it heard passes on to the call around it.
        let enclosingSucceededCall = scope.hearSucceededCalls()
        defer { NestedRetryLedger.endSuccesses(of: scope.succeededCall, passingTo: enclosingSucceededCall) }
        do {
            let value = try await CallScope.$current.withValue(scope) {
                try await self.strategies.executeInPipeline(IsolatedOperation(operation))
            }
            scope.noteSucceeded()  // a call that may not run twice reached the dependency
            return value
        } catch {
            // A policy around the pipeline runs outside the declaration: it hears of it here, and
            // of a call inside that may not run twice and succeeded before the pipeline failed.
            NestedRetryLedger.recordFailure(error, ofCallDeclaring: idempotency)
            NestedRetryLedger.recordFailure(error, ofCallHearing: scope.succeededCall)
            throw error
        }
    }
}

extension ResiliencePipeline: ResilienceStrategy {
    /// Runs `operation` through every stage, so that a pipeline can be a stage of another.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.strategies.executeInPipeline(operation)
    }
}
