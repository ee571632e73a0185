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
