import CSQLite
import Resilience
import ResilienceTesting
import Testing

/// Which begin statements the transaction helper takes, against the real libsqlite3: only one
/// that starts a transaction or a savepoint and does nothing else, since the helper's promise
/// (a failed attempt leaves nothing behind, and its rows are written once) rests on the work
/// running inside it.
@Suite(.timeLimit(.minutes(5)))
struct SQLiteBeginStatementTests {
    private func policy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    /// Every spelling of `BEGIN` SQLite takes starts a transaction there, and the helper runs the
    /// work inside it and commits it.
    @Test(arguments: [
        "BEGIN", "begin", "BEGIN DEFERRED", "Begin Immediate", "BEGIN EXCLUSIVE;", "BEGIN TRANSACTION",
        "BEGIN IMMEDIATE TRANSACTION;;", "BEGIN TRANSACTION batch", #"begin exclusive transaction "night batch";"#,
        "/* nightly */ BEGIN -- take the lock\n IMMEDIATE; ; -- done", "BEGIN/**/TRANSACTION/**/;",
        "BEGIN TRANSACTION; /* never closed", "BEGIN TRANSACTION end", "BEGIN IMMEDIATE TRANSACTION savepoint",
    ])
    func everyBeginSQLiteTakesRunsTheWorkInsideItsTransaction(beginStatement: String) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE t (x TEXT)")
        let inTransaction = Recorder<Bool>()
        try await self.policy().writeTransaction(
            beginStatement: beginStatement, isInTransaction: { connection.isInTransaction },
            executeSQL: connection.execute,
            operation: {
                inTransaction.record(connection.isInTransaction)
                try connection.execute("INSERT INTO t VALUES ('work')")
            })
        #expect(inTransaction.values == [true])
        #expect(!connection.isInTransaction)
        #expect(try connection.strings("SELECT x FROM t") == ["work"])
    }

    /// Statements that begin nothing, end a transaction, or do more after beginning one are
    /// refused, running nothing; SQLite would run most of them without complaint.
    @Test(arguments: [
        "", "   ", "-- begin", "/* BEGIN */", ";", "SELECT 1", "COMMIT", "END", "ROLLBACK", "SAVEPOINTS",
        "BEGINIMMEDIATE", "BEGIN NOW", "BEGIN IMMEDIATE DEFERRED", "BEGIN TRANSACTION a b", "; BEGIN",
        "BEGIN; INSERT INTO t VALUES ('begun')", "BEGIN IMMEDIATE; SELECT 1", "BEGIN TRANSACTION; COMMIT",
        "SAVEPOINT a; BEGIN", "BEGİN", "SAVEPOINT select", "BEGIN TRANSACTION select", "SAVEPOINT from",
        "SAVEPOINT Transaction", "BEGIN TRANSACTION transaction", "SAVEPOINT savepoint",
    ])
    func aStatementThatIsNotOneBeginOrSavepointIsRefusedBeforeAnythingRuns(beginStatement: String) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE t (x TEXT)")
        let statements = Recorder<String>()
        let bodies = Counter()
        let error = try await #require(throws: ConfigurationError.self) {
            try await self.policy().writeTransaction(
                beginStatement: beginStatement, isInTransaction: { connection.isInTransaction },
                executeSQL: { sql in
                    statements.record(sql)
                    try connection.execute(sql)
                },
                operation: {
                    _ = bodies.increment()
                    try connection.execute("INSERT INTO t VALUES ('work')")
                })
        }
        #expect(error.setting == "beginStatement")
        #expect(error.value == beginStatement)
        #expect(statements.values.isEmpty)
        #expect(bodies.value == 0)
        #expect(!connection.isInTransaction)
        #expect(try connection.strings("SELECT count(*) FROM t") == ["0"])
    }

    /// A statement that begins nothing would leave the work in autocommit: its first `INSERT`
    /// commits on its own, the second is busy behind another connection, no rollback can undo
    /// the first, and the retry writes it again. It is refused before anything runs.
    @Test(arguments: ["", "   ", "-- begin", ";", "SELECT 1"])
    func aStatementThatBeginsNothingNeverRunsTheWork(beginStatement: String) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let holder = try SQLiteConnection(path: database.path)
        try holder.execute("PRAGMA journal_mode = DELETE; CREATE TABLE t (x TEXT)")
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let path = database.path
        let halfway = Gate()
        let lockTaken = Gate()
        let bodies = Counter()
        let call = Task { () -> String in
            let writer = try SQLiteConnection(path: path)
            do {
                try await policy.writeTransaction(
                    beginStatement: beginStatement,
                    isInTransaction: { writer.isInTransaction }, executeSQL: writer.execute,
                    operation: {
                        let body = bodies.increment()
                        try writer.execute("INSERT INTO t VALUES ('first half')")
                        if body == 1 {
                            halfway.open()
                            await lockTaken.wait()
                        }
                        try writer.execute("INSERT INTO t VALUES ('second half')")
                    })
                return "returned"
            } catch {
                return "\(type(of: error))"
            }
        }
        // Until the first attempt is halfway, or the call has ended without running the work.
        let ended = Task {
            _ = await call.result
            halfway.open()
        }
        await halfway.wait()
        try holder.execute("BEGIN IMMEDIATE")
        lockTaken.open()
        if bodies.value == 1 {
            // The work ran: its second INSERT is busy, and the retry waits for the lock.
            await clock.waitForSleepers(count: 1)
            try holder.execute("COMMIT")
            clock.advance(by: .seconds(1))
        } else {
            try holder.execute("COMMIT")
        }
        let ending = try await call.value
        _ = await ended.value
        let rows = try holder.strings("SELECT x FROM t ORDER BY rowid")
        #expect(ending == "ConfigurationError", "rows: \(rows)")
        #expect(bodies.value == 0)
        #expect(rows == [])
    }

    /// `BEGIN` with another statement after it, that statement busy: `BEGIN` has run, so taking
    /// the failure as a refused `BEGIN` would skip the rollback and leave the connection inside
    /// the transaction, and the retry's `BEGIN` would fail there. It is refused before anything
    /// runs.
    @Test func aBeginWithAnotherStatementAfterItLeavesNoTransactionOpen() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let holder = try SQLiteConnection(path: database.path)
        try holder.execute("PRAGMA journal_mode = DELETE; CREATE TABLE t (x TEXT)")
        try holder.execute("BEGIN IMMEDIATE")
        let writer = try SQLiteConnection(path: database.path)
        var ending = "returned"
        do {
            try await self.policy().writeTransaction(
                beginStatement: "BEGIN; INSERT INTO t VALUES ('begun')",
                isInTransaction: { writer.isInTransaction }, executeSQL: writer.execute,
                operation: {
                    try writer.execute("INSERT INTO t VALUES ('work')")
                })
        } catch {
            ending = "\(type(of: error)): \(error)"
        }
        #expect(!writer.isInTransaction, "the call ended with \(ending)")
        #expect(ending.hasPrefix("ConfigurationError"), "\(ending)")
        try holder.execute("COMMIT")
        #expect(try holder.strings("SELECT count(*) FROM t") == ["0"])
    }
}

