extension RetryPolicy {
    /// Runs `operation` with the recovery's current credential, retrying as the policy allows,
    /// and recovering the credential once when the operation fails for it.
    ///
    /// After a failure that the recovery recognizes (see
    /// ``CredentialRecovery/isCredentialFailure``), the call waits for the
    /// recovery's shared refresh, or finds that another call already refreshed,
    /// and tries again with the new credential: at once, or when the rest of the
    /// failure's retry-after hint has passed (a `Retry-After`, CloudKit's `CKRetryAfter`;
    /// a hint over ``maximumRetryAfter`` stops the call with
    /// ``RetryStopReason/retryAfterTooLong`` before any refresh). The wait for the refresh ends
    /// at the ``deadline`` (this policy's or an enclosing call's) with
    /// ``RetryStopReason/deadlineExceeded``, the refresh running on for the other calls; so does a
    /// cancellation of the call that comes after the clock jumped past the deadline, before the
    /// wait's timer woke, and a refresh that answers after such a jump, which schedules no retry;
    /// the same holds for the waits between refresh retries. That attempt does not
    /// count against ``maximumAttempts``. A call recovers at most once: a second
    /// credential failure goes to the classifier, which stops it with
    /// ``RetryStopReason/authenticationRequired``.
    ///
    /// A refresh that fails for good (the auth server refused the session, or its error carries
    /// an SDK code that the policy's ``RESTServiceErrorClassifier`` lists in
    /// ``RESTServiceErrorClassifier/tokenRefreshFailureCodes``, whatever the status beside it,
    /// a 429 excepted) ends the call with ``RetryStopReason/authenticationRequired`` and the
    /// refresh's error: send the person to sign in. A call's own failure that carries such a
    /// code (the SDK refreshed on its own and failed) is not recovered: the classifier stops it
    /// after that attempt, with no refresh. A refresh that fails for now is ridden out as a
    /// failed attempt is: the call waits the jittered backoff, or the rest of the refresh's
    /// retry-after hint if longer, and refreshes again, sharing that refresh with the other
    /// calls that wait for one. Each such refresh retry takes one of the call's ``maximumAttempts``
    /// (``RetryOutcome/attempts`` counts the operation's runs only), its wait counts
    /// against the ``deadline``, and the failure costs the ``budget`` a token, so an auth
    /// server that is down gets at most ``maximumAttempts`` refreshes from a call. When
    /// the attempts run out the call ends with the refresh's error and
    /// ``RetryStopReason/credentialRefreshFailed`` (``RetryStopReason/offline`` for a
    /// refresh that failed offline); a wait past the deadline, a hint over
    /// ``maximumRetryAfter`` or an empty budget end it with their own reasons. The auth
    /// server's 429 ends it at once with ``RetryStopReason/tooManyRequests`` (the hint is
    /// in ``RetryOutcome/retryAfter``). A refresh that failed offline in a call given a
    /// ``ConnectivityWait`` waits for the network instead, as an offline attempt does,
    /// without taking an attempt, while the call has waits left (``ConnectivityWait/maximumWaits``,
    /// shared with its offline attempts). Either way a later call refreshes again (see
    /// ``CredentialRecovery``).
    ///
    /// The ``Rulebook``'s rules come first: a call that is not idempotent is not
    /// sent again after the server may have acted on it. A refused credential (a 401 or
    /// a 407, CloudKit's `notAuthenticated`, `URLError.userAuthenticationRequired`) is
    /// not such a case: it is refreshed and the call sent once more.
    ///
    /// ```swift
    /// let recovery = CredentialRecovery(credential: storedToken) { stale in
    ///     try await auth.refresh(using: stale)
    /// }
    /// let profile = try await policy.execute(recovering: recovery) { token in
    ///     try await api.profile(token: token)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - recovery: The credential and its refresh, shared by every call that uses it.
    ///   - connectivity: Waits for the network after offline failures, if given (see
    ///     ``execute(waitingFor:idempotency:operation:)``).
    ///   - idempotency: Whether the operation may run twice; `nil` inherits the enclosing
    ///     call's declaration, or takes the classifier's, or assumes idempotent.
    ///   - operation: The work to attempt with the credential. It runs in the caller's isolation.
    /// - Returns: The operation's value from the first attempt that succeeds.
    /// - Throws: The error of the last attempt, unchanged; the refresh's error when the
    ///   recovery failed, for good or for now; `CancellationError` when the task was
    ///   cancelled while waiting (for a refresh, the network or a retry), or as that wait
    ///   ended: nothing more is sent for a caller that has left. A library time limit around the call that cuts a wait short
    ///   keeps the error the deadline would have ended the call with: the refresh's, once one
    ///   failed for now.
    public nonisolated(nonsending) func execute<Value, Credential>(
        recovering recovery: CredentialRecovery<Credential>,
        waitingFor connectivity: ConnectivityWait? = nil,
        idempotency: Idempotency? = nil,
        operation: (Credential) async throws -> Value
    ) async throws -> Value {
        try await self.outcome(
            recovering: recovery, waitingFor: connectivity, idempotency: idempotency,
            operation: operation
        ).get()
    }

