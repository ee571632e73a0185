/// An error from SQLite, carrying its result code and message.
///
/// Throw it from your SQLite wrapper where a `sqlite3_*` call fails; it adopts
/// ``RetryableError``, so every ``RetryPolicy`` retries `SQLITE_BUSY` and
/// `SQLITE_LOCKED` (and their extended codes) and nothing else. Constraint
/// violations, corruption, a full disk and misuse are final.
///
/// ```swift
/// func check(_ result: Int32, _ db: OpaquePointer) throws {
///     guard result == SQLITE_OK else {
///         throw SQLiteError(code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)))
///     }
/// }
/// ```
///
/// For another library's error type, use ``SQLiteRetryClassifier/init(resultCode:)``.
public struct SQLiteError: RetryableError, Hashable, CustomStringConvertible {
    /// The result code, primary or extended.
    public let code: SQLiteResultCode
    /// SQLite's message (`sqlite3_errmsg`), if known.
    public let message: String?

    /// Creates an error for `code`.
    public init(code: SQLiteResultCode, message: String? = nil) {
        self.code = code
        self.message = message
    }

    /// Creates an error for the integer result code SQLite returned.
    public init(code: Int32, message: String? = nil) {
        self.init(code: SQLiteResultCode(rawValue: code), message: message)
    }

    /// Whether the failure was `SQLITE_BUSY` or `SQLITE_LOCKED`, which a later attempt may get past.
    public var isRetryable: Bool { self.code.isBusyOrLocked }

    /// `SQLITE_BUSY (5): database is locked`.
    public var description: String {
        guard let message = self.message else { return self.code.description }
        return "\(self.code): \(message)"
    }
}
