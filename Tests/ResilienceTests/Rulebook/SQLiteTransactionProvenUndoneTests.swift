import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A transaction that provably did nothing (SQLite refused its `BEGIN`, or its rollback
/// succeeded) is retried inside a call declared not idempotent, and that word stays with the
/// transaction: the enclosing call and the calls nested in the work keep their declaration.
@Suite(.timeLimit(.minutes(5)))
struct SQLiteTransactionInsideANotIdempotentCallTests {
    typealias ScriptedConnection = SQLiteTransactionSeamTests.ScriptedConnection

    struct Unknown: Error {}

    private func databasePolicy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    /// A transaction that SQLite refused at `BEGIN IMMEDIATE` did nothing, so retrying it sends nothing twice,
    /// even inside a call declared not idempotent (a POST whose result is being recorded locally).
    @Test func aBusyBeginInsideANotIdempotentCallIsRetried() async throws {
        let outer = try RetryPolicy(maximumAttempts: 1, clock: TestClock())
        let database = try self.databasePolicy()
        let connection = ScriptedConnection(failing: ["BEGIN IMMEDIATE": [SQLiteError(code: 5)]])
        let bodies = Counter()
        let outcome = await outer.outcome(idempotency: .notIdempotent) {
            try await database.writeTransaction(executeSQL: connection.execute) {
                bodies.increment()
                return 42
            }
        }
        #expect(try outcome.result.get() == 42)
        #expect(await database.statistics.stopReasons[.notIdempotent] == nil, "stopped as not idempotent")
        #expect(bodies.value == 1)
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "BEGIN IMMEDIATE", "COMMIT"])
    }

    /// The same with a busy commit, which the helper rolled back before deciding.
    @Test func aRolledBackBusyCommitInsideANotIdempotentCallIsRetried() async throws {
        let outer = try RetryPolicy(maximumAttempts: 1, clock: TestClock())
        let database = try self.databasePolicy()
        let connection = ScriptedConnection(failing: ["COMMIT": [SQLiteError(code: 5)]])
        let outcome = await outer.outcome(idempotency: .notIdempotent) {
            try await database.writeTransaction(executeSQL: connection.execute) { 42 }
        }
        #expect(try outcome.result.get() == 42)
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK", "BEGIN IMMEDIATE", "COMMIT"])
    }

    /// The transaction's retries do not make the enclosing call safe to repeat: once they are
    /// spent, the enclosing call, declared not idempotent, is not run again.
    @Test func theEnclosingNotIdempotentCallIsNotRunAgainWhenTheTransactionGivesUp() async throws {
        let outer = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let database = try self.databasePolicy()
        let busy = [SQLiteError](repeating: SQLiteError(code: 5), count: 9)
        let connection = ScriptedConnection(failing: ["BEGIN IMMEDIATE": busy])
        let posts = Counter()
        let outcome = await outer.outcome(idempotency: .notIdempotent) {
            posts.increment()
            return try await database.writeTransaction(executeSQL: connection.execute) { 42 }
        }
        #expect((outcome.error as? SQLiteError)?.code == .busy, "the attempt's own error, unchanged")
        #expect(outcome.stopReason == .notIdempotent)
        #expect(posts.value == 1)
        #expect(connection.log.values.count == 3, "the transaction's own three attempts")
        #expect(await database.statistics.stopReasons[.exhausted] == 1)
    }

    /// A call nested in the transaction's work still inherits the enclosing "not idempotent":
    /// the transaction's word about its own attempts is not handed down.
    @Test func aCallNestedInTheWorkKeepsTheEnclosingDeclaration() async throws {
        let outer = try RetryPolicy(maximumAttempts: 1, clock: TestClock())
        let database = try self.databasePolicy()
        let nested = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let connection = ScriptedConnection(failing: ["COMMIT": [SQLiteError(code: 5)]])
        let nestedAttempts = Counter()
        _ = await outer.outcome(idempotency: .notIdempotent) {
            try await database.writeTransaction(executeSQL: connection.execute) {
                _ = await nested.outcome { () async throws -> Int in
                    nestedAttempts.increment()
                    throw Unknown()
                }
            }
        }
        #expect(nestedAttempts.value == 2, "once per transaction attempt, never retried on its own")
        #expect(await nested.statistics.stopReasons[.notIdempotent] == 2)
    }

    /// When SQLite ended the transaction on its own and no rollback ran, nothing proves what it
    /// kept: inside a call declared not idempotent, it is not retried.
    @Test func aTransactionSQLiteEndedOnItsOwnProvesNothing() async throws {
        let outer = try RetryPolicy(maximumAttempts: 1, clock: TestClock())
        let database = try self.databasePolicy()
        let connection = ScriptedConnection(failing: ["COMMIT": [SQLiteError(code: 5)]])
        let notInTransaction: () -> Bool = { false }
        let outcome = await outer.outcome(idempotency: .notIdempotent) {
            try await database.writeTransaction(isInTransaction: notInTransaction, executeSQL: connection.execute) {
                42
            }
        }
        #expect((outcome.error as? SQLiteError)?.code == .busy)
        #expect(await database.statistics.stopReasons[.notIdempotent] == 1)
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "COMMIT"])
    }

    /// A classifier that retries everything does not retry a transaction whose rollback failed.
    @Test func aFailedRollbackEndsTheCallWhateverTheClassifierSays() async throws {
        struct RetryEverything: RetryClassifier {
            func decision(for error: any Error, context: RetryContext) -> RetryDecision? { .retry }
        }
        let database = try self.databasePolicy()
        let connection = ScriptedConnection(
            failing: ["COMMIT": [SQLiteError(code: 5)], "ROLLBACK": [SQLiteError(code: 10)]])
        await #expect(throws: SQLiteRollbackError.self) {
            try await database.writeTransaction(classifier: RetryEverything(), executeSQL: connection.execute) { 1 }
        }
        #expect(connection.log.values == ["BEGIN IMMEDIATE", "COMMIT", "ROLLBACK"])
        #expect(await database.statistics.stopReasons[.notRetryable] == 1)
    }
}
