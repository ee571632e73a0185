public import Foundation

/// Bridges to `NSError` with a stable domain, a code for the reason of the refusal, the
/// description and the retry-after hint.
///
/// ```swift
/// let error = LimiterRejectionError(limiterName: "api", reason: .noPermit, retryAfter: .seconds(2))
/// let bridged = error as NSError
/// // bridged.domain == LimiterRejectionError.errorDomain, bridged.code == 3,
/// // bridged.userInfo["Retry-After"] as? Double == 2
/// ```
///
/// A plain `NSError` made from it still reads as a local refusal of a request that never
/// left (``FailureAnalysis/isLocalRejection``), with its hint; one for
/// ``Reason/noTimeLeft`` or ``Reason/waitCutShort`` as a request never sent that no limiter refused.
extension LimiterRejectionError: CustomNSError, LocalizedError {
    /// `"Resilience.LimiterRejectionError"`.
    public static var errorDomain: String { BridgedLibraryError.limiterRejectionDomain }

    /// 1 for ``Reason/queueFull``, 2 for ``Reason/queueTimedOut``, 3 for ``Reason/noPermit``,
    /// 4 for ``Reason/noTimeLeft``, 5 for ``Reason/waitCutShort``.
    public var errorCode: Int {
        switch self.reason {
        case .queueFull: 1
        case .queueTimedOut: 2
        case .noPermit: 3
        case .noTimeLeft: BridgedLibraryError.noTimeLeftCode
        case .waitCutShort: BridgedLibraryError.waitCutShortCode
        default: 0
        }
    }

    /// The description under `NSLocalizedDescriptionKey`, and ``retryAfter`` in seconds
    /// under `"Retry-After"` when known. A ``Reason/queueTimedOut`` rejection a limiter made
    /// also keeps, under `"ResilienceTimeLimitEnd"`, when the queue's deadline was and when it
    /// ended the wait: a time limit enclosing the call that fired too passes on an error of the
    /// app's holding this one, bridged or not, when the queue's deadline came first.
    public var errorUserInfo: [String: Any] {
        BridgedLibraryError.userInfo(
            description: self.description, retryAfter: self.retryAfter, limitEnd: self.limitEnd)
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
