/// Retries SQLite failures caused by another connection's lock, and nothing else.
///
/// `SQLITE_BUSY` and `SQLITE_LOCKED`, primary or extended, are retried; every
/// other SQLite code (constraint, corruption, full disk, misuse, …) stops.
/// Errors without an SQLite result code get `nil`.
///
/// It understands ``SQLiteError`` out of the box. For another library's error
/// type, say how to read the code:
///
/// ```swift
/// let classifier = SQLiteRetryClassifier { error in
///     (error as? DatabaseError)?.extendedResultCode.rawValue
/// }
/// let policy = try RetryPolicy(maximumAttempts: 5, classifier: classifier)
/// ```
///
/// Retry whole transactions, rolled back between attempts, with
/// ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:isolation:executeSQL:operation:)``.
public struct SQLiteRetryClassifier: RetryClassifier {
    private let resultCode: @Sendable (any Error) -> Int32?

    /// Creates a classifier that reads result codes from ``SQLiteError``.
    public init() {
        self.resultCode = { ($0 as? SQLiteError)?.code.rawValue }
    }

    /// Creates a classifier that reads result codes with `resultCode`.
    ///
    /// - Parameter resultCode: The SQLite result code an error carries, or `nil` for errors that
    ///   are not SQLite's. ``SQLiteError`` is understood even when this returns `nil`.
    public init(resultCode: @escaping @Sendable (any Error) -> Int32?) {
        self.resultCode = { error in resultCode(error) ?? (error as? SQLiteError)?.code.rawValue }
    }

    /// `.retry` for busy or locked, `.doNotRetry` for other SQLite codes, `nil` otherwise.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        guard let code = self.resultCode(error) else { return nil }
        return SQLiteResultCode(rawValue: code).isBusyOrLocked ? .retry : .doNotRetry
    }
}
