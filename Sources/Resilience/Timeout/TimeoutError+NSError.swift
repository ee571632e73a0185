public import Foundation

/// Bridges to `NSError` with a stable domain, a code,
/// the description and the request's idempotency.
///
/// A plain `NSError` made from it still reads as the end of a library time limit
/// (``Interruption/timeLimit``), whose request may have been sent, with its ``requestIdempotency``.
extension TimeoutError: CustomNSError, LocalizedError {
    /// `"Resilience.TimeoutError"`.
    public static var errorDomain: String { BridgedLibraryError.timeoutDomain }

    /// 1: the request may have been sent.
    public var errorCode: Int { BridgedLibraryError.timedOutCode }

    /// The description under `NSLocalizedDescriptionKey`, and ``requestIdempotency`` under
    /// ``ErrorHints/requestIdempotencyKey`` when known.
    public var errorUserInfo: [String: Any] {
        BridgedLibraryError.userInfo(description: self.description, requestIdempotency: self.requestIdempotency)
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
