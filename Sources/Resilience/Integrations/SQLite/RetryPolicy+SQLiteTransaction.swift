extension RetryPolicy {
    /// Runs a write transaction, retrying it from the start when SQLite reports
    /// the database busy or locked, and rolling it back before each retry.
    ///
    /// Each attempt runs `beginStatement`, then `operation`, then the statement that
    /// ends it: `COMMIT` for a transaction, `RELEASE name` for a savepoint
    /// (`beginStatement: "SAVEPOINT name"`, for work nested in a transaction the
    /// caller already holds: committing would commit the caller's). When the work
    /// or the commit throws, the attempt rolls back (`ROLLBACK`, or `ROLLBACK TO name`
    /// then `RELEASE name`) and the policy decides whether to try again. So a
    /// transaction that hits `SQLITE_BUSY` halfway leaves nothing behind, and its
    /// rows are written once, by the attempt that commits.
    ///
    /// Only SQLite's busy and locked outcomes are retried unless `classifier` says
    /// otherwise: an error the work throws for its own reasons (a business rule, a
    /// constraint) ends the call at once. A rollback that fails ends the call with
    /// ``SQLiteRollbackError``, which carries both errors: the connection may still be
    /// inside the transaction, and retrying on it would fail or nest.
    ///
    /// An attempt that provably left nothing behind (SQLite refused its `BEGIN`, or its
    /// rollback succeeded) is retried even inside a call declared not idempotent, such as
    /// an `execute(idempotency: .notIdempotent)` around a `POST` whose result the
    /// transaction records: the transaction says so about its own attempts, as a request
    /// that was never sent (``RequestDelivery/notSent``) does. That word counts for this
    /// call's retries only: calls nested in `operation` still inherit the enclosing
    /// declaration, and the error the call ends with is the attempt's own, so the
    /// enclosing call does not run again. An attempt whose transaction SQLite ended on its
    /// own (`isInTransaction` reads `false` and no rollback was run) proves nothing, and
    /// follows the rules for its call's idempotency.
    ///
    /// `operation` runs again on each retry, so it must have no effect outside the
    /// database (no request sent, no file written, no state of the app changed): the
    /// rollback undoes its statements, and nothing else.
    ///
    /// A savepoint begun inside a transaction the caller holds is not retried once SQLite
    /// has rolled back that whole transaction (`isInTransaction` read `true` before the
    /// `SAVEPOINT` and `false` after the failure): the call ends at once with
    /// ``SQLiteEnclosingTransactionLostError`` (``RetryStopReason/notRetryable``), since
    /// a retry's `SAVEPOINT` would open a new transaction and its `RELEASE` would commit
    /// the nested work on its own.
    ///
    /// Set the connection's busy timeout low (or zero) and let the policy do the
    /// waiting: its backoff has jitter, a deadline and cancellation, and does not
    /// hold a thread.
    ///
    /// ```swift
    /// try await policy.writeTransaction(executeSQL: db.execute) {
    ///     try db.execute("INSERT INTO orders(id, total) VALUES (42, 990)")
    ///     try db.execute("UPDATE stock SET count = count - 1 WHERE item = 7")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - beginStatement: Starts the transaction; `BEGIN IMMEDIATE` (the default) takes the write
    ///     lock up front, so a busy database fails before any work is done. `SAVEPOINT name`
    ///     runs the work in a savepoint instead.
    ///   - classifier: Decides which failures are retried; defaults to ``SQLiteRetryClassifier``,
    ///     which retries busy and locked only. Errors it has no opinion on are not retried. The
    ///     ``Rulebook``'s rules apply first, as everywhere.
    ///   - isInTransaction: Whether the connection is inside a transaction now
    ///     (`sqlite3_get_autocommit(db) == 0`), if you can tell; the rollback is then skipped when
    ///     SQLite already rolled the transaction back on its own, as it does on some errors, and a
    ///     savepoint whose enclosing transaction SQLite rolled back is not retried.
    ///   - executeSQL: Runs one SQL statement on the connection, throwing on failure (with an
    ///     ``SQLiteError``, or an error the classifier understands).
    ///   - operation: The transaction's work. It may run more than once, so it must have no
    ///     effect outside the database.
    /// - Returns: The value of the attempt that committed.
    /// - Throws: The last attempt's error, unchanged; ``SQLiteRollbackError`` when rolling back
    ///   failed; ``SQLiteEnclosingTransactionLostError`` when SQLite rolled back the transaction a
    ///   savepoint was nested in.
    public nonisolated(nonsending) func writeTransaction<Value>(
        beginStatement: String = "BEGIN IMMEDIATE",
        classifier: any RetryClassifier = SQLiteRetryClassifier(),
        isInTransaction: (() -> Bool)? = nil,
        executeSQL: (String) async throws -> Void,
        operation: () async throws -> Value
    ) async throws -> Value {
        let statements = SQLiteTransactionStatements(beginStatement: beginStatement)
        // What each attempt knows about its own failure, for this call's decisions only.
        let report = AttemptReport()
        var options = CallOptions(idempotency: nil, classifier: classifier)
        options.attemptReport = report
        return try await self.run(isolation: #isolation, firstFailure: nil, options: options) { _ in
            // A savepoint inside the caller's transaction must not outlive that transaction.
            let nestedInCallers = statements.isSavepoint && isInTransaction?() == true
            let callersTransactionIsGone = { nestedInCallers && isInTransaction?() == false }
            do {
                try await executeSQL(statements.begin)
            } catch {
                if callersTransactionIsGone() {
                    report.report(.mustNotRepeat)
                    throw SQLiteEnclosingTransactionLostError(savepointError: error)
                }
                // Refused at its start: the attempt did nothing.
                report.report(.noEffect)
                throw error
            }
            do {
                let value = try await operation()
                try await executeSQL(statements.commit)
                return value
            } catch {
                if callersTransactionIsGone() {
                    report.report(.mustNotRepeat)
                    throw SQLiteEnclosingTransactionLostError(savepointError: error)
                }
                guard isInTransaction?() ?? true else {
                    // SQLite ended the transaction on its own; nothing is proven about what it kept.
                    throw error
                }
                do {
                    for statement in statements.rollback { try await executeSQL(statement) }
                } catch let rollbackError {
                    report.report(.mustNotRepeat)
                    throw SQLiteRollbackError(transactionError: error, rollbackError: rollbackError)
                }
                // Rolled back: the attempt left nothing behind.
                report.report(.noEffect)
                throw error
            }
        }.get()
    }
}

/// The statements that begin, commit and roll back one transaction or savepoint.
struct SQLiteTransactionStatements: Sendable, Hashable {
    var begin: String
    var commit: String
    var rollback: [String]
    /// Whether the statements run a savepoint rather than a transaction.
    var isSavepoint: Bool

    init(beginStatement: String) {
        self.begin = beginStatement
        let words = beginStatement.split(whereSeparator: { $0.isWhitespace || $0 == ";" })
        if words.count >= 2, words[0].uppercased() == "SAVEPOINT" {
            let name = String(words[1])
            self.commit = "RELEASE \(name)"
            // ROLLBACK TO leaves the savepoint on the stack; RELEASE pops it.
            self.rollback = ["ROLLBACK TO \(name)", "RELEASE \(name)"]
            self.isSavepoint = true
        } else {
            self.commit = "COMMIT"
            self.rollback = ["ROLLBACK"]
            self.isSavepoint = false
        }
    }
}
