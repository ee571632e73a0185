import Resilience
import ResilienceTesting
import Testing

@Suite struct SQLiteRetryClassifierTests {
    private let context = RetryContext(attempt: 1)

    @Test(arguments: [Int32(5), 6, 261, 517, 773, 262, 518])
    func busyAndLockedAreRetriedWithTheirExtendedCodes(code: Int32) {
        let error = SQLiteError(code: code, message: "database is locked")
        #expect(error.isRetryable)
        #expect(SQLiteRetryClassifier().decision(for: error, context: self.context) == .retry)
        #expect(DefaultRetryClassifier().decision(for: error, context: self.context) == .retry)
    }

    @Test(arguments: [
        SQLiteResultCode.constraint, .constraintUnique, .constraintPrimaryKey, .corrupt, .full, .misuse, .error,
        .readOnly, .ioError, .notADatabase, .interrupt,
    ])
    func otherCodesAreFinal(code: SQLiteResultCode) {
        let error = SQLiteError(code: code)
        #expect(!error.isRetryable)
        #expect(SQLiteRetryClassifier().decision(for: error, context: self.context) == .doNotRetry)
        #expect(DefaultRetryClassifier().decision(for: error, context: self.context) == .doNotRetry)
    }

    @Test func extendedCodesKnowTheirPrimaryCode() {
        #expect(SQLiteResultCode.busySnapshot.primary == .busy)
        #expect(SQLiteResultCode.constraintUnique.primary == .constraint)
        #expect(SQLiteResultCode.busy.primary == .busy)
    }

    @Test func describesCodesByName() {
        #expect(SQLiteResultCode.busy.description == "SQLITE_BUSY (5)")
        #expect(SQLiteResultCode(rawValue: 773).description == "SQLite result 773 (SQLITE_BUSY)")
        #expect(SQLiteResultCode(rawValue: 4_242).description == "SQLite result 4242")
        #expect(
            SQLiteError(code: 5, message: "database is locked").description == "SQLITE_BUSY (5): database is locked")
    }

    @Test func readsCodesFromOtherLibrariesErrors() {
        struct WrapperError: Error { var resultCode: Int32 }
        let classifier = SQLiteRetryClassifier { ($0 as? WrapperError)?.resultCode }
        #expect(classifier.decision(for: WrapperError(resultCode: 5), context: self.context) == .retry)
        #expect(classifier.decision(for: WrapperError(resultCode: 19), context: self.context) == .doNotRetry)
        #expect(classifier.decision(for: SQLiteError(code: 6), context: self.context) == .retry)
        struct Unrelated: Error {}
        #expect(classifier.decision(for: Unrelated(), context: self.context) == nil)
    }

    @Test func transactionRollsBackBeforeEachRetryAndCommitsOnce() async throws {
        let log = StatementLog()
        let policy = try RetryPolicy(maximumAttempts: 4, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let attempts = Counter()
        let value = try await policy.writeTransaction(executeSQL: log.record) {
            log.record("INSERT")
            if attempts.increment() < 3 { throw SQLiteError(code: .busy) }
            return 42
        }
        #expect(value == 42)
        #expect(
            log.statements == [
                "BEGIN IMMEDIATE", "INSERT", "ROLLBACK",
                "BEGIN IMMEDIATE", "INSERT", "ROLLBACK",
                "BEGIN IMMEDIATE", "INSERT", "COMMIT",
            ])
    }

    @Test func transactionStopsAtOnceOnAConstraintViolation() async throws {
        let log = StatementLog()
        let policy = try RetryPolicy(maximumAttempts: 4, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        await #expect(throws: SQLiteError(code: .constraintUnique)) {
            try await policy.writeTransaction(beginStatement: "BEGIN", executeSQL: log.record) {
                throw SQLiteError(code: .constraintUnique)
            }
        }
        #expect(log.statements == ["BEGIN", "ROLLBACK"])
    }

    @Test func aBusyCommitIsRolledBackAndRetried() async throws {
        let log = StatementLog()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let commits = Counter()
        try await policy.writeTransaction(
            executeSQL: { statement in
                log.record(statement)
                if statement == "COMMIT", commits.increment() == 1 { throw SQLiteError(code: .busy) }
            },
            operation: { log.record("UPDATE") }
        )
        #expect(
            log.statements == [
                "BEGIN IMMEDIATE", "UPDATE", "COMMIT", "ROLLBACK", "BEGIN IMMEDIATE", "UPDATE", "COMMIT",
            ])
    }
}

/// The statements a fake connection was asked to run, in order.
private final class StatementLog {
    private(set) var statements: [String] = []

    func record(_ statement: String) {
        self.statements.append(statement)
    }
}
