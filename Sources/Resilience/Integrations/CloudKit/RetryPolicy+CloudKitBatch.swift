extension RetryPolicy {
    /// Sends a batch of items, and after a CloudKit partial failure re-sends only
    /// the items worth retrying, never the ones that succeeded.
    ///
    /// Each attempt calls `operation` with the items still to send: all of them at
    /// first, then only the retryable items of the last partial failure
    /// (``CloudKitPartialFailure/retryableItems``), after the longest retry-after
    /// hint among them, the partial failure and the errors that wrap it. Items that failed for good leave the batch at once and have
    /// no say in the wait. The partial failure is found wherever it sits in the
    /// error's chain: thrown as CloudKit made it, or wrapped in `NSUnderlyingErrorKey`
    /// or in an error of the app's (see ``UnderlyingErrorProviding``). The
    /// ``Rulebook`` applies as everywhere: an item that failed with HTTP 429 ends
    /// the call, and so does a cancelled task.
    ///
    /// An item is judged as a whole call with the same declaration and classifier would be: the
    /// policy's classifier decides for the item's error, whatever it is made of (a rule of the
    /// app's in front of a ``CloudKitRetryClassifier``, the default rules, a composite classifier of
    /// the app's own), and the default rules when it has no opinion; an item with no CloudKit error
    /// in its chain is not sent again. One
    /// whose connection dropped (`networkFailure`) is sent again unless the batch may not be sent
    /// twice: `idempotency`; when it is `nil`, an enclosing call's declaration or the policy's
    /// classifier's (``RetryClassifier/declaredIdempotency``); without any, idempotent, as every
    /// call through a policy is. One whose response was lost (`serverResponseLost`) takes an
    /// explicit word, as a whole call does: it is sent again when the batch or an enclosing call
    /// was declared idempotent, or, when neither declares, when the policy's classifier retries a
    /// lost response (a ``CloudKitRetryClassifier`` made with `operationIsIdempotent: true` that
    /// decides for it, and no declaration of the call as not idempotent); otherwise it is held back
    /// as possibly applied, with the reason a whole call stops with (``RetryStopReason/notIdempotent``).
    /// A classifier's "idempotent" (`HTTPRetryClassifier(method: "GET")`) is not such a word.
    ///
    /// A batch that may not be sent twice (`idempotency: .notIdempotent`, or an enclosing call
    /// declared so) is judged item by item: an item whose own error proves it had no effect
    /// (`batchRequestFailed` collateral, `networkUnavailable`) is sent again, even when another
    /// item of the same attempt may have been applied; an item that may have reached CloudKit
    /// (`networkFailure`, `serverResponseLost`, `zoneBusy` and every other answer) is held back,
    /// among ``CloudKitBatchResult/failedItems`` with ``RetryStopReason/notIdempotent`` as its
    /// ``CloudKitBatchResult/failureReasons`` entry, so the app can check whether it was saved.
    /// It has no say in the wait before the others are sent again. A call that held an item
    /// back and then had nothing else left to send stops with ``RetryStopReason/notIdempotent``,
    /// not ``RetryStopReason/succeeded``: the batch was not reconciled in full. The policy's
    /// observer hears the same: its ``RetryCallFinishedEvent`` says
    /// ``RetryStopReason/notIdempotent``, with the partial failure that held the item back as
    /// its error. Every event of an attempt that failed partly carries the partial failure
    /// `operation` threw.
    ///
    /// A partial failure that names none of the items sent (its per-item errors missing, as
    /// in an error re-created from its domain and code, or keyed by IDs of another type)
    /// fails the attempt as a whole: some items may have been saved, none is known to be.
    /// Sending it again whole would re-send the items CloudKit saved, so it is sent again on the
    /// word a lost response needs: the batch's or an enclosing call's declaration `.idempotent`,
    /// or, when neither declares, a policy's classifier that retries a lost response (a
    /// ``CloudKitRetryClassifier`` made with `operationIsIdempotent: true`). Otherwise the call
    /// stops (``RetryStopReason/partialFailure``, or ``RetryStopReason/notIdempotent`` for a call
    /// the rules read as not idempotent) and each item it sent is among
    /// ``CloudKitBatchResult/failedItems`` with that failure.
    ///
    /// A whole attempt whose response was lost (`serverResponseLost`, not a partial failure) is
    /// judged as any whole call's: sent again whole when the batch or an enclosing call was
    /// declared idempotent, or, when neither declares, when the policy's classifier retries a lost
    /// response; otherwise it stops with ``RetryStopReason/notIdempotent``, as a held-back item does.
    ///
    /// Once an attempt has reported on the items (a partial failure), the call
    /// returns a ``CloudKitBatchResult`` however it stops, so the items CloudKit saved
    /// are never lost to an error: cancelled during an attempt or during the wait
    /// before the next one (``RetryStopReason/cancelled``), or stopped by the policy
    /// (its attempts or its deadline spent, a failure it does not retry). The items
    /// still to send are then in ``CloudKitBatchResult/failedItems``, each with the
    /// last error it failed with, and ``CloudKitBatchResult/stopReason`` says why the
    /// call stopped.
    ///
    /// `operation` runs in the caller's isolation, as every call's operation does, but unlike
    /// ``execute(operation:)`` this call leaves the caller's executor, on its success path too.
    /// The items need not be `Sendable`, so each attempt is a plain nonisolated closure: it runs
    /// on the global concurrent executor, and a call from an actor switches back to the actor to
    /// run `operation` and away again. A batch's network round trip dwarfs the switches.
    ///
    /// ```swift
    /// let result = try await policy.retryingFailedItems(recordIDs) { ids in
    ///     try await save(records.filter { ids.contains($0.recordID) })
    /// }
    /// for (id, error) in result.failedItems { report(id, error) }
    /// if result.stopReason == .cancelled { scheduleLater(result.failedItems.keys) }
    /// ```
    ///
    /// - Parameters:
    ///   - items: The IDs of the items to send, as CloudKit keys its per-item errors (`CKRecord.ID`, …).
    ///   - idempotency: Whether sending an item twice is harmless, for every item of the batch (a
    ///     save of a record under an ID the app keeps usually is: a second save of a record already
    ///     saved fails as a conflict or writes the same values); `nil` inherits an enclosing call's
    ///     declaration or the policy's classifier's, and without either assumes it is, except for
    ///     an item whose response was lost and a batch whose partial failure named none of its
    ///     items, which without a declaration are sent again only when the policy's classifier
    ///     retries a lost response (``CloudKitRetryClassifier/operationIsIdempotent``).
    ///   - operation: Sends the given items; throws CloudKit's error, a partial failure included.
    /// - Returns: Which items were sent and which failed, with their errors and why.
    /// - Throws: Only when no attempt reported on the items: the error of the last attempt,
    ///   which failed as a whole (not a partial failure), when the policy stops on it (a
    ///   cancelled call's included); `CancellationError` when the call is cancelled while
    ///   waiting to try again.
    public nonisolated(nonsending) func retryingFailedItems<ID: Hashable>(
        _ items: [ID],
        idempotency: Idempotency? = nil,
        operation: ([ID]) async throws -> Void
    ) async throws -> CloudKitBatchResult<ID> {
        try await self.sendingFailedItems(items, connectivity: nil, idempotency: idempotency, operation: operation)
    }

    /// Sends a batch of items as ``retryingFailedItems(_:idempotency:operation:)`` does, and
    /// waits for the network instead of spending attempts while the device is offline.
    ///
    /// CloudKit's advice for `networkUnavailable` is to wait until the network is back, then
    /// send again. After an attempt that failed offline (`networkUnavailable`, or a URL loading
    /// error such as `notConnectedToInternet`), as a whole or for one of the items it sends
    /// again, the call waits as ``ConnectivityWait`` tells, when the monitor confirms the device
    /// is offline, then sends the items still to send: at once, or once the rest of their
    /// retry-after hint has passed. The attempt that failed offline and the wait take none of
    /// ``maximumAttempts``; the wait counts against the ``deadline``. A wait that reaches its
    /// limit stops the call with ``RetryStopReason/offline`` (the items still to send are then
    /// in ``CloudKitBatchResult/failedItems``, once an attempt has reported on the items), and
    /// one that reaches the deadline with ``RetryStopReason/deadlineExceeded``.
    ///
    /// Nesting ``retryingFailedItems(_:idempotency:operation:)`` in
    /// ``execute(waitingFor:idempotency:operation:)`` does not do this: the inner call spends
    /// its attempts on backoff while the device is offline, and the outer call never retries
    /// what the inner policy retried to exhaustion (see ``NestedRetries``).
    ///
    /// ```swift
    /// let network = ConnectivityWait(monitor: monitor, limit: .seconds(300))
    /// let result = try await policy.retryingFailedItems(recordIDs, waitingFor: network) { ids in
    ///     try await save(records.filter { ids.contains($0.recordID) })
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - items: The IDs of the items to send, as CloudKit keys its per-item errors (`CKRecord.ID`, …).
    ///   - connectivity: The monitor to wait on and the longest wait.
    ///   - idempotency: Whether sending an item twice is harmless; `nil` reads it as
    ///     ``retryingFailedItems(_:idempotency:operation:)`` does.
    ///   - operation: Sends the given items; throws CloudKit's error, a partial failure included.
    /// - Returns: Which items were sent and which failed, with their errors.
    /// - Throws: As ``retryingFailedItems(_:idempotency:operation:)`` does; a call that stops
    ///   offline before any attempt reported on the items throws the offline error.
    public nonisolated(nonsending) func retryingFailedItems<ID: Hashable>(
        _ items: [ID],
        waitingFor connectivity: ConnectivityWait,
        idempotency: Idempotency? = nil,
        operation: ([ID]) async throws -> Void
    ) async throws -> CloudKitBatchResult<ID> {
        try await self.sendingFailedItems(
            items, connectivity: connectivity, idempotency: idempotency, operation: operation)
    }

    /// The batch helper, with or without a wait for the network.
    private nonisolated(nonsending) func sendingFailedItems<ID: Hashable>(
        _ items: [ID],
        connectivity: ConnectivityWait?,
        idempotency: Idempotency?,
        operation: ([ID]) async throws -> Void
    ) async throws -> CloudKitBatchResult<ID> {
        var remaining = items
        var failed: [ID: any Error] = [:]
        // Why each item in `failed` was not sent (again).
        var reasons: [ID: RetryStopReason] = [:]
        // The last error of each item still to send, once an attempt has reported on the items.
        var lastErrors: [ID: any Error] = [:]
        var reportedOnItems = false
        // The partial failure of the last attempt that held items back as possibly applied, if any.
        var heldBackBy: (any Error)?
        // The retry-after advice of the last attempt that failed, for the items still to send.
        var lastAdvice: Duration?
        var attempts = 0
        // The call's idempotency as the rules read it after an attempt (before a failure's own
        // report tightens it): an item that may have been applied is sent again only when it holds.
        let callIdempotency =
            idempotency ?? CallScope.current.handedDownIdempotency(over: self.classifier.declaredIdempotency)
            ?? .idempotent
        // Items are judged as a whole call with the same declaration and classifier is: a lost
        // response takes an explicit word (the call's or an enclosing call's declaration, else the
        // classifier's), a dropped connection only the rules' reading.
        let isDeclared = Rulebook.idempotencyIsDeclared(idempotency)
        func judge(_ itemError: any Error) -> RetryDecision {
            CloudKitRetryClassifier.itemDecision(
                for: itemError, by: self.classifier,
                context: RetryContext(
                    attempt: Swift.max(attempts, 1), idempotency: callIdempotency, idempotencyIsDeclared: isDeclared))
        }
        let classifier = ChainedRetryClassifier([
            ClosureRetryClassifier { error, _ in
                if let unreadable = error as? CloudKitUnreadablePartialFailure {
                    // It may have been partly saved: sent again whole only when that is harmless.
                    return unreadable.mayBeSentAgain ? .retry : .doNotRetry(because: .partialFailure)
                }
                guard let retry = error as? CloudKitItemsToRetry else { return nil }
                return retry.retryAfter.map { .retry(after: $0) } ?? .retry
            },
            self.classifier, DefaultRetryClassifier(),
        ])
        // An ordinary nonisolated attempt, as `operation` is, so that it may hand `operation`
        // the items, which need not be `Sendable`.
        let outcome = await self.runConcurrentAttempt(
            isolation: #isolation, firstFailure: nil,
            options: CallOptions(idempotency: idempotency, classifier: classifier, connectivity: connectivity)
        ) { (_: AttemptDeadline) async throws in
            attempts += 1
            do {
                try await operation(remaining)
            } catch {
                guard let partial = CloudKitPartialFailure(error, judgingItemsBy: judge) else {
                    lastAdvice = ErrorHints.retryAfter(of: error)
                    // The whole attempt failed: so did each item it sent.
                    if reportedOnItems { for id in remaining { lastErrors[id] = error } }
                    throw error
                }
                reportedOnItems = true
                guard partial.namesAny(of: remaining) else {
                    lastAdvice = ErrorHints.retryAfter(of: error)
                    // Some items failed, but which is unknown: each item sent failed with the whole.
                    lastErrors = [:]
                    for id in remaining { lastErrors[id] = error }
                    // It may have been partly saved, as a lost response may have been applied: it is
                    // sent again whole on the same word, asked of the policy's classifier.
                    throw CloudKitUnreadablePartialFailure(
                        partialFailure: error,
                        mayBeSentAgain: callIdempotency.isIdempotent
                            && judge(CloudKitErrorCode.lostResponseError).isRetryable)
                }
                var retryable: [ID] = []
                var itemErrors: [any Error] = []
                var failedForGood: [any Error] = []
                // The wait before the items sent again: theirs, the partial failure's own advice and
                // that of the errors that wrap it.
                var hint = partial.ownRetryAfter
                lastErrors = [:]
                for id in remaining {
                    if let itemError = partial.failedItems[AnyHashable(id)] {
                        failed[id] = itemError
                        let reason = CloudKitRetryClassifier.stopReason(
                            forItemError: itemError, decision: partial.itemDecisions[AnyHashable(id)] ?? .doNotRetry)
                        reasons[id] = reason
                        failedForGood.append(itemError)
                        // Held back as possibly applied (a lost response nothing said may be sent again).
                        if reason == .notIdempotent { heldBackBy = error }
                    } else if let itemError = partial.retryableItems[AnyHashable(id)] {
                        let analysis = FailureAnalysis(itemError, isCancelled: false, timeLimitFired: false)
                        if Rulebook.stopReason(for: analysis, idempotency: callIdempotency) == .notIdempotent {
                            // It may have been applied: held back, whatever the other items' errors prove.
                            failed[id] = itemError
                            reasons[id] = .notIdempotent
                            failedForGood.append(itemError)
                            heldBackBy = error
                            continue
                        }
                        retryable.append(id)
                        itemErrors.append(itemError)
                        lastErrors[id] = itemError
                        // Its own advice, and a wait its classifier asks for, as a whole call's would.
                        let itemHints = [analysis.retryAfter, partial.itemDecisions[AnyHashable(id)]?.retryAfter]
                        if let itemHint = itemHints.compactMap({ $0 }).max() {
                            hint = Swift.max(hint ?? .zero, itemHint)
                        }
                    }
                }
                remaining = retryable
                let isTooManyRequests = FailureAnalysis(error).isTooManyRequests
                // Nothing left to send ends the call, unless the rules must see it (a 429 among the items);
                // with items held back, as not idempotent, the partial failure its error.
                guard !retryable.isEmpty || isTooManyRequests else {
                    guard heldBackBy != nil else { return }
                    throw CloudKitItemsHeldBack(partialFailure: error, operationThrew: true)
                }
                let attemptError = CloudKitItemsToRetry(
                    partialFailure: error, itemErrors: itemErrors, retryAfter: hint,
                    pushback: isTooManyRequests ? Self.pushback(in: error, failedForGood: failedForGood) : [])
                // The advice is that of the failure the rules judge, a 429's pushback included.
                lastAdvice = FailureAnalysis(attemptError, isCancelled: false, timeLimitFired: false).retryAfter
                throw attemptError
            }
            remaining = []
            // Every item still to send was sent, but items held back earlier may have been applied.
            if let heldBackBy { throw CloudKitItemsHeldBack(partialFailure: heldBackBy, operationThrew: false) }
        }
        if case .failure(let error) = outcome.result {
            guard reportedOnItems else { throw error }
            // The call stopped with items still to send: they failed, with the last error each met,
            // for the reason the call stopped.
            for id in remaining {
                failed[id] = lastErrors[id] ?? error
                reasons[id] = outcome.stopReason
            }
        }
        // Nothing left to send with items held back as possibly applied ends the call with
        // `.notIdempotent` (`CloudKitItemsHeldBack`): the batch did not succeed in full, and says why.
        let stopReason = outcome.stopReason
        let failedIDs = Set(failed.keys)
        return CloudKitBatchResult(
            sentItems: items.filter { !failedIDs.contains($0) }, failedItems: failed, attempts: attempts,
            stopReason: stopReason, retryAfter: remaining.isEmpty ? nil : lastAdvice, failureReasons: reasons)
    }

    /// The errors that make a partial failure an HTTP 429, for the rules to see: the items that
    /// failed for good with one (the items sent again are seen anyway), or, when the 429 is
    /// elsewhere in its chain, the whole failure.
    private static func pushback(in failure: any Error, failedForGood: [any Error]) -> [any Error] {
        let items = failedForGood.filter { ErrorHints.isTooManyRequests($0) }
        return items.isEmpty ? [failure] : items
    }
}

