/// A savepoint failed, and SQLite rolled back the whole transaction it was nested in.
///
/// Thrown by ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:executeSQL:operation:)``
/// for a `SAVEPOINT name` begun inside a transaction the caller holds, when the savepoint's
/// work failed and `isInTransaction` then reads `false`. SQLite documents that it may roll a
/// whole transaction back on its own after some errors (`SQLITE_FULL`, `SQLITE_IOERR`,
/// `SQLITE_BUSY`, `SQLITE_NOMEM`). The caller's earlier work in that transaction is gone, so
/// the savepoint is not retried: the retry's `SAVEPOINT` would open a new transaction, and its
/// `RELEASE` would commit the nested work on its own. The call ends at once
/// (``RetryStopReason/notRetryable``), whatever the classifier says.
///
/// The connection is outside any transaction. Do not go on with the caller's transaction:
/// its statements would run, and commit, one by one. Start the whole unit of work again,
/// from its own `BEGIN`, if the error inside says that may succeed. The facts of that error
/// (a busy database) are read through ``UnderlyingErrorProviding``.
public struct SQLiteEnclosingTransactionLostError: Error, UnderlyingErrorProviding, CustomStringConvertible {
    /// The savepoint's failure, after which SQLite rolled back the enclosing transaction.
    public let savepointError: any Error

    /// Creates the error from the savepoint's failure.
    public init(savepointError: any Error) {
        self.savepointError = savepointError
    }

    /// The savepoint's failure.
    public var underlyingErrors: [any Error] { [self.savepointError] }

    /// `the enclosing transaction was rolled back after: …`.
    public var description: String {
        "the enclosing transaction was rolled back after: \(self.savepointError)"
    }
}
