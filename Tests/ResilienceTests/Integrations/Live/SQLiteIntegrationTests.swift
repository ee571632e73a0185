import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Write transactions retried under a ``RetryPolicy`` against the real
/// libsqlite3: two connections to one database file, one holding a lock.
@Suite(.timeLimit(.minutes(5)))
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

/// Savepoint statements spelled as SQLite accepts them: string-literal names, comments before
/// the keyword and after the name, and a seeded mix of spellings, each checked against the real
/// libsqlite3 first.
extension SQLiteIntegrationTests {
    /// Runs `beginStatement` through `writeTransaction` as a savepoint nested in a transaction the
    /// caller holds (after the caller's own row), its first attempt busy; then commits the caller's
    /// transaction if it is still open. Returns the call's error, whether the caller's transaction
    /// was still open, the rows committed, and the statements the call ran.
    static func runNestedSavepoint(_ beginStatement: String) async throws -> (
        failure: (any Error)?, callerStillOpen: Bool, rows: [String], statements: [String]
    ) {
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("CREATE TABLE items (name TEXT NOT NULL)")
        try connection.execute("BEGIN")
        try connection.execute("INSERT INTO items (name) VALUES ('before')")
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let attempts = Counter()
        let statements = Recorder<String>()
        var failure: (any Error)?
        do {
            try await policy.writeTransaction(
                beginStatement: beginStatement,
                isInTransaction: { connection.isInTransaction },
                executeSQL: {
                    statements.record($0)
                    try connection.execute($0)
                },
                operation: {
                    try connection.execute("INSERT INTO items (name) VALUES ('tea')")
                    if attempts.increment() == 1 { throw SQLiteError(code: .busy) }
                }
            )
        } catch {
            failure = error
        }
        let open = connection.isInTransaction
        if open { try connection.execute("COMMIT") }
        return (failure, open, try connection.strings("SELECT name FROM items ORDER BY rowid"), statements.values)
    }

    /// Whether the real libsqlite3 runs `beginStatement` inside a transaction.
    static func sqliteRunsSavepoint(_ beginStatement: String) throws -> Bool {
        let connection = try SQLiteConnection(path: ":memory:")
        try connection.execute("BEGIN")
        defer { try? connection.execute("ROLLBACK") }
        do {
            try connection.execute(beginStatement)
            return true
        } catch {
            return false
        }
    }

    /// SQLite's grammar takes a string literal as a savepoint name, `''` standing for a quote
    /// inside; `RELEASE` and `ROLLBACK TO` name it the same way.
    @Test(arguments: ["SAVEPOINT 'batch'", "SAVEPOINT 'night''s batch';"])
    func aSavepointNamedByAStringLiteralIsRolledBackToAndReleased(beginStatement: String) async throws {
        #expect(try Self.sqliteRunsSavepoint(beginStatement))
        let result = try await Self.runNestedSavepoint(beginStatement)
        #expect(result.failure == nil, "\(String(describing: result.failure))")
        #expect(result.callerStillOpen)
        #expect(result.rows == ["before", "tea"])
    }

    /// A comment after the name, or after the `;`, is whitespace to SQLite, closed or not; a
    /// second `;` is an empty statement.
    @Test(arguments: [
        "SAVEPOINT batch;;", "SAVEPOINT batch; ; -- done\n;",
        "SAVEPOINT batch -- nightly import", "SAVEPOINT batch /* nightly */;",
        "SAVEPOINT batch; -- one\n/* two */ -- three", "SAVEPOINT batch /* never closed",
    ])
    func aSavepointFollowedByACommentIsRolledBackToAndReleased(beginStatement: String) async throws {
        #expect(try Self.sqliteRunsSavepoint(beginStatement))
        let result = try await Self.runNestedSavepoint(beginStatement)
        #expect(result.failure == nil, "\(String(describing: result.failure))")
        #expect(result.callerStillOpen)
        #expect(result.rows == ["before", "tea"])
    }

    /// A comment before `SAVEPOINT` hides nothing from SQLite: the statement is still a savepoint,
    /// and the attempt must end with `RELEASE`, not a `COMMIT` of the caller's whole transaction.
    @Test(arguments: ["/* nightly */ SAVEPOINT batch", "-- nightly\n  savepoint batch", "/**/SAVEPOINT/**/batch"])
    func aSavepointAfterALeadingCommentLeavesTheCallersTransactionOpen(beginStatement: String) async throws {
        #expect(try Self.sqliteRunsSavepoint(beginStatement))
        let result = try await Self.runNestedSavepoint(beginStatement)
        #expect(result.failure == nil, "\(String(describing: result.failure))")
        #expect(result.callerStillOpen, "the caller's transaction was committed by the savepoint's call")
        #expect(!result.statements.contains("COMMIT"))
        #expect(result.rows == ["before", "tea"])
    }