/// What ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)`` did with a batch.
public struct CloudKitBatchResult<ID: Hashable> {
    /// The items CloudKit accepted, in the order given.
    public let sentItems: [ID]
    /// The items that failed for good, those held back because they may have been applied to a
    /// batch that may not be sent twice, and those still to send when the call stopped (the policy
    /// gave up on them, or the call was cancelled), each with the last error it failed with;
    /// ``failureReasons`` says which is which.
    public let failedItems: [ID: any Error]
    /// How many times the operation ran.
    public let attempts: Int
    /// Why the policy stopped: ``RetryStopReason/succeeded`` when the last attempt had no failure left to
    /// retry and no item was held back, ``RetryStopReason/notIdempotent`` when it had none left but
    /// items were held back as possibly applied (their ``failureReasons`` entries say
    /// ``RetryStopReason/notIdempotent``: fetch them to learn whether they were saved),
    /// ``RetryStopReason/cancelled`` when the call was cancelled with items still to send, and so on.
    /// Items that failed for good (a conflict, a full quota) are settled and leave it
    /// ``RetryStopReason/succeeded``.
    public let stopReason: RetryStopReason
    /// When the call stopped with items still to send, the retry-after advice of the last attempt
    /// that failed, counted from that failure: the longest of the partial failure's own
    /// (`CKErrorRetryAfterKey` on the `partialFailure` error), that of the errors wrapping it, and
    /// its retryable items'; after an HTTP 429, the pushback's advice too (a `Retry-After` on the
    /// 429, wherever it sits). `nil` when every item was sent or failed for good, or when the
    /// failure gave no advice.
    ///
    /// Schedule the items still to send no sooner than this after the call returns, for instance
    /// when the policy gave up on a wait longer than its `maximumRetryAfter` or the call was
    /// cancelled while waiting.
    public let retryAfter: Duration?
    /// Why each item of ``failedItems`` was not sent, or not sent again.
    ///
    /// - ``RetryStopReason/notIdempotent``: the item may have reached CloudKit (its error was a
    ///   dropped connection, a lost response or another answer that proves nothing), and the batch
    ///   may not be sent twice, or, for a lost response, nothing said it may (no declaration and
    ///   no `CloudKitRetryClassifier(operationIsIdempotent: true)`), so it was held back while the
    ///   items that provably had no effect were sent again. It may have been saved: fetch it to
    ///   learn whether it was before sending it again. A whole call stopped on a lost response
    ///   reports the same reason.
    /// - What the item's own error asks for, as the policy's classifier judges it (a rule of the
    ///   app's in front of the CloudKit rules may give a reason of its own):
    ///   ``RetryStopReason/setupRequired`` (its zone is missing, or was deleted by a reset of the
    ///   person's encrypted data), ``RetryStopReason/authenticationRequired``,
    ///   ``RetryStopReason/tooManyRequests``, or ``RetryStopReason/notRetryable`` for the rest
    ///   (a conflict, a quota, invalid data).
    /// - For an item still to send when the call stopped, why it stopped, as ``stopReason``
    ///   (``RetryStopReason/exhausted``, ``RetryStopReason/cancelled``,
    ///   ``RetryStopReason/partialFailure`` for a batch whose items a partial failure did not name, …).
    ///
    /// Empty in a result made without reasons.
    public let failureReasons: [ID: RetryStopReason]

