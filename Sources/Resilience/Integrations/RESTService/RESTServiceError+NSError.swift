public import Foundation

/// Bridges to `NSError` with a stable domain, the SDK's code as its code, and a `userInfo`
/// that keeps every fact the retry rules read.
///
/// A plain `NSError` made from it (on Linux, `as NSError` keeps no Swift value), alone, below
/// another error's `NSUnderlyingErrorKey` or in an error of the app's, is still judged as the
/// Swift value is: by its SDK code, its server code and its status (a 429 is never retried,
/// whatever a classifier says), with its retry-after hint; its ``underlying`` error stays below
/// it in the chain.
extension RESTServiceError: CustomNSError, LocalizedError {
    /// `"Resilience.RESTServiceError"`.
    public static var errorDomain: String { BridgedLibraryError.restServiceDomain }

    /// The SDK's code (``sdkCode``).
    public var errorCode: Int { self.sdkCode }

    /// The description under `NSLocalizedDescriptionKey`, ``httpStatus`` under `"HTTPStatusCode"`
    /// (the first of ``ErrorHints/httpStatusKeys``), ``retryAfter`` in seconds under
    /// `"Retry-After"`, ``serverErrorCode`` under `"ResilienceServerErrorCode"`, ``message``
    /// under `"ResilienceMessage"`, each when known, and ``underlying`` under
    /// `NSUnderlyingErrorKey`, bridged, so the chain is read below it.
    public var errorUserInfo: [String: Any] {
        var userInfo = BridgedLibraryError.userInfo(description: self.description, retryAfter: self.retryAfter)
        if let status = self.httpStatus { userInfo[BridgedLibraryError.httpStatusKey] = status }
        if let code = self.serverErrorCode { userInfo[BridgedLibraryError.serverErrorCodeKey] = code }
        if let message = self.message { userInfo[BridgedLibraryError.messageKey] = message }
        if let underlying = self.underlying { userInfo[NSUnderlyingErrorKey] = underlying as NSError }
        return userInfo
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