    /// Runs `operation` as ``execute(recovering:waitingFor:idempotency:operation:)`` does,
    /// and reports the whole outcome.
    public nonisolated(nonsending) func outcome<Value, Credential>(
        recovering recovery: CredentialRecovery<Credential>,
        waitingFor connectivity: ConnectivityWait? = nil,
        idempotency: Idempotency? = nil,
        operation: (Credential) async throws -> Value
    ) async -> RetryOutcome<Value> {
        let call = CredentialRecoveryCall(recovery)
        let options = CallOptions(idempotency: idempotency, recovery: call, connectivity: connectivity)
        return await self.run(isolation: #isolation, firstFailure: nil, options: options) { _ in
            try await operation(call.begin())
        }
    }

    /// What follows a failure that a recovery or a wait for connectivity handles; `nil` for any other failure.
    ///
    /// Runs after the ``Rulebook``'s rules and before the classifier.
    ///
    /// A CloudKit partial failure gets neither: a refresh or a wait would end in the whole
    /// batch sent again, the items already saved included, although only some items failed
    /// offline or for their credential. The classifier stops it
    /// (``RetryStopReason/partialFailure``), and ``retryingFailedItems(_:waitingFor:idempotency:operation:)``
    /// waits for the network before it sends the failed items again.
    func recoveryPlan(
        isolation: isolated (any Actor)?,
        after error: any Error,
        analysis: FailureAnalysis,
        options: CallOptions,
        call: inout CallState,
        start: Duration
    ) async -> Plan? {
        if analysis.reportsOnItems { return nil }
        if let recovery = options.recovery, !call.hasRecovered, recovery.isCredentialFailure(error, analysis) {
            // The policy's REST classifier, when its table names SDK codes that mean a failed token
            // refresh: read only for a failure the recovery takes, never for a plain one.
            let judge = RESTServiceErrorClassifier.refreshFailureJudge(in: options.classifier ?? self.classifier)
            // The SDK already refreshed and failed: another refresh would fail too. The failure
            // goes to the classifier, whose table stops the call for sign-in; nothing is sent again.
            // (A 429 never comes here: the rules stopped it.)
            if let judge, judge.saysTokenRefreshFailed(error) { return nil }
            self.observer?.attemptFailed(
                .init(
                    policyName: self.name, attempt: call.attempts, error: error, httpStatus: analysis.httpStatus,
                    retryAfter: analysis.retryAfter))
            if let hint = analysis.retryAfter, hint > self.maximumRetryAfter { return .stop(.retryAfterTooLong) }
            let failedAt = self.clock.now()
            // The error the call ends with at the deadline, or when an enclosing time limit cuts
            // it short: the refusal until a refresh failed for now, then that refresh's error,
            // which tells the app the session may be fine and the auth server is not; a wait
            // that would pass the deadline ends so too. `lastFailureAt` is when that error came.
            var lastFailure: (any Error)?
            var lastFailureAt = call.lastErrorReceivedAt
            // One refresh, then one more after each that fails for now, as long as the policy
            // allows the retry; the refresh is shared with every call that needs it at the time.
            while true {
                let (answer, deadlinePassedFirst) = await self.waitForRefresh(recovery, judge: judge, start: start)
                switch answer {
                case nil:
                    return Self.deadlineStop(after: lastFailure)
                case _ where deadlinePassedFirst:
                    // The deadline passed before the answer came, or before the caller cancelled (a
                    // clock that jumped past it, the timer not yet woken): the wait ended there, as
                    // its timer would have ended it, whatever the answer. No retry is scheduled and
                    // no refresh retried past the deadline, so the observer hears of none.
                    return Self.deadlineStop(after: lastFailure)
                case .recovered:
                    // A cancelled call, or one whose enclosing limit's deadline passed while it
                    // waited, stops with no retry scheduled, as below.
                    if let stop = self.stopOnCancellation(
                        after: lastFailure ?? error, receivedAt: lastFailureAt, start: start)
                    {
                        return stop
                    }
                    call.hasRecovered = true
                    return self.retryAfterRecovery(
                        after: error, hint: analysis.retryAfter, failedAt: failedAt, call: &call, start: start)
                case .failed(let failure, let hintLeft):
                    // The caller, or a library time limit around the call (also one whose deadline
                    // passed before its timer woke), which keeps the error the call ends with: the
                    // one the deadline would have ended it with. No refresh retry is scheduled.
                    if let stop = self.stopOnCancellation(
                        after: lastFailure ?? error, receivedAt: lastFailureAt, start: start)
                    {
                        return stop
                    }
                    // The refresh's own failure, read by the same analysis and the REST classifier's
                    // table: only one that refused the session sends the person to sign in.
                    let refusal = FailureAnalysis(failure)
                    guard !RefreshFailure.endsSession(failure, refusal, judge: judge) else {
                        return .stopWithError(.authenticationRequired, failure)
                    }
                    if let hint = refusal.retryAfter { call.lastHint = hint }
                    lastFailure = failure
                    // A failure remembered from an earlier refresh came as long ago as its hint has run.
                    var receivedAt = self.clock.now()
                    if let hint = refusal.retryAfter, let hintLeft, hintLeft < hint { receivedAt -= hint - hintLeft }
                    lastFailureAt = receivedAt
                    let next = await self.refreshRetry(
                        isolation: isolation, after: failure, analysis: refusal, hintLeft: hintLeft,
                        receivedAt: receivedAt, options: options, call: &call, start: start)
                    if let next { return next }
                }
            }
        }
        // Past its waits for the network, an offline failure is judged as any other.
        if let connectivity = options.connectivity, analysis.isOffline, call.networkWaits < connectivity.maximumWaits,
            !connectivity.monitor.connectivity.isOnline
        {
            self.observer?.attemptFailed(
                .init(
                    policyName: self.name, attempt: call.attempts, error: error, httpStatus: analysis.httpStatus,
                    retryAfter: analysis.retryAfter))
            // The retry after the wait honours the failure's hint, so one the policy refuses ends the call now.
            if let hint = analysis.retryAfter, hint > self.maximumRetryAfter { return .stop(.retryAfterTooLong) }
            let failedAt = self.clock.now()
            call.networkWaits += 1
            switch await self.waitForNetwork(connectivity, start: start) {
            case .connected:
                if let stop = self.stopOnCancellation(after: error, receivedAt: call.lastErrorReceivedAt, start: start)
                {
                    return stop
                }
                return self.retryAfterRecovery(
                    after: error, hint: analysis.retryAfter, failedAt: failedAt, call: &call, start: start)
            case .stop(let reason):
                return .stop(reason)
            case .cancelled:
                return .stopWithError(
                    .cancelled, self.endingOnCancellation(after: error, receivedAt: call.lastErrorReceivedAt))
            }
        }
        return nil
    }