    /// Creates a result; the policy makes these, tests may too.
    public init(
        sentItems: [ID], failedItems: [ID: any Error], attempts: Int, stopReason: RetryStopReason,
        retryAfter: Duration? = nil, failureReasons: [ID: RetryStopReason] = [:]
    ) {
        self.sentItems = sentItems
        self.failedItems = failedItems
        self.attempts = attempts
        self.stopReason = stopReason
        self.retryAfter = retryAfter
        self.failureReasons = failureReasons
    }
}

/// The retryable items of a partial failure, as the failure of one batch attempt.
///
/// Its chain holds the errors of the items to send again, so the ``Rulebook`` reads
/// their facts (how far each request got, their hints), and those of the items that
/// failed for good only when they carry an HTTP 429, which ends the call: an item that
/// is not sent again sets no wait and gives none of the others up.
///
/// Observers hear of the partial failure the operation threw instead (see `AttemptFailureStandIn`).
struct CloudKitItemsToRetry: Error, RetryAfterProviding, UnderlyingErrorProviding, AttemptFailureStandIn {
    /// The partial failure the operation threw.
    var partialFailure: any Error
    var itemErrors: [any Error]
    var retryAfter: Duration?
    /// The errors that make the partial failure an HTTP 429, if it is one.
    var pushback: [any Error]

