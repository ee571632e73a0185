public import Foundation

/// Bridges to `NSError` with a stable domain and the result code as its code.
///
/// A plain `NSError` made from it (on Linux, `as NSError` keeps no Swift value), alone, below
/// another error's `NSUnderlyingErrorKey` or in an error of the app's, is still judged as the
/// Swift value is: `SQLITE_BUSY` and `SQLITE_LOCKED` are retried, every other code is final,
/// by the ``DefaultRetryClassifier`` and the ``SQLiteRetryClassifier`` alike.
extension SQLiteError: CustomNSError, LocalizedError {
    /// `"Resilience.SQLiteError"`.
    public static var errorDomain: String { BridgedLibraryError.sqliteDomain }

    /// The result code, primary or extended (``code``).
    public var errorCode: Int { Int(self.code.rawValue) }

    /// The description under `NSLocalizedDescriptionKey`, and ``message`` under
    /// `"ResilienceMessage"` when known.
    public var errorUserInfo: [String: Any] {
        var userInfo = BridgedLibraryError.userInfo(description: self.description)
        if let message = self.message { userInfo[BridgedLibraryError.messageKey] = message }
        return userInfo
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
