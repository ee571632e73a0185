/// Retries SQLite failures caused by another connection's lock, and nothing else.
///
/// `SQLITE_BUSY` and `SQLITE_LOCKED`, primary or extended, are retried; every
/// other SQLite code (constraint, corruption, full disk, misuse, …) stops.
/// The outermost error in the chain with a result code decides (see
/// ``UnderlyingErrorProviding``); errors with none in their chain get `nil`.
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
/// ``RetryPolicy/writeTransaction(beginStatement:classifier:isInTransaction:executeSQL:operation:)``,
/// which uses this classifier by default.
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
    ///
    /// The outermost error in `error`'s chain with a result code decides, so an ``SQLiteError``
    /// wrapped in an app's own error is judged as it would be thrown directly. The search does
    /// not look inside an ``SQLiteRollbackError``, which is never retried: the connection may
    /// still be inside the failed transaction. Nor inside one bridged to `NSError`.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        // The common shape, an error that carries its code itself, needs no walk.
        let code = self.resultCode(error) ?? self.codeInChain(of: error)
        guard let code else { return nil }
        return SQLiteResultCode(rawValue: code).isBusyOrLocked ? .retry : .doNotRetry
    }

    /// The result code `error` carries, or the outermost one in its chain, read as ``decision(for:context:)``
    /// reads it; `nil` when there is none.
    func resultCode(in error: any Error) -> SQLiteResultCode? {
        (self.resultCode(error) ?? self.codeInChain(of: error)).map(SQLiteResultCode.init(rawValue:))
    }

    /// The outermost result code below `error`, or `nil`; a rollback failure reads as a final code.
    private func codeInChain(of error: any Error) -> Int32? {
        // `SQLITE_ERROR`: final, whatever the rolled-back transaction failed with.
        let final = SQLiteResultCode.error.rawValue
        if error is SQLiteRollbackError { return final }
        var code: Int32?
        ErrorChain.walkNodes(error) { node in
            // A rollback failure bridged to a plain `NSError` (on Linux) is one still.
            code =
                node.error is SQLiteRollbackError || BridgedLibraryError.isSQLiteRollbackError(node)
                ? final : self.resultCode(node.error) ?? BridgedLibraryError.sqliteError(of: node)?.code.rawValue
            return code == nil
        }
        return code
    }
}
