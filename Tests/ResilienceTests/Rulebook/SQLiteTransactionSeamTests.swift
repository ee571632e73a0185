import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The SQLite transaction helper: what ends a transaction, what is retried, and
/// what happens when rolling back fails, against a scripted connection and the real libsqlite3.
@Suite(.timeLimit(.minutes(5)))
struct SQLiteTransactionSeamTests {
    struct BusinessRuleViolation: Error {}

    /// A connection that logs statements and fails the ones it is told to.
    final class ScriptedConnection: Sendable {
        let log = Recorder<String>()
        private let failures: Lock<[String: [any Error & Sendable]]>

        init(failing failures: [String: [any Error & Sendable]] = [:]) {
            self.failures = Lock(failures)
        }

        func execute(_ statement: String) throws {
            self.log.record(statement)
            let failure: (any Error)? = self.failures.withLock { failures in
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

    @Test func aBusinessErrorFromTheWorkIsNotRetried() async throws {
        let connection = ScriptedConnection()
        let bodies = Counter()
        await #expect(throws: BusinessRuleViolation.self) {
            try await self.policy().writeTransaction(executeSQL: connection.execute) {
                bodies.increment()
                throw BusinessRuleViolation()
            }
        }
        #expect(bodies.value == 1)
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "ROLLBACK"])
    }

    @Test func busyIsRetriedFromTheStart() async throws {
        let connection = ScriptedConnection(failing: ["COMMIT": [SQLiteError(code: 5)]])
        let value = try await self.policy().writeTransaction(executeSQL: connection.execute) { 42 }
        #expect(value == 42)
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", "BEGIN IMMEDIATE", "COMMIT"])
    }

    @Test func aFailedRollbackIsSurfacedAndEndsTheCall() async throws {
        let connection = ScriptedConnection(
            failing: ["COMMIT": [SQLiteError(code: 5)], "ROLLBACK": [SQLiteError(code: 1, message: "disk I/O")]])
        let error = try await #require(throws: SQLiteRollbackError.self) {
            try await self.policy().writeTransaction(executeSQL: connection.execute) { 1 }
        }
        #expect((error.transactionError as? SQLiteError)?.code == .busy)
        #expect((error.rollbackError as? SQLiteError)?.message == "disk I/O")
        #expect(
            connection.log.values == ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"], "no retry on a connection in doubt")
    }

    @Test func noRollbackIsSentWhenSQLiteAlreadyEndedTheTransaction() async throws {
        let connection = ScriptedConnection(failing: ["COMMIT": [SQLiteError(code: 13)]])
        let notInTransaction: () -> Bool = { false }
        await #expect(throws: SQLiteError.self) {
            try await self.policy().writeTransaction(
                isInTransaction: notInTransaction, executeSQL: connection.execute
            ) { 1 }
        }
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "COMMIT"])
    }

    @Test func aSavepointIsReleasedOrRolledBackToNeverCommitted() async throws {
        let connection = ScriptedConnection(failing: ["RELEASE step": [SQLiteError(code: 5)]])
        _ = try await self.policy().writeTransaction(beginStatement: "SAVEPOINT step", executeSQL: connection.execute) {
            1
        }
        #expect(
            connection.log.values == [
                "SAVEPOINT step", "RELEASE step", "ROLLBACK TO step", "RELEASE step", "SAVEPOINT step", "RELEASE step",
            ])
        #expect(!connection.log.values.contains("COMMIT"))
    }

    @Test func aSavepointInsideTheCallersTransactionLeavesThatTransactionOpen() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE orders (item TEXT NOT NULL)")
        try connection.execute("BEGIN")
        try connection.execute("INSERT INTO orders (item) VALUES ('outer')")
        _ = try await self.policy().writeTransaction(beginStatement: "SAVEPOINT inner", executeSQL: connection.execute)
        {
            try connection.execute("INSERT INTO orders (item) VALUES ('inner')")
        }
        // The caller still decides: rolling back its transaction undoes both rows.
        try connection.execute("ROLLBACK")
        #expect(try connection.strings("SELECT item FROM orders") == [])
    }
}
