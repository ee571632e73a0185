public import Foundation

/// Bridges to `NSError` with a stable domain, a code, the description, the request's
/// idempotency and the operation's late error.
///
/// A plain `NSError` made from it, or copied from that with the same domain, code and
/// `userInfo`, still reads as the end of a library time limit (``Interruption/timeLimit``),
/// whose request may have been sent, with its ``requestIdempotency``; and ``FailureAnalysis``
/// and ``ErrorHints`` read from its ``operationError`` what they read from the Swift value's:
/// a 429, a retry-after hint, an offline device and its request's idempotency. The late error
/// is not below it in the chain, so a classifier still judges a time-out.
extension AttemptTimeoutError: CustomNSError, LocalizedError {
    /// `"Resilience.AttemptTimeoutError"`.
    public static var errorDomain: String { BridgedLibraryError.attemptTimeoutDomain }

    /// 1: the request may have been sent.
    public var errorCode: Int { BridgedLibraryError.timedOutCode }

    /// The description under `NSLocalizedDescriptionKey`, ``requestIdempotency`` under
    /// ``ErrorHints/requestIdempotencyKey`` when known, and ``operationError`` under
    /// ``ErrorHints/lateOperationErrorKey`` when there is one.
    ///
    /// The late error is kept as it was thrown, not bridged: a Swift error that says its facts
    /// through protocols (``HTTPStatusReporting``, ``RetryAfterProviding``) keeps them. When a
    /// policy nested in the attempt had been waiting to retry it, how long it had waited is kept
    /// too, as a `Duration` under `"ResilienceLateOperationErrorAge"`, so that its retry-after
    /// hint, read from the `NSError` or from a copy made with the same `userInfo`, still runs from
    /// its response, as it does from the Swift value. An error a library time limit threw also
    /// keeps, under `"ResilienceTimeLimitEnd"`, when its deadline was and when it ended the call:
    /// a time limit enclosing the call that fired too passes on an error of the app's holding this
    /// one, bridged or not, when this limit's deadline came first.
    public var errorUserInfo: [String: Any] {
        BridgedLibraryError.userInfo(
            description: self.description, requestIdempotency: self.requestIdempotency,
            lateOperationError: self.operationError, lateOperationErrorAge: self.operationErrorAge,
            earlierRequestMayHaveLeft: self.earlierRequestMayHaveLeft, limitEnd: self.limitEnd)
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
