extension RetryPolicy {
    /// The scope `call` hands down to the calls nested in it, or `nil` when it has nothing
    /// to hand down that the enclosing scope does not already say.
    ///
    /// The enclosing scope is read once, and only by a call with something to hand down. A
    /// call that hands a scope down numbers itself in it, for the word of the policies nested
    /// in it (see `NestedRetryLedger.Address`).
    @usableFromInline
    nonisolated func scopeToHandDown(_ options: CallOptions, call: inout Call) -> CallScope? {
        guard self.handsDownScope || options.idempotency != nil else { return nil }
        let start = call.start
        var scope = CallScope.current
        var changed = false
        // The call's reading of its idempotency, as its failures are judged (see
        // `Rulebook.idempotency(of:declared:classifier:)`): the caller's declaration, else the nearest
        // enclosing call's, else the classifier's word (over an enclosing classifier's). Its success
        // tells the calls around it by the same reading, so the classifier's word never outranks a
        // declaration there either.
        let classifier = options.classifier ?? self.classifier
        let reading = options.idempotency ?? scope.handedDownIdempotency(over: classifier.declaredIdempotency)
        call.state.succeedsAsNotIdempotent = reading?.isIdempotent == false
        if let declared = options.idempotency {
            scope.declare(declared)
            changed = true
        } else if let classifiers = self.classifierDeclarationToHandDown,
            scope.idempotency == nil || scope.idempotencyIsAClassifiers
        {
            // The classifier's "not idempotent" is handed down, and marks the time limits and hedges
            // around the call, as a declaration would, where no call around it declared anything: over
            // an enclosing classifier's word, which a nested classifier outranks, but never over a
            // declaration, which the call is judged by. A classifier's "idempotent" is never handed
            // down, so it cannot override a nested policy's own classifier that knows its request is a `POST`.
            scope.declare(classifiers, byClassifier: true)
            changed = true
        }
        if let deadline = self.deadline,
            InheritedDeadline.bound(&scope, limit: deadline, end: start + deadline, policy: self)
        {
            changed = true
        }
        guard changed else { return nil }
        call.state.enclosingRetryCall = scope.retryCall
        scope.retryCall = NestedRetryLedger.newCall()
        call.state.retryCall = scope.retryCall
        // The calls nested in this one that may not run twice note under its number that they
        // succeeded, so that it does not run its attempt again after such a success, whatever the
        // failure says. Also when this call may not run twice itself: the rules let it retry a
        // failure that proves its request never left (an open breaker, a host it could not reach),
        // which speaks for the last step of the attempt alone, not for a request that left before it.
        call.state.enclosingSucceededCall = scope.succeededCall
        scope.succeededCall = scope.retryCall
        return scope
    }

    /// Tells the calls around this one that it succeeded, when its reading of its idempotency says
    /// it may not run twice (`CallState.succeedsAsNotIdempotent`): through `scope`, the scope it
    /// handed down; without one, through the scope around the call. For a call that succeeded, as
    /// it returns its value (see `CallScope.noteSucceeded(asNotIdempotent:)`).
    @usableFromInline
    nonisolated func noteSucceeded(_ call: Call, handingDown scope: CallScope?) {
        guard call.state.succeedsAsNotIdempotent else { return }
        // Through the scope this call handed down, or, with none of its own, the one around it.
        (scope ?? CallScope.current).noteSucceeded(asNotIdempotent: true)
    }

    /// Ends what this call heard of the calls nested in it that may not run twice and succeeded,
    /// passing it on to the call around it (see `NestedRetryLedger.endSuccesses(of:passingTo:)`);
    /// for a call that handed a scope down, as it ends, on every path.
    @usableFromInline
    nonisolated func endSucceededCalls(_ call: inout Call) {
        guard call.state.retryCall != 0 else { return }
        NestedRetryLedger.endSuccesses(of: call.state.retryCall, passingTo: call.state.enclosingSucceededCall)
    }

    /// The time left before this call's deadline or an enclosing call's, whichever is sooner; `nil` for none.
    nonisolated func timeLeft(start: Duration) -> Duration? {
        let own = self.deadline.map { $0 - (self.clock.now() - start) }
        return InheritedDeadline.remaining(within: own)
    }

