extension CircuitBreaker {
    /// Runs `operation` if the breaker allows it, and counts its result.
    ///
    /// The call runs on the caller's executor from start to finish: a
    /// `nonisolated(nonsending)` function, it switches to no other executor, so a
    /// `@MainActor` caller's operation runs on the main actor and may touch its state.
    /// (A closure written inside a `nonisolated(nonsending)` function is an ordinary
    /// nonisolated closure here, and runs on the global concurrent executor.)
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
        return try await self.executeWithoutThrottle(operation: operation)
    }

    /// The breaker's own part of a call: takes a permit (or throws the rejection), runs
    /// `operation`, and counts its result.
    ///
    /// Always inlined, into ``execute(operation:)`` and into the throttled path, which wraps
    /// it in the throttle's admission and counting: one body for both, and the unthrottled
    /// call's code is what it would be written out in place.
    @inlinable @inline(__always)
    nonisolated(nonsending) func executeWithoutThrottle<Value>(
        operation: () async throws -> Value
    ) async throws -> Value {
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

    /// Takes a permit, or throws the rejection (a ``CircuitBreakerOpenError``); inlined, and
    /// lock-free while closed.
    @inlinable @inline(__always)
    func admit() throws -> CircuitBreakerPermit {
        let word = self.storage.fastPathWord
        if word & CircuitBreakerStorage.closedBit != 0, !self.readsClockOnAdmission {
            return CircuitBreakerPermit(generation: word >> 2, ticket: 0, start: nil)
        }
        return try self.admitSlowly(word)
    }

    /// Takes a permit when the inlined check could not: a slow-call rule's start time, or a
    /// breaker that is not closed.
    ///
    /// It throws untyped, as its callers do: the rejection leaves as `any Error`, a box that
    /// ``CircuitBreakerRejectionCache`` lets a thread throw again while the error stays the
    /// same, where a typed throw would be boxed anew by each caller.
    ///
    /// Only the rejection while open on the system's clock is handled here; every other case
    /// (a closed breaker, an isolated one, another clock, the lock) is out of line in
    /// ``admitWithoutCoarseBounds(_:)``, so that this path keeps a small frame.
    @usableFromInline
    func admitSlowly(_ word: UInt64) throws -> CircuitBreakerPermit {
        // While open with time left, the rejection needs no lock: the open time's end is
        // published in an atomic word of its own, in whole nanoseconds, and compared with the
        // clock's reading in whole nanoseconds.
        if word & CircuitBreakerStorage.closedBit == 0 {
            let mark = self.storage.openUntilMark
            if mark != CircuitBreakerStorage.notOpenMark, mark != CircuitBreakerStorage.isolatedMark,
                let bounds = self.clock.coarseBoundsNanoseconds()
            {
                // The system clock: coarse bounds instead of a precise reading. A bound that is
                // never early and still short of the mark proves the open time has not passed;
                // the wait is measured from one that is never late, and rounded up to whole
                // milliseconds (`mark` rounds the open time's end down by under a nanosecond), so
                // it is never shorter than the time left, and stays the same value for a tick
                // (the thread's cached box is thrown again). This clock never goes back, so the
                // machine's latest time is no later than now and needs no check here.
                let (left, overflow) = mark.subtractingReportingOverflow(bounds.lower)
                if bounds.upper < mark, !overflow {
                    throw self.rejection(
                        state: CircuitBreakerState(.open), retryAfter: Self.duration(milliseconds: left / 1_000_000 + 1)
                    )
                }
            }
        }
        return try self.admitWithoutCoarseBounds(word)
    }

    /// Takes a permit, or throws the rejection, where ``admitSlowly(_:)`` could not settle the
    /// call with the system clock's coarse bounds.
    @inline(never)
    private func admitWithoutCoarseBounds(_ word: UInt64) throws -> CircuitBreakerPermit {
        if word & CircuitBreakerStorage.closedBit != 0 {
            // A slow-call rule's start, with the re-base count that places it on the breaker's
            // time line. One behind the breaker's latest time (a late reading, or a jump not yet
            // proved) takes the lock, where the machine starts the call at its latest time. So
            // does one read while another caller re-based: a reading after the jump, not behind
            // the new latest time, would otherwise keep the count from before the jump, and the
            // call would be charged the jump.
            let start = self.storage.read(self.clock)
            if start.elapsed >= Self.duration(nanoseconds: self.storage.latestSeenMark),
                self.storage.rebaseCount == start.rebases
            {
                return CircuitBreakerPermit(
                    generation: word >> 2, ticket: 0, start: start.elapsed, rebases: start.rebases)
            }
        }
        let mark = self.storage.openUntilMark
        if mark == CircuitBreakerStorage.isolatedMark {
            throw self.rejection(state: CircuitBreakerState(.isolated), retryAfter: nil)
        }
        // Another clock is read precisely, still without the lock while the open time lasts.
        // (The system clock's bounds fell short already: it takes the lock.)
        if mark != CircuitBreakerStorage.notOpenMark, !self.clock.hasCoarseBounds,
            let now = self.clock.nanoseconds(), now >= self.storage.latestSeenMark, now < mark
        {
            throw self.rejection(state: CircuitBreakerState(.open), retryAfter: Self.duration(nanoseconds: mark &- now))
        }
        let first = self.storage.update(at: self.storage.read(self.clock)) { $0.admit(at: $1) }
        var (admission, transition) = first.result
        self.report(transition, error: nil)
        if case .rejected = admission, let observed = first.behind {
            // Behind the breaker's latest time: a late reading, or a clock that went back. A
            // reading taken now, after that time was seen, tells them apart; one still behind
            // proves the jump, which the machine then counts as no time elapsed.
            (admission, transition) =
                self.storage.update(at: self.storage.read(self.clock), rebasingFrom: observed) {
                    $0.admit(at: $1)
                }.result
            self.report(transition, error: nil)
        }
        switch admission {
        case .permitted(let permit):
            return permit
        case .rejected(let state, let retryAfter):
            throw self.rejection(state: state, retryAfter: retryAfter)
        }
    }

    /// Tells the observer of a rejection, and makes the error to throw: this thread's cached box
    /// when it holds the same error.
    ///
    /// Inlined, so that a rejection thrown again from the cache makes no call of its own but the
    /// thread-specific look-up; the observer is told out of line.
    @inline(__always)
    private func rejection(state: CircuitBreakerState, retryAfter: Duration?) -> any Error {
        if self.hasObserver { self.tellObserverOfRejection(state: state, retryAfter: retryAfter) }
        return CircuitBreakerRejectionCache.boxed(
            in: self.rejectionSlot, breakerName: self.name, state: state, retryAfter: retryAfter)
    }

    /// The refusal of a call by the breaker's own `throttle`, which decided before the breaker;
    /// tells the observer, if there is one, as of any rejected call.
    ///
    /// Out of line: the throttled path's refusal only. The observer hears the state the breaker
    /// is in (read as ``state`` reads it, outside the lock), after the breaker's lock is released.
    @usableFromInline @inline(never)
    func throttleRejection(by throttle: AdaptiveThrottle) -> AdaptiveThrottleRejection {
        let rejection = AdaptiveThrottleRejection(rejectionProbability: throttle.rejectionProbability)
        if let observer = self.observer {
            observer.callRejected(
                CircuitBreakerRejectionEvent(
                    breakerName: self.name, state: self.state, retryAfter: nil, throttleRejection: rejection))
        }
        return rejection
    }

    /// Tells the observer, if there is one, of a rejection.
    @inline(never)
    private func tellObserverOfRejection(state: CircuitBreakerState, retryAfter: Duration?) {
        guard let observer = self.observer else { return }
        observer.callRejected(
            CircuitBreakerRejectionEvent(breakerName: self.name, state: state, retryAfter: retryAfter))
    }

    /// Counts a success; inlined, and free (one atomic load) while closed under the consecutive
    /// rule with nothing to reset.
    @inlinable @inline(__always)
    func recordSuccess(for permit: CircuitBreakerPermit) {
        if self.successIsFree, !permit.isProbe {
            let word = self.storage.fastPathWord
            // A result from an earlier generation is ignored; no need to ask the machine.
            if word >> 2 != permit.generation || word & CircuitBreakerStorage.pendingFailuresBit == 0 {
                return
            }
        }
        self.recordSuccessSlowly(for: permit)
    }

    /// Counts a success the inlined check could not settle; lock-free while closed with
    /// nothing to reset, under a slow-call rule or a time window too. A time window's bucket
    /// is published for this only while no success could meet the trip rule (the machine's
    /// ``CircuitBreakerStateMachine/lockFreeSuccessBucket``); otherwise the success takes the
    /// lock, where the rule is judged.
    @usableFromInline
    func recordSuccessSlowly(for permit: CircuitBreakerPermit) {
        // Whether the success is counted at a time, and the reading it is counted at when the
        // path below took one for the lock (with the re-base count read before the clock).
        var needsTime = false
        var reading: CircuitBreakerStorage.Reading?
        if !permit.isProbe {
            let word = self.storage.fastPathWord
            // A result from an earlier generation is ignored; no need to ask the machine.
            if word >> 2 != permit.generation { return }
            if word & CircuitBreakerStorage.pendingFailuresBit == 0 {
                if self.successNeedsNoLock {
                    let finished = self.readsClockOnSuccess ? self.clock.now() : nil
                    // Timed without the lock only when no re-base came since the start: a call
                    // that spans one is timed by the machine, on its own time line.
                    let isSlow =
                        finished.map {
                            CircuitBreakerStateMachine.isSlow(permit, at: $0, rule: self.configuration.slowCallRule)
                                || self.storage.rebaseCount != permit.rebases
                        } ?? false
                    if !isSlow { return }
                    needsTime = true
                } else if self.countsSuccessesInTimeWindow {
                    if self.configuration.slowCallRule == nil {
                        // No slow-call rule: a cheap reading that is never early decides the bucket.
                        if let upperBound = self.clock.upperBoundNanoseconds() {
                            if self.storage.countSuccessWithoutLock(atNanoseconds: upperBound) { return }
                            let finished = self.storage.read(self.clock)
                            let bound = Self.duration(nanoseconds: upperBound)
                            if finished.elapsed > bound {
                                self.clock.recalibrateUpperBound()  // the bound trailed: a suspension since
                            }
                            reading = finished
                        }
                    } else {
                        let finished = self.clock.now()
                        if !CircuitBreakerStateMachine.isSlow(
                            permit, at: finished, rule: self.configuration.slowCallRule),
                            self.storage.rebaseCount == permit.rebases,
                            let nanoseconds = Self.wholeNanoseconds(finished),
                            self.storage.countSuccessWithoutLock(atNanoseconds: nanoseconds)
                        {
                            return
                        }
                        needsTime = true
                    }
                }
            }
        }
        // A probe reads the clock too: its success counts only within its lease. A reading taken
        // above, before the re-base count, is taken again after it: the lock is taken anyway.
        if reading == nil, needsTime || self.readsClockOnSuccess || permit.isProbe {
            reading = self.storage.read(self.clock)
        }
        // A reading behind the breaker's latest time is taken again, and proves a jump if still
        // behind: a closed breaker sees no rejection to prove one by, and its results count on
        // from the new readings.
        let transition =
            if let reading {
                self.storage.update(atReadingOf: self.clock, first: reading) {
                    $0.record(.success, for: permit, at: $1)
                }
            } else {
                self.storage.update { $0.record(.success, for: permit, at: nil) }
            }
        self.report(transition, error: nil)
    }

    /// `nanoseconds` as a `Duration`, with the standard library's 128-bit integer (inlined)
    /// rather than `Duration.nanoseconds(_:)`.
    private static func duration(nanoseconds: Int64) -> Duration {
        let attoseconds: Int128 = Int128(nanoseconds) &* 1_000_000_000
        return Duration(attoseconds: attoseconds)
    }

    /// `milliseconds` as a `Duration`, as ``duration(nanoseconds:)`` makes it.
    private static func duration(milliseconds: Int64) -> Duration {
        Duration(attoseconds: Int128(milliseconds) &* 1_000_000_000_000_000)
    }

    /// `duration` in nanoseconds, if it is a whole number of them within `Int64`.
    private static func wholeNanoseconds(_ duration: Duration) -> Int64? {
        let (quotient, remainder) = duration.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        guard remainder == 0 else { return nil }
        return Int64(exactly: quotient)
    }

    /// Classifies a failure and counts it, or frees a probe slot when it does not count.
    ///
    /// The ``Rulebook`` decides first (``Rulebook/countsAsFailure(_:)``): a call the caller
    /// cancelled never counts, nor does one the library's own limiter refused or one that
    /// never left an offline device, and an attempt the library's own time limit ended
    /// always counts, probes included. The default classifier reads the analysis made here
    /// rather than walking the error's chain again.
    @usableFromInline
    func recordFailure(_ error: any Error, for permit: CircuitBreakerPermit) {
        let analysis = FailureAnalysis(error)
        let classifier = self.configuration.classifier
        let counts =
            Rulebook.countsAsFailure(analysis)
            ?? ((classifier as? DefaultCircuitBreakerFailureClassifier)?.countsAsFailure(error, analysis: analysis)
                ?? classifier.countsAsFailure(error))
        guard counts else {
            guard permit.isProbe else { return }  // an ignored closed-state result changes nothing
            self.storage.update { _ = $0.record(.ignored, for: permit, at: nil) }
            return
        }
        let pushback = self.configuration.pushback.openDuration(for: analysis)
        // As for a success: a reading behind the breaker's latest time is taken again.
        let transition = self.storage.update(atReadingOf: self.clock) {
            $0.record(.failure(pushback: pushback), for: permit, at: $1)
        }
        self.report(transition, error: error)
    }
}
