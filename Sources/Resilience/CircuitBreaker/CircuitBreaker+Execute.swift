extension CircuitBreaker {
    /// Runs `operation` if the breaker allows it, and counts its result.
    ///
    /// The call runs on the caller's executor from start to finish: a
    /// `nonisolated(nonsending)` function, it switches to no other executor, so a
    /// `@MainActor` caller's operation runs on the main actor and may touch its state.
    ///
    /// A task that is already cancelled is admitted like any other, and its
    /// operation runs as a bare `try await operation()` would: the operation decides
    /// what cancellation means to it. ``RetryPolicy`` runs its first attempt the same
    /// way. A failure that ends a cancelled task is not counted against the dependency.
    ///
    /// - Parameter operation: The call to the dependency. It runs in the caller's isolation.
    /// - Returns: The operation's value.
    /// - Throws: ``CircuitBreakerOpenError`` without running the operation when the
    ///   breaker is open, isolated, or half-open with every probe slot taken;
    ///   ``AdaptiveThrottleRejection`` without running it when the breaker's
    ///   ``throttle`` rejects the call locally; otherwise the operation's own error, unchanged.
    @inlinable
    public nonisolated(nonsending) func execute<Value>(
        operation: () async throws -> Value
    ) async throws -> Value {
        if let throttle = self.throttle { return try await self.execute(throttledBy: throttle, operation: operation) }
        let permit = try self.admit()
        let value: Value
        do {
            value = try await operation()
        } catch {
            self.recordFailure(error, for: permit)
            throw error
        }
        self.recordSuccess(for: permit)
        return value
    }

    /// Takes a permit, or throws the rejection; lock-free while closed.
    @usableFromInline
    func admit() throws(CircuitBreakerOpenError) -> CircuitBreakerPermit {
        let word = self.storage.fastPathWord
        if word & CircuitBreakerStateMachine.closedBit != 0 {
            return CircuitBreakerPermit(
                generation: word >> 2, ticket: 0, start: self.readsClockOnAdmission ? self.clock.now() : nil)
        }
        return try self.admitThroughLock()
    }

    private func admitThroughLock() throws(CircuitBreakerOpenError) -> CircuitBreakerPermit {
        // While open with time left, or isolated, the rejection needs no lock: the open time's
        // end is published in an atomic word of its own.
        let mark = self.storage.openUntilMark
        if mark == CircuitBreakerStorage.isolatedMark {
            throw self.rejection(state: .isolated, retryAfter: nil)
        }
        let now = self.clock.now()
        if mark != CircuitBreakerStorage.notOpenMark, now >= .nanoseconds(self.storage.latestSeenMark) {
            let until = Duration.nanoseconds(mark)
            if now < until {
                throw self.rejection(state: .open, retryAfter: until - now)
            }
        }
        let (admission, transition) = self.storage.update { $0.admit(at: now) }
        self.report(transition, error: nil)
        switch admission {
        case .permitted(let permit):
            return permit
        case .rejected(let state, let retryAfter):
            throw self.rejection(state: state, retryAfter: retryAfter)
        }
    }

    /// Tells the observer of a rejection, and makes the error to throw.
    private func rejection(state: CircuitBreakerState, retryAfter: Duration?) -> CircuitBreakerOpenError {
        self.observer?.callRejected(
            CircuitBreakerRejectionEvent(breakerName: self.name, state: state, retryAfter: retryAfter))
        return CircuitBreakerOpenError(breakerName: self.name, state: state, retryAfter: retryAfter)
    }

    /// Counts a success; lock-free while closed with nothing to reset.
    @usableFromInline
    func recordSuccess(for permit: CircuitBreakerPermit) {
        // A probe reads the clock too: its success counts only within its lease.
        let now = self.readsClockOnSuccess || permit.isProbe ? self.clock.now() : nil
        if !permit.isProbe {
            let word = self.storage.fastPathWord
            // A result from an earlier generation is ignored; no need to ask the machine.
            if word >> 2 != permit.generation { return }
            if self.successNeedsNoLock, word & CircuitBreakerStateMachine.pendingFailuresBit == 0 {
                let isSlow =
                    now.map {
                        CircuitBreakerStateMachine.isSlow(permit, at: $0, rule: self.configuration.slowCallRule)
                    } ?? false
                if !isSlow { return }
            } else if self.countsSuccessesInTimeWindow, let now,
                word & CircuitBreakerStateMachine.pendingFailuresBit == 0,
                !CircuitBreakerStateMachine.isSlow(permit, at: now, rule: self.configuration.slowCallRule),
                self.storage.countSuccessWithoutLock(at: now)
            {
                return  // counted in the time window's current bucket, without the lock
            }
        }
        let transition = self.storage.update { $0.record(.success, for: permit, at: now) }
        self.report(transition, error: nil)
    }

    /// Classifies a failure and counts it, or frees a probe slot when it does not count.
    ///
    /// The ``Rulebook`` decides first: a call the caller cancelled never counts, and
    /// an attempt the library's own time limit ended always counts, probes included.
    @usableFromInline
    func recordFailure(_ error: any Error, for permit: CircuitBreakerPermit) {
        let analysis = FailureAnalysis(error)
        let counts: Bool
        switch analysis.interruption {
        case .caller?, .superseded?: counts = false
        case .timeLimit?: counts = true
        default: counts = self.configuration.classifier.countsAsFailure(error)
        }
        guard counts else {
            guard permit.isProbe else { return }  // an ignored closed-state result changes nothing
            self.storage.update { _ = $0.record(.ignored, for: permit, at: nil) }
            return
        }
        let pushback = self.configuration.pushback.openDuration(for: analysis)
        let now = self.clock.now()
        let transition = self.storage.update { $0.record(.failure(pushback: pushback), for: permit, at: now) }
        self.report(transition, error: error)
    }
}
