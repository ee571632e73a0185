public import Foundation

/// Bridges to `NSError` with a stable domain, code `1`, and both errors kept in its `userInfo`.
///
/// A plain `NSError` made from it (on Linux, `as NSError` keeps no Swift value), alone, below
/// another error's `NSUnderlyingErrorKey` or in an error of the app's, is still judged as the
/// Swift value is: never retried, by the ``DefaultRetryClassifier`` and the
/// ``SQLiteRetryClassifier`` alike, whatever the transaction failed with. The facts of the
/// errors it wraps (an HTTP 429 from a nested call, a `Retry-After`, a request that is not
/// idempotent) are read from them as from the Swift value's ``underlyingErrors``.
extension SQLiteRollbackError: CustomNSError, LocalizedError {
    /// `"Resilience.SQLiteRollbackError"`.
    public static var errorDomain: String { BridgedLibraryError.sqliteRollbackDomain }

    /// `1`: the type has one meaning.
    public var errorCode: Int { BridgedLibraryError.sqliteTransactionErrorCode }

    /// The description under `NSLocalizedDescriptionKey`, ``transactionError`` under
    /// `NSUnderlyingErrorKey` and ``rollbackError`` alone under `NSMultipleUnderlyingErrorsKey`,
    /// so that `NSError`'s `underlyingErrors` lists both, the transaction's first.
    public var errorUserInfo: [String: Any] {
        var userInfo = BridgedLibraryError.userInfo(description: self.description)
        userInfo[NSUnderlyingErrorKey] = self.transactionError
        userInfo[ErrorChain.multipleUnderlyingErrorsKey] = [self.rollbackError]
        return userInfo
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}

/// Bridges to `NSError` with a stable domain, code `1`, and the savepoint's error under
/// `NSUnderlyingErrorKey`.
///
/// A plain `NSError` made from it (on Linux, `as NSError` keeps no Swift value), alone, below
/// another error's `NSUnderlyingErrorKey` or in an error of the app's, is still judged as the
/// Swift value is: by the savepoint's error inside, so a full database stays final and a busy
/// one has the whole unit of work retried, and that error's facts (an HTTP 429, a
/// `Retry-After`, a request that is not idempotent) are read as from the Swift value.
extension SQLiteEnclosingTransactionLostError: CustomNSError, LocalizedError {
    /// `"Resilience.SQLiteEnclosingTransactionLostError"`.
    public static var errorDomain: String { BridgedLibraryError.sqliteEnclosingTransactionLostDomain }

    /// `1`: the type has one meaning.
    public var errorCode: Int { BridgedLibraryError.sqliteTransactionErrorCode }

    /// The description under `NSLocalizedDescriptionKey` and ``savepointError`` under
    /// `NSUnderlyingErrorKey`.
    public var errorUserInfo: [String: Any] {
        var userInfo = BridgedLibraryError.userInfo(description: self.description)
        userInfo[NSUnderlyingErrorKey] = self.savepointError
        return userInfo
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}

/// Bridges to `NSError` with a stable domain, code `1`, and the savepoint's error under
/// `NSUnderlyingErrorKey`.
///
/// A plain `NSError` made from it (on Linux, `as NSError` keeps no Swift value), alone, below
/// another error's `NSUnderlyingErrorKey` or in an error of the app's, is still judged as the
/// Swift value is: by the savepoint's error inside, so the ``SQLiteRetryClassifier`` of an
/// enclosing ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:executeSQL:operation:)``
/// still reads `SQLITE_BUSY_SNAPSHOT` and retries the whole transaction.
extension SQLiteEnclosingTransactionStaleError: CustomNSError, LocalizedError {
    /// `"Resilience.SQLiteEnclosingTransactionStaleError"`.
    public static var errorDomain: String { BridgedLibraryError.sqliteEnclosingTransactionStaleDomain }

    /// `1`: the type has one meaning.
    public var errorCode: Int { BridgedLibraryError.sqliteTransactionErrorCode }

    /// The description under `NSLocalizedDescriptionKey` and ``savepointError`` under
    /// `NSUnderlyingErrorKey`.
    public var errorUserInfo: [String: Any] {
        var userInfo = BridgedLibraryError.userInfo(description: self.description)
        userInfo[NSUnderlyingErrorKey] = self.savepointError
        return userInfo
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
