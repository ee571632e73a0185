import Resilience
import ResilienceTesting
import Testing

/// How the transaction helper reads a `SAVEPOINT` statement and undoes a savepoint, against a
/// scripted connection.
@Suite struct SQLiteSavepointTests {
    /// A connection that logs statements and fails the ones it is told to, in order.
    final class ScriptedConnection: Sendable {
        let log = Recorder<String>()
        private let failures: Lock<[String: [SQLiteError]]>

        init(failing failures: [String: [SQLiteError]] = [:]) {
            self.failures = Lock(failures)
        }

        func execute(_ statement: String) throws {
            self.log.record(statement)
            let failure = self.failures.withLock { failures -> SQLiteError? in
                guard var queue = failures[statement], !queue.isEmpty else { return nil }
                let first = queue.removeFirst()
                failures[statement] = queue
                return first
            }
            if let failure { throw failure }
        }
    }

    private func policy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    @Test(arguments: [
        "SAVEPOINT", "SAVEPOINT ;", #"SAVEPOINT "open"#, "SAVEPOINT [open", "SAVEPOINT `open", "SAVEPOINT a b",
        "SAVEPOINT a; INSERT INTO t VALUES (1)", "SAVEPOINT 1st", "SAVEPOINT 'open", "SAVEPOINT a -",
        "SAVEPOINT a /*", "SAVEPOINT a; /", "SAVEPOINT /* note */", "SAVEPOINT a -- note\n b",
    ])
    func aMalformedSavepointIsRejectedBeforeAnythingRuns(beginStatement: String) async throws {
        let connection = ScriptedConnection()
        let bodies = Counter()
        let error = try await #require(throws: ConfigurationError.self) {
            try await self.policy().writeTransaction(beginStatement: beginStatement, executeSQL: connection.execute) {
                bodies.increment()
            }
        }
        #expect(error.setting == "beginStatement")
        #expect(error.value == beginStatement)
        #expect(connection.log.values.isEmpty)
        #expect(bodies.value == 0)
    }

    @Test(arguments: [
        (#"SAVEPOINT "import batch""#, #""import batch""#), (#"  savepoint "a ""b"" c" ; "#, #""a ""b"" c""#),
        ("SAVEPOINT [x y]", "[x y]"), ("SAVEPOINT `x``y`", "`x``y`"), ("SAVEPOINT step;", "step"),
        ("SAVEPOINT\tstep_2$", "step_2$"), ("SAVEPOINT 'it''s'", "'it''s'"),
        ("/* nightly */ SAVEPOINT step -- import", "step"), ("-- note\nSAVEPOINT/**/step; /* end", "step"),
    ])
    func theSavepointIsReleasedAndRolledBackToByItsWholeName(beginStatement: String, name: String) async throws {
        let connection = ScriptedConnection(failing: ["RELEASE \(name)": [SQLiteError(code: .busy)]])
        let inTransaction: () -> Bool = { true }
        try await self.policy().writeTransaction(
            beginStatement: beginStatement, isInTransaction: inTransaction, executeSQL: connection.execute
        ) {}
        #expect(
            connection.log.values == [
                beginStatement, "RELEASE \(name)", "ROLLBACK TO \(name)", "RELEASE \(name)", beginStatement,
                "RELEASE \(name)",
            ])
    }

    @Test func aWordThatOnlyStartsWithSavepointIsRefused() async throws {
        let connection = ScriptedConnection()
        let error = try await #require(throws: ConfigurationError.self) {
            try await self.policy().writeTransaction(beginStatement: "SAVEPOINTS", executeSQL: connection.execute) {}
        }
        #expect(error.setting == "beginStatement")
        #expect(connection.log.values.isEmpty)
    }

    /// Not knowing where the savepoint stood, the helper tries `ROLLBACK TO` and `RELEASE`; a busy
    /// `RELEASE` was a commit, so the savepoint was the outermost: `ROLLBACK` ends it and the
    /// attempt is retried.
    @Test func aBusyReleaseAfterRollingBackToEndsTheTransactionWhenItsPlaceIsUnknown() async throws {
        let connection = ScriptedConnection(failing: [
            "RELEASE step": [SQLiteError(code: .busy), SQLiteError(code: .busy)]
        ])
        try await self.policy().writeTransaction(beginStatement: "SAVEPOINT step", executeSQL: connection.execute) {}
        #expect(
            connection.log.values == [
                "SAVEPOINT step", "RELEASE step", "ROLLBACK TO step", "RELEASE step", "ROLLBACK", "SAVEPOINT step",
                "RELEASE step",
            ])
    }

    /// A `RELEASE` that failed otherwise proves nothing about where the savepoint stood: after the
    /// `ROLLBACK`, a transaction of the caller's may be gone, so the attempt is not retried.
    @Test func anotherReleaseFailureEndsTheTransactionAndTheCallWhenItsPlaceIsUnknown() async throws {
        let connection = ScriptedConnection(
            failing: ["RELEASE step": [SQLiteError(code: .busy), SQLiteError(code: .ioError)]])
        let policy = try self.policy()
        let error = try await #require(throws: SQLiteError.self) {
            try await policy.writeTransaction(beginStatement: "SAVEPOINT step", executeSQL: connection.execute) {}
        }
        #expect(error.code == .busy, "the attempt's own error")
        #expect(
            connection.log.values == ["SAVEPOINT step", "RELEASE step", "ROLLBACK TO step", "RELEASE step", "ROLLBACK"])
        #expect(await policy.statistics.stopReasons[.notRetryable] == 1)
    }

    /// Inside the caller's transaction a failed `RELEASE` is never followed by `ROLLBACK`, which
    /// would undo the caller's work too.
    @Test func aNestedSavepointWhoseReleaseFailsLeavesTheCallersTransactionAlone() async throws {
        let connection = ScriptedConnection(
            failing: ["RELEASE step": [SQLiteError(code: .busy), SQLiteError(code: .ioError)]])
        let inTransaction: () -> Bool = { true }
        await #expect(throws: SQLiteRollbackError.self) {
            try await self.policy().writeTransaction(
                beginStatement: "SAVEPOINT step", isInTransaction: inTransaction, executeSQL: connection.execute
            ) {}
        }
        #expect(connection.log.values == ["SAVEPOINT step", "RELEASE step", "ROLLBACK TO step", "RELEASE step"])
    }
}
