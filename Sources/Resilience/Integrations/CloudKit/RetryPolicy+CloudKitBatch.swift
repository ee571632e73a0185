extension RetryPolicy {
    /// Sends a batch of items, and after a CloudKit partial failure re-sends only
    /// the items worth retrying, never the ones that succeeded.
    ///
    /// Each attempt calls `operation` with the items still to send: all of them at
    /// first, then only the retryable items of the last partial failure
    /// (``CloudKitPartialFailure/retryableItems``), after the longest retry-after
    /// hint among them. Items that failed for good leave the batch at once. The
    /// ``Rulebook`` applies as everywhere: an item that failed with HTTP 429 ends
    /// the call, and so does a cancelled task.
    ///
    /// ```swift
    /// let result = try await policy.retryingFailedItems(recordIDs) { ids in
    ///     try await save(records.filter { ids.contains($0.recordID) })
    /// }
    /// for (id, error) in result.failedItems { report(id, error) }
    /// ```
    ///
    /// - Parameters:
    ///   - items: The IDs of the items to send, as CloudKit keys its per-item errors (`CKRecord.ID`, …).
    ///   - idempotency: Whether sending an item twice is harmless; `nil` inherits or assumes so.
    ///   - operation: Sends the given items; throws CloudKit's error, a partial failure included.
    /// - Returns: Which items were sent and which failed, with their errors.
    /// - Throws: The last error when an attempt fails as a whole (not a partial failure)
    ///   and the policy stops; `CancellationError` when cancelled.
    public nonisolated(nonsending) func retryingFailedItems<ID: Hashable>(
        _ items: [ID],
        idempotency: Idempotency? = nil,
        operation: ([ID]) async throws -> Void
    ) async throws -> CloudKitBatchResult<ID> {
        var remaining = items
        var failed: [ID: any Error] = [:]
        var attempts = 0
        let classifier = ChainedRetryClassifier([
            ClosureRetryClassifier { error, _ in
                guard let retry = error as? CloudKitItemsToRetry else { return nil }
                return retry.retryAfter.map { .retry(after: $0) } ?? .retry
            },
            self.classifier, DefaultRetryClassifier(),
        ])
        // An ordinary nonisolated attempt, as `operation` is, so that it may hand `operation`
        // the items, which need not be `Sendable`.
        let outcome = await self.runConcurrentAttempt(
            isolation: #isolation, firstFailure: nil,
            options: CallOptions(idempotency: idempotency, classifier: classifier)
        ) { (_: AttemptDeadline) async throws in
            attempts += 1
            do {
                try await operation(remaining)
            } catch {
                guard let partial = CloudKitPartialFailure(error) else { throw error }
                var retryable: [ID] = []
                var itemErrors: [any Error] = []
                for id in remaining {
                    if let itemError = partial.failedItems[AnyHashable(id)] {
                        failed[id] = itemError
                    } else if let itemError = partial.retryableItems[AnyHashable(id)] {
                        retryable.append(id)
                        itemErrors.append(itemError)
                    }
                }
                remaining = retryable
                // Nothing left to send ends the call, unless the rules must see it (a 429 among the items).
                guard !retryable.isEmpty || FailureAnalysis(error).isTooManyRequests else { return }
                throw CloudKitItemsToRetry(
                    itemErrors: itemErrors, retryAfter: partial.retryAfter, partialFailure: error)
            }
            remaining = []
        }
        switch outcome.result {
        case .success:
            break
        case .failure(let error as CloudKitItemsToRetry):
            // The policy stopped with items still failing: they failed, with their last errors.
            for (id, itemError) in zip(remaining, error.itemErrors) { failed[id] = itemError }
            remaining = []
        case .failure(let error):
            throw error
        }
        let failedIDs = Set(failed.keys)
        return CloudKitBatchResult(
            sentItems: items.filter { !failedIDs.contains($0) }, failedItems: failed, attempts: attempts,
            stopReason: outcome.stopReason)
    }
}

/// What ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)`` did with a batch.
public struct CloudKitBatchResult<ID: Hashable> {
    /// The items CloudKit accepted, in the order given.
    public let sentItems: [ID]
    /// The items that failed for good, or were still failing when the policy stopped, with their errors.
    public let failedItems: [ID: any Error]
    /// How many times the operation ran.
    public let attempts: Int
    /// Why the policy stopped: ``RetryStopReason/succeeded`` when the last attempt had no failure left to retry.
    public let stopReason: RetryStopReason

    /// Creates a result; the policy makes these, tests may too.
    public init(sentItems: [ID], failedItems: [ID: any Error], attempts: Int, stopReason: RetryStopReason) {
        self.sentItems = sentItems
        self.failedItems = failedItems
        self.attempts = attempts
        self.stopReason = stopReason
    }
}

/// The retryable items of a partial failure, as the failure of one batch attempt.
///
/// Its chain holds the partial failure, so the ``Rulebook`` sees every item's
/// facts (an item's HTTP 429 ends the call).
struct CloudKitItemsToRetry: Error, RetryAfterProviding, UnderlyingErrorProviding {
    var itemErrors: [any Error]
    var retryAfter: Duration?
    var partialFailure: any Error

    var underlyingErrors: [any Error] { [self.partialFailure] }
}

extension CloudKitBatchResult: Sendable where ID: Sendable {}
