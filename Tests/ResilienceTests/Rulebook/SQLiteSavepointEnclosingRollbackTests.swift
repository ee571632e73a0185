import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A savepoint nested in the caller's transaction is never retried once SQLite has rolled back
/// that whole transaction: the retry would commit the nested work on its own.
@Suite(.timeLimit(.minutes(5)))
struct SQLiteSavepointAfterTheEnclosingTransactionIsGoneTests {
    /// A connection that knows whether it is inside a transaction, as `sqlite3_get_autocommit` tells.
    final class TransactionalConnection: Sendable {
        let log = Recorder<String>()
        private let state = Lock((inTransaction: false, savepointStartedTransaction: false, failuresLeft: 1))

        var isInTransaction: Bool { self.state.withLock { $0.inTransaction } }

        func execute(_ statement: String) throws {
            self.log.record(statement)
            try self.state.withLock { state in
                switch statement {
                case "BEGIN":
                    state.inTransaction = true
                case "SAVEPOINT inner":
                    // Outside a transaction, SAVEPOINT begins one (and RELEASE of it commits).
                    state.savepointStartedTransaction = !state.inTransaction
                    state.inTransaction = true
                case "RELEASE inner":
                    if state.savepointStartedTransaction { state.inTransaction = false }  // COMMIT
                case "UPDATE stock":
                    if state.failuresLeft > 0 {
                        state.failuresLeft -= 1
                        // SQLite may roll the whole transaction back on SQLITE_BUSY (see "Response To
                        // Errors Within A Transaction"): the caller's transaction is gone.
                        state.inTransaction = false
                        throw SQLiteError(code: 5)
                    }
                default:
                    break
                }
            }
        }
    }

    struct RetryEverything: RetryClassifier {
        func decision(for error: any Error, context: RetryContext) -> RetryDecision? { .retry }
    }

    private func policy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    /// Work nested in the caller's transaction must never be committed on its own: once SQLite has
    /// rolled the caller's transaction back, a retry that starts with `SAVEPOINT` would open a new
    /// transaction and `RELEASE` would commit it, outside the caller's.
    @Test func aSavepointIsNotRetriedOnceTheCallersTransactionIsGone() async throws {
        let connection = TransactionalConnection()
        let policy = try self.policy()
        try connection.execute("BEGIN")
        try connection.execute("INSERT orders")
        let isInTransaction: () -> Bool = { connection.isInTransaction }
        let error = try await #require(throws: SQLiteEnclosingTransactionLostError.self) {
            try await policy.writeTransaction(
                beginStatement: "SAVEPOINT inner", isInTransaction: isInTransaction, executeSQL: connection.execute
            ) {
                try connection.execute("UPDATE stock")
            }
        }
        #expect((error.savepointError as? SQLiteError)?.code == .busy)
        #expect(
            connection.log.values == ["BEGIN", "INSERT orders", "SAVEPOINT inner", "UPDATE stock"],
            "no retry, and no ROLLBACK TO a savepoint SQLite already discarded")
        #expect(await policy.statistics.stopReasons[.notRetryable] == 1)
    }

    /// The same with the real libsqlite3, where a full database (`PRAGMA max_page_count`) makes
    /// SQLite roll back the caller's whole transaction; the classifier retries `SQLITE_FULL`, so
    /// only the helper's check stands between the retry and a commit of the nested row alone.
    @Test func realSQLiteRollingBackTheCallersTransactionEndsTheSavepoint() async throws {
        struct RetryFullDatabase: RetryClassifier {
            func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
                (error as? SQLiteError)?.code.primary == .full ? .retry : nil
            }
        }
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE orders (item BLOB NOT NULL)")
        let pages = try #require(try connection.strings("PRAGMA page_count").first)
        // No page to spare: a small row fits the table's page, a large one does not.
        _ = try connection.strings("PRAGMA max_page_count = \(pages)")
        try connection.execute("BEGIN")
        try connection.execute("INSERT INTO orders (item) VALUES ('outer')")
        let attempts = Counter()
        let isInTransaction: () -> Bool = { connection.isInTransaction }
        let error = try await #require(throws: SQLiteEnclosingTransactionLostError.self) {
            try await self.policy().writeTransaction(
                beginStatement: "SAVEPOINT inner", classifier: RetryFullDatabase(), isInTransaction: isInTransaction,
                executeSQL: connection.execute
            ) {
                attempts.increment()
                let row = attempts.value == 1 ? "randomblob(100000)" : "'inner'"
                try connection.execute("INSERT INTO orders (item) VALUES (\(row))")
            }
        }
        #expect((error.savepointError as? SQLiteError)?.code.primary == .full)
        #expect(attempts.value == 1)
        #expect(!connection.isInTransaction, "SQLite rolled the caller's transaction back")
        #expect(try connection.strings("SELECT item FROM orders") == [], "nothing committed on its own")
    }

    /// No classifier can have it retried.
    @Test func aClassifierThatRetriesEverythingDoesNotRetryIt() async throws {
        let connection = TransactionalConnection()
        let policy = try self.policy()
        try connection.execute("BEGIN")
        let isInTransaction: () -> Bool = { connection.isInTransaction }
        await #expect(throws: SQLiteEnclosingTransactionLostError.self) {
            try await policy.writeTransaction(
                beginStatement: "SAVEPOINT inner", classifier: RetryEverything(), isInTransaction: isInTransaction,
                executeSQL: connection.execute
            ) {
                try connection.execute("UPDATE stock")
            }
        }
        #expect(connection.log.values.filter { $0 == "SAVEPOINT inner" }.count == 1)
    }

    /// A savepoint that began its own transaction (the caller held none) lost only its own work:
    /// it is retried as a transaction is.
    @Test func aSavepointOutsideAnyTransactionIsStillRetried() async throws {
        let connection = TransactionalConnection()
        let policy = try self.policy()
        let isInTransaction: () -> Bool = { connection.isInTransaction }
        try await policy.writeTransaction(
            beginStatement: "SAVEPOINT inner", isInTransaction: isInTransaction, executeSQL: connection.execute
        ) {
            try connection.execute("UPDATE stock")
        }
        #expect(
            connection.log.values == [
                "SAVEPOINT inner", "UPDATE stock", "SAVEPOINT inner", "UPDATE stock", "RELEASE inner",
            ])
        #expect(!connection.isInTransaction)
    }
}
