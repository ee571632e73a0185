/// A transaction failed, and rolling it back failed too.
///
/// Thrown by ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:executeSQL:operation:)``
/// in place of retrying: the connection may still be inside the transaction, so
/// the next `BEGIN` would fail and the work must not run again on it. Close or
/// reset the connection. Both errors are kept; the facts of the transaction's
/// error (a busy database, an HTTP status in a nested call) are still read
/// through ``UnderlyingErrorProviding``.
public struct SQLiteRollbackError: Error, RetryableError, UnderlyingErrorProviding, CustomStringConvertible {
    /// Why the transaction failed.
    public let transactionError: any Error
    /// Why rolling it back failed.
    public let rollbackError: any Error

    /// Creates the error from the two failures.
    public init(transactionError: any Error, rollbackError: any Error) {
        self.transactionError = transactionError
        self.rollbackError = rollbackError
    }

    /// Always `false`: the connection's state is unknown.
    public var isRetryable: Bool { false }

    /// Both errors, the transaction's first.
    public var underlyingErrors: [any Error] { [self.transactionError, self.rollbackError] }

    /// `rollback failed (…) after: …`.
    public var description: String {
        "rollback failed (\(self.rollbackError)) after: \(self.transactionError)"
    }
}
