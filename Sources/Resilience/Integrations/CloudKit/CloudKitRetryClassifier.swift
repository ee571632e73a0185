/// Retry rules for CloudKit errors (`NSError` in `CKErrorDomain`), following
/// Apple's guidance for each code.
///
/// | code | decision |
/// |---|---|
/// | `networkUnavailable`, `networkFailure`, `serviceUnavailable`, `requestRateLimited`, `zoneBusy` | retry, waiting at least `CKRetryAfter` when present |
/// | `batchRequestFailed` | retry: the item failed only because another item in its atomic batch did |
/// | `serverResponseLost` | retry only when the operation is idempotent: as the call's declaration says, its own or an enclosing call's; without one, as `operationIsIdempotent` says; otherwise stop: ``RetryStopReason/notIdempotent`` (CloudKit may have applied the request: learn whether it did before sending it again) |
/// | `partialFailure` | stop (``RetryStopReason/partialFailure``): re-sending the whole batch would repeat the items that succeeded; re-send only ``CloudKitPartialFailure/retryableItems``, for instance with ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)`` |
/// | `partialFailure` whose every item is a zone error (`userDeletedZone`, `zoneNotFound`, the reset flag) | stop: ``RetryStopReason/setupRequired`` (create the zone, then re-send the failed items; a mix with other final errors stays ``RetryStopReason/partialFailure``) |
/// | `notAuthenticated` | stop: ``RetryStopReason/authenticationRequired`` |
/// | `userDeletedZone`, `zoneNotFound` | stop: ``RetryStopReason/setupRequired`` (create the zone and its subscriptions, then send again) |
/// | any code with ``CloudKitErrorCode/userDidResetEncryptedDataKey`` set | stop: ``RetryStopReason/setupRequired`` (the person reset their encrypted data: create the zone again and upload its data again) |
/// | `operationCancelled` | stop: ``RetryStopReason/cancelled`` |
/// | anything else | stop |
///
/// Some codes need the app to act before a retry can help, so they stop here:
/// `serverRecordChanged` (merge into the server's record, then save that: see
/// ``CloudKitRecordConflict``), `limitExceeded` (split the batch in half),
/// `changeTokenExpired` (refetch), `accountTemporarilyUnavailable` (wait for the
/// account-changed notification), and the two zone codes above. An error of any code
/// carrying CloudKit's flag that the person reset their encrypted data
/// (``CloudKitErrorCode/userDidResetEncryptedDataKey``) is judged as `zoneNotFound`: the
/// reset deleted the zone.
/// The outermost CloudKit error in the error's chain is judged (`NSUnderlyingErrorKey`,
/// the library's wrappers, an app's own error: see ``UnderlyingErrorProviding``);
/// errors with none in their chain get `nil`.
///
/// ```swift
/// let policy = try RetryPolicy(classifier: CloudKitRetryClassifier(operationIsIdempotent: true))
/// let records = try await policy.execute { try await database.records(for: ids) }
/// ```
///
/// ``DefaultRetryClassifier`` applies these rules with `operationIsIdempotent` false.
public struct CloudKitRetryClassifier: RetryClassifier {
    /// The codes for conditions expected to pass, retried with backoff.
    public static let transientCodes: Set<CloudKitErrorCode> = [
        .networkUnavailable, .networkFailure, .serviceUnavailable, .requestRateLimited, .zoneBusy,
    ]