    /// Seeded savepoint statements: every identifier form SQLite takes for a name, some broken,
    /// with whitespace and comments (some malformed) before and after. The helper must refuse
    /// exactly those SQLite refuses, and roll back to and release the savepoint of the others.
    @Test func generatedSavepointStatementsAreReadAsSQLiteReadsThem() async throws {
        var generator = SeededRandomNumberGenerator(seed: 0x5A7E_901E)
        var accepted = 0
        var refused = 0
        for _ in 0..<300 {
            let statement = SavepointStatementGenerator.statement(using: &generator)
            let sqliteRuns = try Self.sqliteRunsSavepoint(statement)
            let result = try await Self.runNestedSavepoint(statement)
            if sqliteRuns {
                accepted += 1
                #expect(result.failure == nil, "\(statement.debugDescription): \(String(describing: result.failure))")
                #expect(result.callerStillOpen, "\(statement.debugDescription)")
                #expect(result.rows == ["before", "tea"], "\(statement.debugDescription)")
            } else {
                refused += 1
                let error = result.failure as? ConfigurationError
                #expect(
                    error?.setting == "beginStatement",
                    "\(statement.debugDescription): \(String(describing: result.failure))")
                #expect(result.statements.isEmpty, "\(statement.debugDescription)")
                #expect(result.rows == ["before"], "\(statement.debugDescription)")
            }
        }
        // Both outcomes are well represented.
        #expect(accepted >= 100)
        #expect(refused >= 50)
    }
}

/// Builds savepoint statements from random parts: the keyword in random case, a name in any of
/// SQLite's identifier forms (sometimes broken), and whitespace and comments around it.
enum SavepointStatementGenerator {
    static func statement(using generator: inout SeededRandomNumberGenerator) -> String {
        let keyword = String("savepoint".map { Bool.random(using: &generator) ? Character($0.uppercased()) : $0 })
        let leading = self.space(from: self.goodSpace, using: &generator)
        var middle = self.space(from: self.goodSpace + self.badSpace, using: &generator)
        let name = self.name(using: &generator)
        if middle.isEmpty, let first = name.unicodeScalars.first, !"\"'`[".unicodeScalars.contains(first) {
            middle = " "
        }
        if middle.hasPrefix("\u{A0}") {
            // Outside ASCII it would join the keyword, and the statement would not be a savepoint.
            middle = " " + middle
        }
        var trailing = self.space(from: self.goodSpace + self.badSpace, using: &generator)
        if Bool.random(using: &generator) {
            trailing += ";" + self.space(from: self.goodSpace + self.badSpace, using: &generator)
            // Empty statements after it, which SQLite runs as nothing.
            for _ in 0..<self.pick([0, 0, 0, 1, 2], using: &generator) {
                trailing += ";" + self.space(from: self.goodSpace, using: &generator)
            }
        }
        if Int.random(in: 0..<8, using: &generator) == 0 {
            trailing += self.pick(
                ["-- to the end", "/* never closed", "/*", "/* ends with a star *"], using: &generator)
        }
        return leading + keyword + middle + name + trailing
    }

    /// Whitespace and comments SQLite skips.
    static let goodSpace = [
        " ", "  ", "\t", "\n", "\r\n", "\u{0C}", "\n\u{0B}", "-- note\n", "--\n", "/* note */", "/**/",
        "/* a * / b -- c */",
        "/*\n*/", "/***/",
    ]
    /// Text that is neither whitespace nor a comment (SQLite takes a vertical tab for whitespace only
    /// after another whitespace character).
    static let badSpace = ["\u{0B}", "\u{1F}", "-", "/", "/ *", "\u{A0}", "#"]

    static func space(from pieces: [String], using generator: inout SeededRandomNumberGenerator) -> String {
        let count = self.pick([0, 0, 1, 1, 1, 2, 3], using: &generator)
        // Malformed pieces are rarer than well-formed ones.
        return (0..<count).map { _ in
            pieces.count > self.goodSpace.count && Int.random(in: 0..<6, using: &generator) == 0
                ? self.pick(self.badSpace, using: &generator) : self.pick(self.goodSpace, using: &generator)
        }.joined()
    }

    static func name(using generator: inout SeededRandomNumberGenerator) -> String {
        let broken = Int.random(in: 0..<6, using: &generator) == 0
        switch Int.random(in: 0..<5, using: &generator) {
        case 0:
            let tail = self.characters(from: ["a", "Z", "_", "$", "0", "9", "é", "名"], using: &generator)
            return (broken ? self.pick(["1", "$", "9"], using: &generator) : "sp") + tail
        case 1: return self.quoted(open: "\"", close: "\"", broken: broken, using: &generator)
        case 2: return self.quoted(open: "'", close: "'", broken: broken, using: &generator)
        case 3: return self.quoted(open: "`", close: "`", broken: broken, using: &generator)
        default: return self.quoted(open: "[", close: "]", broken: broken, using: &generator)
        }
    }

    /// A quoted name whose text mixes quotes, spaces, comment markers and `;`, the closing
    /// character inside doubled where SQLite takes a doubled one. When `broken`, the closing
    /// character is dropped or followed by more text (which SQLite still accepts when that makes
    /// a doubled quote and a closed name).
    static func quoted(
        open: String, close: String, broken: Bool, using generator: inout SeededRandomNumberGenerator
    ) -> String {
        let escape = close == "]" ? "" : close + close
        var pieces = ["a", "B", " ", ";", "--", "/*", "*/", "é", "\"", "'", "`", "[", "\t"]
        if !escape.isEmpty { pieces.append(escape) }
        let body = self.characters(from: pieces.filter { $0 != close }, using: &generator)
        guard broken else { return open + body + close }
        if Bool.random(using: &generator) { return open + body }
        return open + body + close + self.pick(["x", close], using: &generator) + body + close
    }

    static func characters(from pieces: [String], using generator: inout SeededRandomNumberGenerator) -> String {
        (0..<Int.random(in: 0...6, using: &generator)).map { _ in self.pick(pieces, using: &generator) }.joined()
    }

    static func pick<Element>(_ elements: [Element], using generator: inout SeededRandomNumberGenerator) -> Element {
        elements[Int.random(in: 0..<elements.count, using: &generator)]
    }
}