/// A begin statement that starts its transaction and then throws: a connection wrapper that
/// fails after running it, here an audit log that takes each statement once it has run.
extension SQLiteBeginStatementTests {
    struct AuditLogUnavailable: Error {}

    /// Retries the audit log's failure as well as SQLite's busy and locked outcomes.
    struct RetryAuditFailures: RetryClassifier {
        func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
            error is AuditLogUnavailable ? .retry : SQLiteRetryClassifier().decision(for: error, context: context)
        }
    }

    /// Runs `sql`, then records it in an audit log whose first write fails.
    final class AuditedConnection {
        let connection: SQLiteConnection
        let statements = Recorder<String>()
        private let audits = Counter()

        init(_ connection: SQLiteConnection) {
            self.connection = connection
        }

        func execute(_ sql: String) throws {
            try self.connection.execute(sql)
            self.statements.record(sql)
            if self.audits.increment() == 1 { throw AuditLogUnavailable() }
        }
    }

    /// The transaction the begin statement opened is the attempt's own: it is rolled back, and
    /// the retry's `BEGIN` starts a fresh one, where it would fail inside the open one. A
    /// savepoint begun outside any transaction opened one of its own, undone the same way.
    @Test(arguments: [
        ("BEGIN IMMEDIATE", ["BEGIN IMMEDIATE", "ROLLBACK", "BEGIN IMMEDIATE", "COMMIT"]),
        ("SAVEPOINT step", ["SAVEPOINT step", "ROLLBACK", "SAVEPOINT step", "RELEASE step"]),
    ])
    func aBeginThatThrowsAfterStartingItsTransactionIsRolledBackAndRetried(
        beginStatement: String, expected: [String]
    ) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let writer = AuditedConnection(try SQLiteConnection(path: database.path))
        try writer.connection.execute("CREATE TABLE t (x TEXT)")
        let bodies = Counter()
        try await self.policy().writeTransaction(
            beginStatement: beginStatement, classifier: RetryAuditFailures(),
            isInTransaction: { writer.connection.isInTransaction }, executeSQL: writer.execute,
            operation: {
                _ = bodies.increment()
                try writer.connection.execute("INSERT INTO t VALUES ('work')")
            })
        #expect(writer.statements.values == expected)
        #expect(bodies.value == 1)
        #expect(!writer.connection.isInTransaction)
        #expect(try writer.connection.strings("SELECT x FROM t") == ["work"])
    }

    /// When the failure is not retried, the call ends with it and the connection is out of the
    /// transaction: another connection can take the write lock at once.
    @Test func aBeginThatThrowsAfterStartingItsTransactionLeavesTheLockFree() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let writer = AuditedConnection(try SQLiteConnection(path: database.path))
        try writer.connection.execute("PRAGMA journal_mode = DELETE; CREATE TABLE t (x TEXT)")
        await #expect(throws: AuditLogUnavailable.self) {
            try await self.policy().writeTransaction(
                isInTransaction: { writer.connection.isInTransaction }, executeSQL: writer.execute,
                operation: { try writer.connection.execute("INSERT INTO t VALUES ('work')") })
        }
        #expect(writer.statements.values == ["BEGIN IMMEDIATE", "ROLLBACK"])
        #expect(!writer.connection.isInTransaction)
        let other = try SQLiteConnection(path: database.path)
        try other.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES ('other'); COMMIT")
        #expect(try other.strings("SELECT x FROM t") == ["other"])
    }

    /// A `BEGIN` refused inside a transaction the caller already holds leaves that transaction
    /// alone: the connection was inside a transaction before the statement ran, so the one it is
    /// in is the caller's, and no rollback runs.
    @Test func aBeginRefusedInsideTheCallersTransactionLeavesItOpen() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE t (x TEXT)")
        try connection.execute("BEGIN; INSERT INTO t VALUES ('callers')")
        let statements = Recorder<String>()
        let error = try await #require(throws: SQLiteError.self) {
            try await self.policy().writeTransaction(
                beginStatement: "BEGIN", isInTransaction: { connection.isInTransaction },
                executeSQL: { sql in
                    statements.record(sql)
                    try connection.execute(sql)
                },
                operation: { try connection.execute("INSERT INTO t VALUES ('work')") })
        }
        #expect(error.code.primary == .error)
        #expect(statements.values == ["BEGIN"])
        #expect(connection.isInTransaction)
        try connection.execute("COMMIT")
        #expect(try connection.strings("SELECT x FROM t") == ["callers"])
    }

    /// For every keyword the real libsqlite3 lists, the helper takes it for a name exactly when
    /// SQLite does: a savepoint name in `SAVEPOINT`, and in the `RELEASE` and `ROLLBACK TO` that
    /// end it; the ignored name after `BEGIN TRANSACTION`. SQLite is asked to prepare each
    /// statement on an in-memory connection, which runs nothing.
    @Test func aKeywordIsTakenForANameExactlyWhenSQLiteTakesIt() async throws {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        #expect(sqlite3_open(":memory:", &handle) == SQLITE_OK)
        func sqlitePrepares(_ sql: String) -> Bool {
            var statement: OpaquePointer?
            defer { sqlite3_finalize(statement) }
            return sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK
        }
        struct Ran: Error {}
        func helperTakes(_ beginStatement: String) async throws -> Bool {
            do {
                try await self.policy().writeTransaction(
                    beginStatement: beginStatement, executeSQL: { _ in throw Ran() }, operation: {})
                return true
            } catch is Ran {
                return true
            } catch is ConfigurationError {
                return false
            }
        }
        let count = sqlite3_keyword_count()
        #expect(count > 100)
        for index in 0..<count {
            var characters: UnsafePointer<CChar>?
            var length: Int32 = 0
            #expect(sqlite3_keyword_name(index, &characters, &length) == SQLITE_OK)
            let bytes = UnsafeRawBufferPointer(start: characters, count: Int(length))
            for word in [String(decoding: bytes, as: UTF8.self)].flatMap({ [$0, $0.lowercased()] }) {
                let savepoint = ["SAVEPOINT \(word)", "RELEASE \(word)", "ROLLBACK TO \(word)"].allSatisfy(
                    sqlitePrepares)
                #expect(try await helperTakes("SAVEPOINT \(word)") == savepoint, "SAVEPOINT \(word)")
                let begin = "BEGIN TRANSACTION \(word)"
                #expect(try await helperTakes(begin) == sqlitePrepares(begin), "\(begin)")
            }
        }
    }
}