    /// Whether the operation may safely run twice, which makes `serverResponseLost` retryable
    /// for a call that declares nothing.
    ///
    /// A call's declaration wins over it (``RetryContext/idempotencyIsDeclared``):
    /// `execute(idempotency: .idempotent)`, or a call nested in one declared so, retries a lost
    /// response with the flag false; one declared `.notIdempotent` never sends it again (the
    /// ``Rulebook`` stops it) with the flag true. The flag is the classifier's word for the calls
    /// that say nothing, and is false by default: a lost response may follow a request CloudKit
    /// applied, so it is sent again only on an explicit word. Without it, the call stops with
    /// ``RetryStopReason/notIdempotent``: its outcome is unknown, not a failure that will repeat.
    ///
    /// ``RetryPolicy/retryingFailedItems(_:idempotency:operation:)`` reads it the same way for a
    /// batch that declares nothing: an item whose response was lost, and a batch whose partial
    /// failure named none of its items, are sent again only when it is true (and this classifier
    /// is the one that decides for the error, as for a whole call). A classifier's own
    /// ``RetryClassifier/declaredIdempotency`` (`HTTPRetryClassifier(method: "GET")`) does not
    /// stand in for it: an HTTP method says nothing about a CloudKit operation.
    public let operationIsIdempotent: Bool

    /// Creates the classifier.
    ///
    /// - Parameter operationIsIdempotent: Whether running the operation twice has the same effect
    ///   as once (a fetch, or a save with `.ifServerRecordUnchanged`); it makes a lost response retryable.
    public init(operationIsIdempotent: Bool = false) {
        self.operationIsIdempotent = operationIsIdempotent
    }