    var underlyingErrors: [any Error] { self.itemErrors + self.pushback }
    var reportedError: any Error { self.partialFailure }
}

/// The end of a batch that sent every item it could and held back items that may have been
/// applied, as the failure of its last attempt: the call stops with
/// ``RetryStopReason/notIdempotent``, as the batch's result does, whatever the rules would read in
/// it, and observers hear of the partial failure that held the items back.
///
/// Its chain is empty: the items held back have no say in how the rules judge the call.
struct CloudKitItemsHeldBack: Error, AttemptFailureStandIn {
    /// The partial failure of the last attempt that held items back.
    var partialFailure: any Error
    /// Whether the last attempt's operation threw it; `false` when it sent the rest of the items.
    var operationThrew: Bool

    var reportedError: any Error { self.partialFailure }
    var endsTheCallAsNotIdempotent: Bool { true }
}

/// A partial failure that names none of the items sent, as the failure of one batch attempt.
///
/// Its per-item errors are missing (no `CKPartialErrors` entry, as in an error an app re-created
/// from its domain and code) or keyed by IDs of another kind: some items may have been saved,
/// none is known to be. The attempt failed as a whole, and is sent again only when the batch is
/// idempotent.
struct CloudKitUnreadablePartialFailure: Error, UnderlyingErrorProviding, AttemptFailureStandIn {
    var partialFailure: any Error
    /// Whether sending the whole batch again is harmless: the word a lost response needs.
    var mayBeSentAgain: Bool

    var underlyingErrors: [any Error] { [self.partialFailure] }
    var reportedError: any Error { self.partialFailure }
}

extension CloudKitBatchResult: Sendable where ID: Sendable {}
