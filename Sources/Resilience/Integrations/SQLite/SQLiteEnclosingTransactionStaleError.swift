/// A savepoint failed because the read snapshot of the transaction it was nested in is stale:
/// only the whole transaction, started again, can succeed.
///
/// Thrown by ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:executeSQL:operation:)``
/// for a `SAVEPOINT name` begun inside a transaction the caller holds (`isInTransaction` read
/// `true` before it), when the savepoint's work failed with `SQLITE_BUSY_SNAPSHOT` (517). In WAL
/// mode a transaction that has read sees the database as it was then; once another connection
/// has committed, each write in that transaction fails so, until the transaction ends. Retrying
/// the savepoint inside it cannot help, so the call rolls back to the savepoint and ends at
/// once (``RetryStopReason/notRetryable``), whatever the classifier says.
///
/// The caller's transaction is still open, with its earlier work, but cannot write. Roll it
/// back and run it again from its `BEGIN`. A policy that retries the whole transaction does
/// so on its own: ``SQLiteRetryClassifier`` reads the busy code inside this error (through
/// ``UnderlyingErrorProviding``), so an enclosing
/// ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:executeSQL:operation:)``
/// rolls back and retries.
public struct SQLiteEnclosingTransactionStaleError: Error, UnderlyingErrorProviding, CustomStringConvertible {
    /// The savepoint's failure, `SQLITE_BUSY_SNAPSHOT` or an error of the caller's library that carries it.
    public let savepointError: any Error

    /// Creates the error from the savepoint's failure.
    public init(savepointError: any Error) {
        self.savepointError = savepointError
    }

    /// The savepoint's failure.
    public var underlyingErrors: [any Error] { [self.savepointError] }

    /// `the enclosing transaction must start again (its read snapshot is stale) after: …`.
    public var description: String {
        "the enclosing transaction must start again (its read snapshot is stale) after: \(self.savepointError)"
    }
}
