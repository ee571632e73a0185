public import Foundation

/// Bridges to `NSError` with a stable domain, the status as its code, and a `userInfo` that
/// keeps every fact the retry rules read.
///
/// ```swift
/// let error = HTTPResponseError(statusCode: 429, headers: ["Retry-After": "30"])
/// let bridged = error as NSError
/// // bridged.domain == HTTPResponseError.errorDomain, bridged.code == 429,
/// // bridged.userInfo["HTTPStatusCode"] as? Int == 429,
/// // bridged.userInfo["Retry-After"] as? Double == 30
/// ```
///
/// A plain `NSError` made from it (on Linux, `as NSError` keeps no Swift value), alone, below
/// another error's `NSUnderlyingErrorKey` or in an error of the app's, still reads as the same
/// failure: its status (a 429 is never retried, whatever a classifier says), its retry-after
/// hint, its request's idempotency (a `POST` answered 503 is not sent again) and the delivery
/// it records.
extension HTTPResponseError: CustomNSError, LocalizedError {
    /// `"Resilience.HTTPResponseError"`.
    public static var errorDomain: String { BridgedLibraryError.httpResponseDomain }

    /// The status code (``statusCode``).
    public var errorCode: Int { self.statusCode }

    /// The description under `NSLocalizedDescriptionKey`, ``statusCode`` under
    /// `"HTTPStatusCode"` (the first of ``ErrorHints/httpStatusKeys``), ``retryAfter`` in seconds
    /// under `"Retry-After"` when known, ``requestIdempotency`` under
    /// ``ErrorHints/requestIdempotencyKey`` when known, ``recordedDelivery`` under
    /// ``ErrorHints/requestDeliveryKey`` when recorded, and ``url`` under
    /// `NSURLErrorFailingURLErrorKey` when known.
    public var errorUserInfo: [String: Any] {
        var userInfo = BridgedLibraryError.userInfo(
            description: self.description, retryAfter: self.retryAfter, requestIdempotency: self.requestIdempotency)
        userInfo[BridgedLibraryError.httpStatusKey] = self.statusCode
        if let recordedDelivery = self.recordedDelivery { userInfo[ErrorHints.requestDeliveryKey] = recordedDelivery }
        if let url = self.url { userInfo[NSURLErrorFailingURLErrorKey] = url }
        return userInfo
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
