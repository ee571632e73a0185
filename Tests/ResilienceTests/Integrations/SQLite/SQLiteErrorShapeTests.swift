import Foundation
import Resilience
import ResilienceTesting
import Testing

/// An SQLite error is judged the same whether thrown directly or wrapped in an app's own error.
@Suite struct SQLiteErrorShapeTests {
    enum DatabaseError: Error {
        case sqlite(SQLiteError)
    }

    /// The shapes one SQLite error may reach a policy in.
    private func shapes(of error: SQLiteError) -> [(String, any Error)] {
        [
            ("direct", error),
            ("user enum", DatabaseError.sqlite(error)),
            ("NSUnderlyingErrorKey", NSError(domain: "DB", code: 19, userInfo: [NSUnderlyingErrorKey: error])),
        ]
    }

    /// "Every RetryPolicy retries SQLITE_BUSY and SQLITE_LOCKED and nothing else. Constraint violations,
    /// corruption, a full disk and misuse are final." A wrapper's constraint violation is still final.
    @Test func aConstraintViolationIsFinalInAnyShape() async throws {
        for (shape, error) in self.shapes(of: SQLiteError(code: 19, message: "UNIQUE constraint failed")) {
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
            let inserts = Counter()
            _ = await policy.outcome { () async throws -> Int in
                inserts.increment()
                throw error
            }
            #expect(inserts.value == 1, "\(shape): the failing INSERT ran \(inserts.value) times")
        }
    }

    @Test func aBusyDatabaseIsRetriedByATransactionInAnyShape() async throws {
        for (shape, error) in self.shapes(of: SQLiteError(code: .busy)) {
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
            let runs = Counter()
            let work: () async throws -> Int = {
                runs.increment()
                if runs.value == 1 { throw error }
                return 7
            }
            let value = try await policy.writeTransaction(executeSQL: { _ in }, operation: work)
            #expect(value == 7, "\(shape)")
            #expect(runs.value == 2, "\(shape): the transaction ran \(runs.value) times")
        }
    }

    /// A failed rollback leaves the connection's state unknown: the busy error it carries does not make it retried.
    @Test func aFailedRollbackIsNeverRetriedInAnyShape() {
        let rollback = SQLiteRollbackError(
            transactionError: SQLiteError(code: .busy), rollbackError: SQLiteError(code: 1))
        let context = RetryContext(attempt: 1)
        for (shape, error) in [("direct", rollback as any Error), ("user enum", DeclaredAppError.transport(rollback))] {
            #expect(SQLiteRetryClassifier().decision(for: error, context: context) == .doNotRetry, "\(shape)")
            #expect(DefaultRetryClassifier().decision(for: error, context: context) == .doNotRetry, "\(shape)")
        }
    }

    @Test func anotherLibrarysWrappedCodeIsRead() {
        struct LibraryError: Error { var extendedResultCode: Int32 }
        let classifier = SQLiteRetryClassifier { ($0 as? LibraryError)?.extendedResultCode }
        let context = RetryContext(attempt: 1)
        #expect(
            classifier.decision(for: SilentAppError.transport(LibraryError(extendedResultCode: 517)), context: context)
                == .retry)
        #expect(
            classifier.decision(for: SilentAppError.transport(LibraryError(extendedResultCode: 2067)), context: context)
                == .doNotRetry)
        #expect(classifier.decision(for: SilentAppError.transport(TransientError()), context: context) == nil)
    }
}
