extension Timeout: ResilienceStrategy {
    /// Runs `operation` under this time limit, as ``execute(idempotency:operation:)`` does.
    ///
    /// The operation is copied into the timeout's task, isolated to the caller's actor:
    /// the task starts there, at once, and the stages inside it run there too, so from
    /// the main actor no stage leaves it. No closure is made for the operation.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.run(operation, on: #isolation, idempotency: nil, calling: { try await $0.run() })
    }
}

extension ConcurrencyLimiter: ResilienceStrategy {
    /// Runs `operation` in a slot, as ``execute(operation:)`` does.
    ///
    /// Each inline stage calls ``PipelineOperation/run()`` itself rather than
    /// through a closure handed to its `execute(operation:)`: a closure made in a
    /// `nonisolated(nonsending)` function is not isolated to the caller, so calling
    /// it would leave a `@MainActor` caller's actor and come back.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        if !self.tryAcquire() {
            try await self.acquireSlowly()
        }
        defer { self.release() }
        return try await operation.run()
    }
}

extension RateLimiter: ResilienceStrategy {
    /// Runs `operation` with a permit, as ``execute(operation:)`` does.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        if let retryAfter = self.tryAcquire() {
            try await self.acquireSlowly(retryAfter: retryAfter)
        }
        return try await operation.run()
    }
}

extension Hedging: ResilienceStrategy {
    /// Runs `operation`, hedged, as ``execute(idempotency:operation:)`` does.
    ///
    /// The operation is copied into each attempt's task, isolated to the caller's actor:
    /// each attempt starts there, and the stages inside it run there too, so from the
    /// main actor no stage leaves it.
    ///
    /// Without a ``classifier`` of its own, the stage judges a failed attempt with the classifier
    /// of the nearest ``RetryPolicy`` stage inside it (in `operation`), looked up only when an
    /// attempt fails; with none there, with that of the nearest retry stage around it in the
    /// pipeline, settled when the pipeline was built (the pipeline holds a copy of the strategy
    /// that knows it and shares its state); with neither, ``DefaultRetryClassifier`` judges it.
    @inlinable
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        try await self.run(operation, on: #isolation)
    }

    /// Runs the rest of a pipeline, hedged, with every attempt isolated to `isolation`, the
    /// stage's caller's: a closure made in a `nonisolated(nonsending)` function is isolated to
    /// no actor, so its attempts would start on the global executor; one made here, capturing
    /// `isolation`, is isolated to it.
    @inlinable
    func run<Operation: PipelineOperation>(
        _ operation: Operation,
        on isolation: isolated (any Actor)?
    ) async throws -> Operation.Value {
        try await self.hedge(idempotency: nil, inside: operation) {
            _ = isolation  // captured, so each attempt starts on the caller's actor
            return try await operation.run()
        }
    }
}

extension CircuitBreaker: ResilienceStrategy {
    /// Runs `operation` if the breaker allows it, as `execute(operation:)` does.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        // The breaker's own throttle, if it has one, decides first, as in `execute(operation:)`,
        // and its refusal is observed as the breaker's.
        let throttle = self.throttle
        if let throttle, !throttle.admit() { throw self.throttleRejection(by: throttle) }
        let permit = try self.admit()
        let value: Operation.Value
        do {
            value = try await operation.run()
        } catch {
            self.recordFailure(error, for: permit)
            throttle?.record(error)
            throw error
        }
        self.recordSuccess(for: permit)
        throttle?.recordAccepted()
        return value
    }
}

extension RetryPolicy: ResilienceStrategy {
    /// Runs `operation`, retrying as the policy allows, as `execute(operation:)` does.
    ///
    /// The retry loop is inlined here around ``PipelineOperation/run()``, and every
    /// step of it that is not the attempt is an out-of-line call that never takes the
    /// operation. So the operation is only ever called directly, and the compiler
    /// keeps no closure for it: a pipeline's `@isolated(any)` operation costs no heap
    /// allocation on the success path. Inlining must reach the call that makes the
    /// closure, so this stage is always inlined; the loop is left to the inliner,
    /// which takes it (forcing it too made the benchmark's code 2% larger for nothing).
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        var firstFailure: FirstAttemptFailure?
        if self.canTakeFastPath {
            let mark = NestedRetryLedger.mark
            do {
                let value = try await operation.run()
                self.budget?.recordSuccess()
                return value
            } catch {
                firstFailure = FirstAttemptFailure(error, ledgerMark: mark)
            }
        }
        return try await self.drive(
            isolation: #isolation, firstFailure: firstFailure, options: .valueOnly(declaring: nil)
        ) { _ in
            try await operation.run()
        }.get()
    }
}

extension AdaptiveThrottle: ResilienceStrategy {
    /// Runs `operation` if the throttle admits it, as ``execute(operation:)`` does, so a
    /// pipeline can reject locally while its dependency is failing.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        guard self.admit() else {
            throw AdaptiveThrottleRejection(rejectionProbability: self.rejectionProbability)
        }
        let value: Operation.Value
        do {
            value = try await operation.run()
        } catch {
            self.record(error)
            throw error
        }
        self.recordAccepted()
        return value
    }
}

extension Fallback: ResilienceStrategy {
    /// Runs `operation`, and answers for its failure or rejection, as ``execute(operation:)`` does.
    ///
    /// Put it outermost, so that it answers for what every stage inside finally
    /// gives up with. It answers only calls whose value is its own `Value`; a call
    /// of another type through the same pipeline gets its failure unchanged. Like
    /// ``execute(operation:)``, it never answers for the caller's cancellation.
    @inlinable @inline(__always)
    public nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        do {
            return try await operation.run()
        } catch {
            return try await self.recovered(from: error, as: Operation.Value.self)
        }
    }
}
