import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Write transactions retried under a ``RetryPolicy`` against the real
/// libsqlite3: two connections to one database file, one holding a lock.
@Suite(.timeLimit(.minutes(1)))
struct SQLiteIntegrationTests {
    @Test func writeBlockedByAnotherWriterIsRetriedAndCommitsOnce() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let holder = try SQLiteConnection(path: database.path)
        try holder.execute("PRAGMA journal_mode = DELETE; CREATE TABLE orders (item TEXT NOT NULL)")
        try holder.execute("BEGIN IMMEDIATE; INSERT INTO orders (item) VALUES ('held')")

        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 5, backoff: .constant(.milliseconds(50)), jitter: .none, clock: clock)
        let bodies = Counter()
        let commits = Counter()
        let path = database.path
        let call = Task {
            let writer = try SQLiteConnection(path: path)
            try await policy.writeTransaction(
                executeSQL: { statement in
                    try writer.execute(statement)
                    if statement == "COMMIT" { commits.increment() }
                },
                operation: {
                    bodies.increment()
                    try writer.execute("INSERT INTO orders (item) VALUES ('first'), ('second')")
                }
            )
        }

        // BEGIN IMMEDIATE is busy while the holder writes: twice.
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(50))
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.milliseconds(50), .milliseconds(50)])
        #expect(bodies.value == 0, "the write lock is taken before any work is done")

        try holder.execute("COMMIT")
        clock.advance(by: .milliseconds(50))
        try await call.value

        #expect(bodies.value == 1)
        #expect(commits.value == 1)
        #expect(try holder.strings("SELECT item FROM orders ORDER BY rowid") == ["held", "first", "second"])
        #expect(await policy.statistics.retries == 2)
    }

    @Test func commitBlockedByAReaderIsRolledBackAndRetriedWithoutDoubling() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let reader = try SQLiteConnection(path: database.path)
        try reader.execute("PRAGMA journal_mode = DELETE; CREATE TABLE orders (item TEXT NOT NULL)")
        // An open read transaction keeps a shared lock: a writer can stage its rows but not commit them.
        try reader.execute("BEGIN")
        #expect(try reader.strings("SELECT count(*) FROM orders") == ["0"])

        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(50)), jitter: .none, clock: clock)
        let bodies = Counter()
        let commits = Counter()
        let failedCommits = Counter()
        let path = database.path
        let call = Task {
            let writer = try SQLiteConnection(path: path)
            try await policy.writeTransaction(
                executeSQL: { statement in
                    do {
                        try writer.execute(statement)
                        if statement == "COMMIT" { commits.increment() }
                    } catch {
                        if statement == "COMMIT" { failedCommits.increment() }
                        throw error
                    }
                },
                operation: {
                    bodies.increment()
                    try writer.execute("INSERT INTO orders (item) VALUES ('a'), ('b'), ('c')")
                }
            )
        }

        await clock.waitForSleepers(count: 1)
        #expect(failedCommits.value == 1, "COMMIT was busy")
        try reader.execute("COMMIT")
        #expect(try reader.strings("SELECT count(*) FROM orders") == ["0"], "the busy attempt was rolled back")

        clock.advance(by: .milliseconds(50))
        try await call.value
        #expect(bodies.value == 2)
        #expect(commits.value == 1)
        #expect(try reader.strings("SELECT item FROM orders ORDER BY rowid") == ["a", "b", "c"])
    }

    @Test func constraintViolationIsFinalAndLeavesNothingBehind() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE users (name TEXT UNIQUE); INSERT INTO users VALUES ('taken')")
        let policy = try RetryPolicy(maximumAttempts: 5, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let bodies = Counter()

        let error = try await #require(throws: SQLiteError.self) {
            try await policy.writeTransaction(executeSQL: connection.execute) {
                bodies.increment()
                try connection.execute("INSERT INTO users VALUES ('new')")
                try connection.execute("INSERT INTO users VALUES ('taken')")
            }
        }
        #expect(error.code == .constraintUnique)
        #expect(error.code.primary == .constraint)
        #expect(bodies.value == 1)
        #expect(try connection.strings("SELECT name FROM users ORDER BY rowid") == ["taken"])
    }

    @Test func busyErrorsFromTheRealLibraryCarryTheBusyCode() throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let first = try SQLiteConnection(path: database.path)
        let second = try SQLiteConnection(path: database.path)
        try first.execute("CREATE TABLE t (x); BEGIN IMMEDIATE")
        let error = try #require(throws: SQLiteError.self) { try second.execute("BEGIN IMMEDIATE") }
        #expect(error.code.primary == .busy)
        #expect(error.isRetryable)
        #expect(error.message == "database is locked")
    }
}

