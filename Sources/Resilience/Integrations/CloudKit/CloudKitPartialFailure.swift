import Foundation

/// The per-item errors of a CloudKit `partialFailure`, split into the items
/// worth sending again and the items that failed for good.
///
/// A batch operation such as `CKModifyRecordsOperation` fails with
/// `partialFailure` when some items fail; their errors sit in `userInfo` under
/// `CKPartialErrors` (`CKPartialErrorsByItemIDKey`), keyed by item ID. Items
/// absent from that dictionary succeeded. In an atomic zone, the items that
/// were fine fail as `batchRequestFailed` collateral.
///
/// - ``retryableItems``: transient failures (network, busy zone, rate limit, …)
///   and `batchRequestFailed` collateral; send these again.
/// - ``failedItems``: everything else, such as `serverRecordChanged` (merge first),
///   `permissionFailure` or `invalidArguments`; retrying the same item would fail again.
///
/// ```swift
/// do {
///     try await save(records)
/// } catch {
///     guard let failure = CloudKitPartialFailure(error) else { throw error }
///     report(failure.failedItems)
///     let again = records.filter { failure.retryableItemIDs(as: CKRecord.ID.self).contains($0.recordID) }
///     try await policy.execute { try await save(again) }
/// }
/// ```
///
/// ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)`` does
/// this under a policy, re-sending only the retryable items on each attempt.
///
/// Which code is retryable follows ``CloudKitRetryClassifier``, passed to the initializer.
///
/// A partial failure whose per-item errors cannot be read (no `CKPartialErrors` entry, as in
/// an error re-created from its domain and code, or items keyed by IDs of another type than
/// yours) says that some items failed but not which: both sets are then empty, or hold none of
/// your IDs. Take the whole batch as failed, some of it perhaps saved; send it again only if
/// sending an item twice is harmless. ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)``
/// does so.
public struct CloudKitPartialFailure: CustomStringConvertible {
    /// The items worth sending again, by item ID, with their errors.
    public let retryableItems: [AnyHashable: any Error]
    /// The items that failed for good, by item ID, with their errors.
    public let failedItems: [AnyHashable: any Error]
    /// The longest retry-after advice of the partial failure itself, of the errors that wrap it
    /// (a `Retry-After` an app's sync layer kept on its own error), and of its retryable items, if any.
    ///
    /// The items that failed for good have no say: they are not sent again.
    public let retryAfter: Duration?
    /// The longest retry-after advice of the partial failure itself (`CKErrorRetryAfterKey` on the
    /// `partialFailure` error) and of the errors that wrap it, without its items'.
    let ownRetryAfter: Duration?
    /// The decision each item's error was split by, by item ID.
    let itemDecisions: [AnyHashable: RetryDecision]

    /// Splits the per-item errors of the partial failure in `error`'s chain, or returns `nil`
    /// when there is none.
    ///
    /// The outermost CloudKit error in the chain is the one read, as ``CloudKitRetryClassifier``
    /// reads it: `error` itself, or a partial failure wrapped in `NSUnderlyingErrorKey` or in an
    /// app's own error (see ``UnderlyingErrorProviding``).
    ///
    /// - Parameters:
    ///   - error: The operation's error.
    ///   - classifier: Decides which item errors are retryable.
    public init?(_ error: any Error, classifier: CloudKitRetryClassifier = CloudKitRetryClassifier()) {
        self.init(error, judgingItemsBy: classifier.itemDecision(for:))
    }

    /// Splits the per-item errors of the partial failure in `error`'s chain by the decision
    /// `judge` makes for each item's error, or returns `nil` when there is none.
    init?(_ error: any Error, judgingItemsBy judge: (any Error) -> RetryDecision) {
        guard let found = Self.partialFailureAndWrapperHint(in: error) else { return nil }
        let nsError = found.partialFailure
        var retryable: [AnyHashable: any Error] = [:]
        var failed: [AnyHashable: any Error] = [:]
        var decisions: [AnyHashable: RetryDecision] = [:]
        let ownHint = Self.longer(ErrorHints.ownRetryAfter(of: nsError), found.wrapperHint)
        var hint = ownHint
        let items = nsError.userInfo[CloudKitErrorCode.partialErrorsKey] as? [AnyHashable: Any] ?? [:]
        for (id, value) in items {
            guard let itemError = value as? any Error else { continue }
            let decision = judge(itemError)
            decisions[id] = decision
            if decision.isRetryable {
                retryable[id] = itemError
                hint = Self.longer(hint, ErrorHints.retryAfter(of: itemError))
            } else {
                failed[id] = itemError
            }
        }
        self.retryableItems = retryable
        self.failedItems = failed
        self.retryAfter = hint
        self.ownRetryAfter = ownHint
        self.itemDecisions = decisions
    }

    /// The outermost CloudKit error in `error`'s chain, when it is a partial failure, with the
    /// longest retry-after advice of the errors the walk meets before it (those that wrap it).
    static func partialFailureAndWrapperHint(in error: any Error) -> (partialFailure: NSError, wrapperHint: Duration?)?
    {
        // The common shape, CloudKit's error as it came, needs no walk.
        if let code = CloudKitErrorCode(error) { return code == .partialFailure ? (error as NSError, nil) : nil }
        var outermost: (code: CloudKitErrorCode, error: any Error)?
        var wrapperHint: Duration?
        ErrorChain.walkNodes(error) { node in
            if let code = CloudKitErrorCode(node.error) {
                outermost = (code, node.error)
                return false
            }
            wrapperHint = Self.longer(wrapperHint, ErrorHints.ownRetryAfter(of: node))
            return true
        }
        guard let outermost, outermost.code == .partialFailure else { return nil }
        return (outermost.error as NSError, wrapperHint)
    }

    /// The longer of two hints, either of which may be missing.
    static func longer(_ first: Duration?, _ second: Duration?) -> Duration? {
        guard let first else { return second }
        guard let second else { return first }
        return Swift.max(first, second)
    }

    /// Whether some items failed, and all of them retryably.
    ///
    /// Even then the library never re-sends the whole batch: the items that
    /// succeeded would be sent again. Re-send ``retryableItems`` only, for instance with
    /// ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)``.
    public var isRetryable: Bool {
        self.failedItems.isEmpty && !self.retryableItems.isEmpty
    }

    /// Whether the partial failure reports on any of `items`, as its retryable or failed items.
    func namesAny<ID: Hashable>(of items: [ID]) -> Bool {
        items.contains { self.retryableItems[AnyHashable($0)] != nil || self.failedItems[AnyHashable($0)] != nil }
    }

    /// The IDs of the retryable items that are of type `ID`, in no particular order.
    public func retryableItemIDs<ID: Hashable>(as type: ID.Type = ID.self) -> [ID] {
        self.retryableItems.keys.compactMap { $0.base as? ID }
    }

    /// The IDs of the items that failed for good and are of type `ID`, in no particular order.
    public func failedItemIDs<ID: Hashable>(as type: ID.Type = ID.self) -> [ID] {
        self.failedItems.keys.compactMap { $0.base as? ID }
    }

    /// `partialFailure: 2 retryable, 1 failed`.
    public var description: String {
        "partialFailure: \(self.retryableItems.count) retryable, \(self.failedItems.count) failed"
    }
}
