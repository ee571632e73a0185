public import Foundation

/// Bridges to `NSError` with a stable domain, a code that says how far the request got,
/// the description and the request's idempotency.
///
/// A plain `NSError` made from it still reads as the end of a library time limit
/// (``Interruption/timeLimit``), with its ``requestDelivery`` and ``requestIdempotency``.
extension AttemptTimeoutError: CustomNSError, LocalizedError {
    /// `"Resilience.AttemptTimeoutError"`.
    public static var errorDomain: String { BridgedLibraryError.attemptTimeoutDomain }

    /// 1 when the request may have been sent; 2 when the limit fired while the attempt
    /// waited at one of the library's gates (``RequestDelivery/notSent``).
    public var errorCode: Int {
        self.requestDelivery == .notSent
            ? BridgedLibraryError.timedOutBeforeSendingCode : BridgedLibraryError.timedOutCode
    }

    /// The description under `NSLocalizedDescriptionKey`, and ``requestIdempotency`` under
    /// ``ErrorHints/requestIdempotencyKey`` when known.
    public var errorUserInfo: [String: Any] {
        BridgedLibraryError.userInfo(description: self.description, requestIdempotency: self.requestIdempotency)
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