/// Savepoints against the real libsqlite3: one that opens its own transaction, one nested in
/// a transaction whose read snapshot went stale, and quoted names.
extension SQLiteIntegrationTests {
    /// A savepoint begun outside any transaction is one: its `RELEASE` commits, and a reader's
    /// shared lock makes that commit busy, as it does `COMMIT`. `ROLLBACK TO` would leave the
    /// transaction open and the `RELEASE` after it would be busy too; `ROLLBACK` ends it, and the
    /// attempt is retried.
    @Test func aSavepointWhoseReleaseIsBusyIsRolledBackAndRetried() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let reader = try SQLiteConnection(path: database.path)
        try reader.execute("PRAGMA journal_mode = DELETE; CREATE TABLE orders (item TEXT NOT NULL)")
        try reader.execute("BEGIN")
        #expect(try reader.strings("SELECT count(*) FROM orders") == ["0"])

        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(50)), jitter: .none, clock: clock)
        let statements = Recorder<String>()
        let path = database.path
        let call = Task { () -> (failure: String?, leftInTransaction: Bool) in
            let writer = try SQLiteConnection(path: path)
            var failure: String?
            do {
                try await policy.writeTransaction(
                    beginStatement: "SAVEPOINT batch",
                    isInTransaction: { writer.isInTransaction },
                    executeSQL: { statement in
                        do {
                            try writer.execute(statement)
                            statements.record(statement)
                        } catch {
                            statements.record("\(statement) -> \(error)")
                            throw error
                        }
                    },
                    operation: { try writer.execute("INSERT INTO orders (item) VALUES ('a')") }
                )
            } catch {
                failure = "\(error)"
            }
            return (failure, writer.isInTransaction)
        }
        for _ in 0..<2_000 where clock.sleeperCount == 0 { await Task.yield() }
        let waitedToRetry = clock.sleeperCount == 1
        try reader.execute("COMMIT")
        clock.advance(by: .milliseconds(50))
        let result = try await call.value
        #expect(waitedToRetry, "statements: \(statements.values); failure: \(String(describing: result.failure))")
        #expect(result.failure == nil)
        #expect(statements.values.first { $0.hasPrefix("ROLLBACK") } == "ROLLBACK")
        #expect(try reader.strings("SELECT item FROM orders") == ["a"])
        #expect(!result.leftInTransaction, "the writer was left inside a transaction")
    }

    /// The caller's transaction read the database; another connection then committed. In WAL
    /// mode every write inside the caller's transaction now fails with `SQLITE_BUSY_SNAPSHOT`
    /// (517) until that transaction ends: retrying the savepoint inside it can never succeed.
    @Test func savepointInAStaleSnapshotIsNotRetriedInsideTheSameTransaction() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let caller = try SQLiteConnection(path: database.path)
        try caller.execute("PRAGMA journal_mode = WAL; CREATE TABLE orders (item TEXT NOT NULL)")
        let other = try SQLiteConnection(path: database.path)

        // The caller's transaction reads first, so it holds a snapshot.
        try caller.execute("BEGIN")
        _ = try caller.strings("SELECT count(*) FROM orders")
        // Another connection commits: the caller's snapshot is stale now.
        try other.execute("INSERT INTO orders (item) VALUES ('other')")

        let policy = try RetryPolicy(
            maximumAttempts: 4, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let bodies = Counter()
        let error = try await #require(throws: SQLiteEnclosingTransactionStaleError.self) {
            try await policy.writeTransaction(
                beginStatement: "SAVEPOINT nested",
                isInTransaction: { caller.isInTransaction },
                executeSQL: { try caller.execute($0) },
                operation: {
                    bodies.increment()
                    try caller.execute("INSERT INTO orders (item) VALUES ('mine')")
                }
            )
        }
        #expect((error.savepointError as? SQLiteError)?.code == .busySnapshot)
        #expect(caller.isInTransaction, "the caller's transaction is still the caller's to end")
        // Nothing changes while the caller's transaction stays open: each retry meets the same
        // stale snapshot. One attempt is all that can help; the caller must restart its transaction.
        #expect(bodies.value == 1, "the savepoint ran \(bodies.value) times in the same stale snapshot")
        #expect(await policy.statistics.stopReasons[.notRetryable] == 1)
        try caller.execute("ROLLBACK")
    }

    /// The error a stale snapshot ends a nested savepoint with has the enclosing transaction
    /// retried, from its `BEGIN`, by the helper that runs it: the new transaction reads a fresh
    /// snapshot, and its savepoint commits.
    @Test func aStaleSnapshotHasTheEnclosingTransactionRetried() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let caller = try SQLiteConnection(path: database.path)
        try caller.execute("PRAGMA journal_mode = WAL; CREATE TABLE orders (item TEXT NOT NULL)")
        let other = try SQLiteConnection(path: database.path)
        let outer = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let transactions = Counter()
        let savepoints = Counter()
        try await outer.writeTransaction(
            beginStatement: "BEGIN",
            isInTransaction: { caller.isInTransaction },
            executeSQL: { try caller.execute($0) },
            operation: {
                _ = try caller.strings("SELECT count(*) FROM orders")
                if transactions.increment() == 1 {
                    try other.execute("INSERT INTO orders (item) VALUES ('other')")
                }
                try await inner.writeTransaction(
                    beginStatement: "SAVEPOINT nested",
                    isInTransaction: { caller.isInTransaction },
                    executeSQL: { try caller.execute($0) },
                    operation: {
                        savepoints.increment()
                        try caller.execute("INSERT INTO orders (item) VALUES ('mine')")
                    }
                )
            }
        )
        #expect(transactions.value == 2)
        #expect(savepoints.value == 2)
        #expect(!caller.isInTransaction)
        #expect(try other.strings("SELECT item FROM orders ORDER BY rowid") == ["other", "mine"])
    }

    /// SQLite accepts a quoted savepoint name, spaces included (`SAVEPOINT "import batch"`); its
    /// `RELEASE` and `ROLLBACK TO` must name it whole, quotes and all.
    @Test func aQuotedSavepointNameWithASpaceCommits() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE items (name TEXT NOT NULL)")
        try connection.execute("BEGIN")
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        var failure: (any Error)?
        do {
            try await policy.writeTransaction(
                beginStatement: #"SAVEPOINT "import batch""#,
                isInTransaction: { connection.isInTransaction },
                executeSQL: { try connection.execute($0) },
                operation: { try connection.execute("INSERT INTO items (name) VALUES ('tea')") }
            )
        } catch {
            failure = error
        }
        #expect(failure == nil, "\(String(describing: failure))")
        try connection.execute("COMMIT")
        #expect(try connection.strings("SELECT name FROM items") == ["tea"])
    }

    /// Each spelling of a savepoint name SQLite accepts is rolled back to and released by that name.
    @Test(arguments: [#"SAVEPOINT "say ""hi""";"#, "SAVEPOINT [two words]", "SAVEPOINT `back``tick`", "savepoint café"])
    func everyQuotedNameIsRolledBackToAndReleased(beginStatement: String) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE items (name TEXT NOT NULL)")
        try connection.execute("BEGIN")
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let attempts = Counter()
        try await policy.writeTransaction(
            beginStatement: beginStatement,
            isInTransaction: { connection.isInTransaction },
            executeSQL: { try connection.execute($0) },
            operation: {
                try connection.execute("INSERT INTO items (name) VALUES ('tea')")
                if attempts.increment() == 1 { throw SQLiteError(code: .busy) }
            }
        )
        #expect(connection.isInTransaction)
        try connection.execute("COMMIT")
        #expect(try connection.strings("SELECT name FROM items") == ["tea"])
    }
}
