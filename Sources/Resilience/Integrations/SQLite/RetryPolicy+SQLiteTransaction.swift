extension RetryPolicy {
    /// Runs a write transaction, retrying it from the start when it fails, and
    /// rolling it back before each retry.
    ///
    /// Each attempt runs `beginStatement`, then `operation`, then `COMMIT`. When
    /// any of them throws, the attempt runs `ROLLBACK` (ignoring its error: there
    /// may be no transaction to roll back) and the policy decides whether to try
    /// again. So a transaction that hits `SQLITE_BUSY` halfway leaves nothing
    /// behind, and its rows are written once, by the attempt that commits.
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
    ///     lock up front, so a busy database fails before any work is done.
    ///   - isolation: The actor the call runs on; inferred from the caller.
    ///   - executeSQL: Runs one SQL statement on the connection, throwing on failure (with an
    ///     ``SQLiteError``, or an error the policy's classifier understands).
    ///   - operation: The transaction's work. It may run more than once.
    /// - Returns: The value of the attempt that committed.
    /// - Throws: The last attempt's error, unchanged.
    public func writeTransaction<Value>(
        beginStatement: String = "BEGIN IMMEDIATE",
        isolation: isolated (any Actor)? = #isolation,
        executeSQL: (String) async throws -> Void,
        operation: () async throws -> Value
    ) async throws -> Value {
        try await self.execute {
            try await executeSQL(beginStatement)
            do {
                let value = try await operation()
                try await executeSQL("COMMIT")
                return value
            } catch {
                try? await executeSQL("ROLLBACK")
                throw error
            }
        }
    }
}