    /// Waits for the recovery's newer credential, within the deadline (this policy's or an
    /// enclosing call's); `nil` when the deadline comes first.
    ///
    /// The refresh itself goes on for the other calls that wait for it, and for later ones.
    /// Without a deadline the call waits for the refresh however long it takes, and starts no timer.
    /// With one, the answer comes with whether the deadline had passed before the caller's
    /// cancellation, or before the answer when no cancellation came first (see
    /// `racingDeadline(isolation:start:end:_:)`): a clock that jumps past the deadline may leave
    /// the timer asleep when the caller cancels. `judge` goes to the recovery (see
    /// ``CallRecovery/recover(chargingTo:judge:)``).
    private nonisolated func waitForRefresh(
        _ recovery: any CallRecovery, judge: RESTServiceErrorClassifier?, start: Duration
    ) async -> (value: CallRecoveryResult?, deadlinePassedFirst: Bool) {
        guard let left = self.timeLeft(start: start) else {
            return (await recovery.recover(chargingTo: self.budget, judge: judge), false)
        }
        if left <= .zero { return (nil, true) }
        let (budget, clock) = (self.budget, self.clock)
        let (answer, passedFirst) = await self.racingDeadline(isolation: nil, start: start) {
            await withTaskGroup(of: CallRecoveryResult?.self) { group in
                group.addTask { await recovery.recover(chargingTo: budget, judge: judge) }
                group.addTask {
                    do {
                        try await clock.sleepUntil(clock.now() + left)
                        return nil
                    } catch {
                        // Only a cancellation ends this sleep before the refresh's answer.
                        return .failed(CancellationError(), hintLeft: nil)
                    }
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
        return (answer, passedFirst == .deadline)
    }

    /// How a wait for the network after an offline failure ended.
    private enum NetworkWait {
        /// The network came back before the wait's limit and the deadline passed.
        case connected
        /// The wait reached its limit (``RetryStopReason/offline``) or the deadline (``RetryStopReason/deadlineExceeded``).
        case stop(RetryStopReason)
        case cancelled
    }

    /// Waits for the network as a ``ConnectivityWait`` says; the wait counts against the deadline,
    /// this policy's or an enclosing call's, and ends at the deadline if that comes first.
    ///
    /// The wait's end (its limit, or the deadline when that comes first) is a limit of the call,
    /// as the deadline is: once the clock has passed it, the wait has ended there, also when its
    /// timer has not woken yet (a clock that jumped, a timer that wakes late). A caller that
    /// cancels after that, or a network that comes back after that, finds the wait ended as its
    /// timer would have ended it (see `racingDeadline(isolation:start:end:_:)`). A wait with
    /// nothing left of its limit ends at once, without sleeping on the clock.
    private nonisolated func waitForNetwork(_ connectivity: ConnectivityWait, start: Duration) async -> NetworkWait {
        var limit = connectivity.limit
        var deadlineComesFirst = false
        if let left = self.timeLeft(start: start) {
            if left <= limit {
                limit = Swift.max(left, .zero)
                deadlineComesFirst = true
            }
        }
        let limitReached = NetworkWait.stop(deadlineComesFirst ? .deadlineExceeded : .offline)
        if limit <= .zero { return limitReached }
        let end = self.clock.now() + limit
        let (ending, passedFirst) = await self.racingDeadline(isolation: nil, start: start, end: end) {
            await connectivity.waitForConnection(until: end, clock: self.clock)
        }
        switch (ending, passedFirst) {
        case (_, .end), (.limitReached, nil):
            return limitReached
        case (_, .deadline):
            // An enclosing call's deadline, read on its own clock, passed before this wait's end.
            return .stop(.deadlineExceeded)
        case (.connected, nil):
            return .connected
        case (.cancelled, nil):
            return .cancelled
        }
    }

    /// After a refresh that failed for now: waits, and returns `nil` for the call to refresh again,
    /// or returns how the call ends.
    ///
    /// The auth server's 429 ends the call at once (``RetryStopReason/tooManyRequests``), and so
    /// does an ``AdaptiveThrottle``'s refusal of the refresh (``RetryStopReason/throttled``). A
    /// hint longer than ``maximumRetryAfter`` ends it with ``RetryStopReason/retryAfterTooLong``,
    /// offline or not. A refresh that failed offline, when the call waits for the network and the monitor confirms it is
    /// offline, is followed by that wait, which takes no attempt, as after an offline attempt,
    /// while the call has waits left (``ConnectivityWait/maximumWaits``).
    /// Any other (an offline one without that wait included) is retried as a failed attempt is:
    /// the failed refresh has cost the ``budget`` one token, however many calls with that budget
    /// waited for it (a call that got its remembered failure sent nothing and paid nothing),
    /// unless the request never left the device; the retry takes one of
    /// the call's ``maximumAttempts``, and the wait before it is the jittered backoff, or the rest
    /// of the refresh's retry-after hint if longer, within ``maximumRetryAfter`` and the
    /// ``deadline``. When attempts run out the call ends with the reason that names the failure
    /// (``RefreshFailure/stopReason(for:)``); the other limits end it with their own reasons.
    ///
    /// - Parameters:
    ///   - failure: The refresh's error; the call ends with it.
    ///   - hintLeft: The rest of the refresh's retry-after hint, if it had one.
    ///   - receivedAt: When the refresh failed, on the policy's clock: a library time limit that
    ///     cuts the call short keeps `failure`, and counts its hint from then.
    private func refreshRetry(
        isolation: isolated (any Actor)?,
        after failure: any Error,
        analysis: FailureAnalysis,
        hintLeft: Duration?,
        receivedAt: Duration,
        options: CallOptions,
        call: inout CallState,
        start: Duration
    ) async -> Plan? {
        // The failed refresh has already cost the budget its token (see `CredentialRecoveryStorage`).
        if analysis.isThrottleRejection { return .stopWithError(.throttled, failure) }
        if analysis.isTooManyRequests { return .stopWithError(.tooManyRequests, failure) }
        if let hintLeft, hintLeft > self.maximumRetryAfter { return .stopWithError(.retryAfterTooLong, failure) }
        if analysis.isOffline, let connectivity = options.connectivity, call.networkWaits < connectivity.maximumWaits,
            !connectivity.monitor.connectivity.isOnline
        {
            let failedAt = self.clock.now()
            call.networkWaits += 1
            switch await self.waitForNetwork(connectivity, start: start) {
            case .connected:
                if let stop = self.stopOnCancellation(after: failure, receivedAt: receivedAt, start: start) {
                    return stop
                }
            case .stop(let reason): return .stopWithError(reason, failure)
            case .cancelled:
                return .stopWithError(.cancelled, self.endingOnCancellation(after: failure, receivedAt: receivedAt))
            }
            let rest = Swift.max((hintLeft ?? .zero) - (self.clock.now() - failedAt), .zero)
            if rest > .zero, let left = self.timeLeft(start: start), rest >= left {
                return .stopWithError(.deadlineExceeded, failure)
            }
            self.noteRefreshRetry(after: failure, analysis, delay: rest, call: &call)
            return await self.sleep(isolation: isolation, rest, after: failure, receivedAt: receivedAt, start: start)
        }
        if call.countedAttempts >= self.maximumAttempts {
            return .stopWithError(RefreshFailure.stopReason(for: analysis), failure)
        }
        let jittered = await self.nextDelay(
            forRetry: call.countedAttempts - 1, previous: call.previousDelay)
        let delay = Swift.max(jittered, hintLeft ?? .zero)
        if let left = self.timeLeft(start: start), delay >= left { return .stopWithError(.deadlineExceeded, failure) }
        if let budget = self.budget, !budget.allowsRetry { return .stopWithError(.budgetExhausted, failure) }
        call.previousDelay = delay
        call.refreshRetries += 1
        self.noteRefreshRetry(after: failure, analysis, delay: delay, call: &call)
        return await self.sleep(isolation: isolation, delay, after: failure, receivedAt: receivedAt, start: start)
    }

    /// Counts a refresh retry as one of the call's retries and reports it to the observer.
    private nonisolated func noteRefreshRetry(
        after failure: any Error, _ analysis: FailureAnalysis, delay: Duration, call: inout CallState
    ) {
        call.retries += 1
        self.observer?.retryScheduled(
            .init(
                policyName: self.name, attempt: call.attempts, delay: delay, error: failure,
                retryAfter: analysis.retryAfter))
    }

    /// Sleeps `delay` on the policy's clock before a refresh retry after the refresh's
    /// `failure`, received at `receivedAt`, in the call that began at `start`: `nil` to go on,
    /// or how the call ends.
    ///
    /// The wait is a wait before a retry (`waitBeforeRetry`): a clock that jumped past its end
    /// and the deadline before the caller cancelled stops the call at the deadline, with the
    /// refresh's `failure`, as the wait for the refresh that follows the wait would have. A
    /// library time limit around the call that cuts the wait short keeps `failure` too.
    private func sleep(
        isolation: isolated (any Actor)?, _ delay: Duration, after failure: any Error, receivedAt: Duration,
        start: Duration
    ) async -> Plan? {
        switch await self.waitBeforeRetry(isolation: isolation, delay, start: start) {
        case .elapsed where !Task.isCancelled:
            return nil
        case .elapsedPastDeadline:
            return nil  // the wait for the refresh finds the deadline passed, whatever came after
        case .elapsed, .cancelled:
            return .stopWithError(.cancelled, self.endingOnCancellation(after: failure, receivedAt: receivedAt))
        case .cancelledPastDeadline:
            return .stopWithError(.deadlineExceeded, failure)
        }
    }

    /// How a call ends whose wait for a refresh or for the network has answered in a task that
    /// is cancelled, or under a library time limit whose deadline has passed, its timer perhaps
    /// not woken yet (see `enclosingLimitEnds(start:)`): as when that limit cancelled it, with
    /// `error`, received at `receivedAt`, kept for the limit, and before any retry is scheduled,
    /// so the observer and the statistics hear of none. `nil` when the call goes on.
    private nonisolated func stopOnCancellation(after error: any Error, receivedAt: Duration?, start: Duration) -> Plan?
    {
        guard self.isCancelledOrEndedByALimit(start: start) else { return nil }
        return .stopWithError(.cancelled, self.endingOnCancellation(after: error, receivedAt: receivedAt))
    }

    /// How a call that waited for a refresh ends at the deadline: with the refresh's error once
    /// one failed for now (`lastFailure`), as a wait that would pass the deadline does, else
    /// with the refusal it was refreshing for.
    private static func deadlineStop(after lastFailure: (any Error)?) -> Plan {
        lastFailure.map { .stopWithError(.deadlineExceeded, $0) } ?? .stop(.deadlineExceeded)
    }

    /// Schedules an attempt that does not count against ``maximumAttempts``, now that the
    /// state that failed the last one has been recovered: at once, or when the rest of the
    /// failure's retry-after hint has passed.
    ///
    /// - Parameters:
    ///   - hint: The failure's retry-after hint, already known to be within ``maximumRetryAfter``.
    ///   - failedAt: When the failure came, on the policy's clock: the hint runs from then,
    ///     so the wait for the network or the refresh counts towards it.
    ///   - start: When the call began: a wait that would pass the deadline stops the call.
    private nonisolated func retryAfterRecovery(
        after error: any Error,
        hint: Duration?,
        failedAt: Duration,
        call: inout CallState,
        start: Duration
    ) -> Plan {
        let rest = Swift.max((hint ?? .zero) - (self.clock.now() - failedAt), .zero)
        if rest > .zero, let left = self.timeLeft(start: start), rest >= left { return .stop(.deadlineExceeded) }
        call.uncountedAttempts += 1
        call.retries += 1
        self.observer?.retryScheduled(
            .init(policyName: self.name, attempt: call.attempts, delay: rest, error: error, retryAfter: hint))
        return rest > .zero ? .wait(rest) : .retryNow
    }
}

/// How a call's request for a newer credential ended.
enum CallRecoveryResult {
    /// A newer credential is in place.
    case recovered
    /// The refresh failed with `error` (or the wait was cancelled); `hintLeft` is the rest of
    /// the refresh's retry-after hint, if it had one.
    case failed(any Error, hintLeft: Duration?)
}

/// The recovery one call through a ``RetryPolicy`` may take after a credential failure.
protocol CallRecovery: Sendable {
    /// Whether `error` asks for a new credential.
    func isCredentialFailure(_ error: any Error, _ analysis: FailureAnalysis) -> Bool
    /// Obtains a credential newer than the one the last attempt carried. Asked again after a
    /// refresh that failed, it answers with a refresh that started since, or starts one.
    /// `judge`, the policy's REST classifier that lists token refresh failure codes, has a
    /// refresh that fails with one of them remembered for good.
    func recover(chargingTo budget: RetryBudget?, judge: RESTServiceErrorClassifier?) async -> CallRecoveryResult
}

/// One call's view of a ``CredentialRecovery``: it remembers the credential the last attempt
/// carried, and the round of the last failed refresh the call got.
final class CredentialRecoveryCall<Credential: Sendable>: CallRecovery {
    private let recovery: CredentialRecovery<Credential>
    private let carried = Lock<(snapshot: CredentialRecovery<Credential>.Snapshot?, seen: UInt64?)>((nil, nil))

    init(_ recovery: CredentialRecovery<Credential>) {
        self.recovery = recovery
    }

    /// The credential for the next attempt, remembered as the one it carries.
    func begin() -> Credential {
        let snapshot = self.recovery.current
        self.carried.withLock { $0.snapshot = snapshot }
        return snapshot.credential
    }

    func isCredentialFailure(_ error: any Error, _ analysis: FailureAnalysis) -> Bool {
        self.recovery.isCredentialFailure(error, analysis)
    }

    func recover(chargingTo budget: RetryBudget?, judge: RESTServiceErrorClassifier?) async -> CallRecoveryResult {
        let (stale, seen) = self.carried.withLock { $0 }
        guard let stale else { return .recovered }
        let answer = await self.recovery.recover(after: stale, seen: seen, budget: budget, judge: judge)
        switch answer.result {
        case .success:
            return .recovered
        case .failure(let error):
            if let round = answer.failedRound { self.carried.withLock { $0.seen = round } }
            return .failed(error, hintLeft: answer.until.map { self.recovery.timeLeft(until: $0) })
        }
    }
}