    /// The decision for a CloudKit error, or `nil` when no error in `error`'s chain is one.
    ///
    /// The outermost CloudKit error in the chain decides, so a CloudKit error wrapped in
    /// `NSUnderlyingErrorKey` or in an app's own error is judged as it would be thrown directly.
    /// A lost response (`serverResponseLost`) is retried as the call's declaration says, when
    /// `context` has one (``RetryContext/idempotencyIsDeclared``), else as ``operationIsIdempotent`` says.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        // A policy has already read the chain once; reuse its reading rather than walk it again.
        let analysis = context.analysis(of: error)
        guard let code = analysis.cloudKitCode else { return nil }
        return self.judging(context).decision(forCodeInChain: code, everyItemNeedsSetup: analysis.everyItemNeedsSetup)
    }

    /// The rules for a call with `context`: a call's declaration of its idempotency, its own or an
    /// enclosing call's (``RetryContext/idempotencyIsDeclared``), says whether a lost response may
    /// be sent again; without one, ``operationIsIdempotent`` does.
    func judging(_ context: RetryContext) -> CloudKitRetryClassifier {
        guard context.idempotencyIsDeclared else { return self }
        return CloudKitRetryClassifier(operationIsIdempotent: context.idempotency.isIdempotent)
    }

    /// The decision for the outermost CloudKit error of a chain, a partial failure included.
    ///
    /// - Parameter everyItemNeedsSetup: Whether `code` is a partial failure each of whose items
    ///   failed for want of its zone (``FailureAnalysis``'s reading of the chain).
    func decision(forCodeInChain code: CloudKitErrorCode, everyItemNeedsSetup: Bool) -> RetryDecision {
        if code == .partialFailure {
            // The items that succeeded are in no error: a whole-batch retry would send them again.
            // When every item that failed lacks its zone, that is what the app must see to first.
            return .doNotRetry(because: everyItemNeedsSetup ? .setupRequired : .partialFailure)
        }
        return self.decision(for: code)
    }

    /// The decision for an error with `code`, other than a partial failure, for a call that
    /// declares nothing: a lost response is retried as ``operationIsIdempotent`` says.
    ///
    /// A lost response that is not retried stops with ``RetryStopReason/notIdempotent``, as an
    /// item of a batch held back for it does: CloudKit may have applied the request, so its
    /// outcome is unknown (``RetryAdvice/Reason/outcomeUnknown``), not a failure that will repeat.
    public func decision(for code: CloudKitErrorCode) -> RetryDecision {
        if Self.transientCodes.contains(code) || code == .batchRequestFailed { return .retry }
        switch code {
        case .serverResponseLost: return self.operationIsIdempotent ? .retry : .doNotRetry(because: .notIdempotent)
        case .notAuthenticated: return .doNotRetry(because: .authenticationRequired)
        case .userDeletedZone, .zoneNotFound: return .doNotRetry(because: .setupRequired)
        case .operationCancelled: return .doNotRetry(because: .cancelled)
        default: return .doNotRetry
        }
    }

    /// How far a request got when CloudKit failed it with `code`.
    ///
    /// `networkUnavailable` happens before anything is sent; `networkFailure` and
    /// `serverResponseLost` may follow a request the server received. CloudKit refused
    /// the request before it had any effect when it answers `notAuthenticated` (it stands
    /// for an HTTP 401), `batchRequestFailed` (the item was rolled back with its atomic
    /// batch, because another item failed) or a zone code (`userDeletedZone`,
    /// `zoneNotFound`, or any code with ``CloudKitErrorCode/userDidResetEncryptedDataKey`` set:
    /// there was no zone to write to) (``RequestDelivery/refused``).
    /// Every other code is CloudKit's answer.
    static func delivery(for code: CloudKitErrorCode) -> RequestDelivery {
        switch code {
        case .networkUnavailable: .notSent
        case .networkFailure, .serverResponseLost: .mayHaveBeenSent
        case .notAuthenticated, .batchRequestFailed, .userDeletedZone, .zoneNotFound: .refused
        case .operationCancelled: .unknown
        default: .answered
        }
    }

    /// Whether one item's error, from a partial failure, is worth retrying.
    ///
    /// The outermost CloudKit error in the item's chain decides, as it does for a whole
    /// operation's error: the item's error itself, or one it wraps in `NSUnderlyingErrorKey` or
    /// in an app's own error (see ``UnderlyingErrorProviding``). An item with no CloudKit error
    /// in its chain, or whose is itself a partial failure, is not.
    public func isRetryable(itemError error: any Error) -> Bool {
        self.itemDecision(for: error).isRetryable
    }

    /// The decision for one item's error, by the outermost CloudKit error in its chain.
    func itemDecision(for error: any Error) -> RetryDecision {
        guard let code = Self.judgedCode(in: error), code != .partialFailure else { return .doNotRetry }
        return self.decision(for: code)
    }

    /// The decision for one item's error as a whole call with the same error, judged by
    /// `classifier` with `context`, gets it: the classifier's, whatever it is made of (a link in
    /// front of a CloudKit classifier that speaks for the error, an app's own composite), else the
    /// default rules'. An item with no CloudKit error in its chain, or whose is itself a partial
    /// failure, is not retried, as ``isRetryable(itemError:)`` says.
    static func itemDecision(
        for error: any Error, by classifier: any RetryClassifier, context: RetryContext
    ) -> RetryDecision {
        guard let code = Self.judgedCode(in: error), code != .partialFailure else { return .doNotRetry }
        let analysis = FailureAnalysis(error, isCancelled: false, timeLimitFired: false)
        var context = context
        context.idempotency = context.idempotency.tightened(by: analysis.requestIdempotency)
        context.analysis = analysis
        return classifier.decision(for: error, context: context)
            ?? DefaultRetryClassifier().decision(for: error, context: context) ?? .retry
    }

    /// Why an item that is not worth retrying is not sent again, given its `decision`:
    /// ``RetryStopReason/tooManyRequests`` for an HTTP 429, else the decision's reason (what its
    /// CloudKit error asks for: ``RetryStopReason/setupRequired``,
    /// ``RetryStopReason/authenticationRequired``, ``RetryStopReason/notIdempotent`` for a lost
    /// response, which may have been applied, …), else ``RetryStopReason/notRetryable``.
    static func stopReason(forItemError error: any Error, decision: RetryDecision) -> RetryStopReason {
        if ErrorHints.isTooManyRequests(error) { return .tooManyRequests }
        return decision.stopReason ?? .notRetryable
    }

    /// The code the rules judge the outermost CloudKit error in `error`'s chain by, or `nil`.
    static func judgedCode(in error: any Error) -> CloudKitErrorCode? {
        var code: CloudKitErrorCode?
        ErrorChain.walkNodes(error) { node in
            code = CloudKitErrorCode(judging: node)
            return code == nil
        }
        return code
    }
}