    /// The stop a failure calls for because of the layers nested in this call, or `nil`.
    ///
    /// A local rejection by an ``AdaptiveThrottle`` is never retried, wherever it sits in the
    /// error's chain (``FailureAnalysis/isThrottleRejection``); a failure an inner
    /// policy retried to exhaustion is not retried again here, unless this policy opted out;
    /// a failure an inner policy stopped on because its request is not idempotent is never
    /// sent again from here, whatever this call was told about its operation.
    ///
    /// An inner policy's word about the error an attempt failed with after a library time
    /// limit fired (`LateOperationError`) counts when it says "not idempotent": the limit's
    /// error stands for that failure. Its "retried to exhaustion" does not: the attempt ran
    /// out of time, which this policy judges as a time-out.
    nonisolated func nestedStop(
        after error: any Error, analysis: FailureAnalysis, call: CallState
    ) -> RetryStopReason? {
        if analysis.isThrottleRejection { return .throttled }
        let taker = NestedRetryLedger.Taker(
            call: CallScope.current.retryCall, task: NestedRetryLedger.currentTask, ownsCall: call.retryCall != 0)
        guard let word = NestedRetryLedger.take(error, by: taker, writtenAfter: call.ledgerMark) else {
            guard let late = LateOperationError.of(error),
                NestedRetryLedger.take(late, by: taker, writtenAfter: call.ledgerMark) == .notIdempotent
            else { return nil }
            return .notIdempotent
        }
        switch word {
        case .notIdempotent: return .notIdempotent
        case .tooManyRequests: return .tooManyRequests
        case .exhausted: return self.nestedRetries.retriesExhaustedFailures ? nil : .retriedByInnerPolicy
        }
    }

    /// ``RetryStopReason/notIdempotent`` when a call nested in this call's last attempt that may
    /// not run twice (declared so through `execute(idempotency:)`, a ``Timeout``, ``Hedging`` or a
    /// ``ResiliencePipeline``) succeeded before the attempt failed; `nil` otherwise.
    ///
    /// Its request reached the dependency, so the attempt is not run again, whatever its failure
    /// says and whatever this call was told about its operation, as when that call itself fails
    /// (``nestedStop(after:analysis:call:)``). Known through the innermost scope enclosing this
    /// policy: this call's own, when it hands one down, else a time limit, a hedged attempt or an
    /// enclosing call's (`CallScope.notIdempotentCallSucceeded(after:)`); a plain call with none
    /// around it is told nothing, a limit around the nested call excepted, which leaves word with
    /// the error (`NestedRetryLedger.recordFailure(_:ofAttemptUnder:)`). Failure path only.
    nonisolated func stopAfterSucceededCall(_ call: CallState) -> RetryStopReason? {
        CallScope.current.notIdempotentCallSucceeded(after: call.ledgerMark) ? .notIdempotent : nil
    }

    /// Leaves word for an enclosing policy when this call retried `error` to exhaustion, and
    /// returns the error the call ends with.
    ///
    /// That is `error` itself, except for a ``CircuitBreakerOpenError``: a thread throws one
    /// box again for equal rejections (see `CircuitBreakerRejectionCache`), so other calls
    /// may hold that very box for failures no policy retried. The word is left about a box
    /// of this call's own, holding an equal error, and the call ends with that box, so an
    /// enclosing policy recognizes it and no other call does.
    nonisolated func noteStop(_ reason: RetryStopReason, error: any Error, call: CallState) -> any Error {
        let word: NestedRetryLedger.Word
        switch reason {
        case .exhausted where call.attempts > 1, .retriedByInnerPolicy: word = .exhausted
        case .notIdempotent: word = .notIdempotent
        // A 429 the error does not show (a fallback's answer stands for it): passed on.
        case .tooManyRequests where !FailureAnalysis(error).isTooManyRequests: word = .tooManyRequests
        // Stopped by the idempotency rule, reported as the classifier's sign-in: still never sent again.
        case _ where call.stoppedAsNotIdempotent: word = .notIdempotent
        default: return error
        }
        var ending = error
        if let rejection = error as? CircuitBreakerOpenError {
            ending = Self.boxedAnew(rejection)
            // Box identity is not a language guarantee; should a compiler ever hand back the
            // shared box, leave no word rather than word other calls would find.
            guard !NestedRetryLedger.isSameBox(ending, error) else { return error }
        }
        // The word is for the nearest enclosing call: not this call's own number, if it has one.
        let enclosing = call.retryCall != 0 ? call.enclosingRetryCall : CallScope.current.retryCall
        NestedRetryLedger.record(word, for: ending, to: .here(in: enclosing))
        return ending
    }

    /// `rejection` rebuilt, in a heap box of its own.
    @inline(never)
    private nonisolated static func boxedAnew(_ rejection: CircuitBreakerOpenError) -> any Error {
        CircuitBreakerOpenError(
            breakerName: rejection.breakerName, state: rejection.state, retryAfter: rejection.retryAfter)
    }
}
