import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// The errors the SQLite helper wraps a failure in (``SQLiteRollbackError``,
/// ``SQLiteEnclosingTransactionLostError``, ``SQLiteEnclosingTransactionStaleError``) keep what
/// they say when bridged `as NSError` (a plain `NSError` on Linux): alone, below another error's
/// `NSUnderlyingErrorKey`, or in an app's enum. A failed rollback is never retried, a lost or
/// stale enclosing transaction is judged by the error inside, and a 429, a `Retry-After` or a
/// request that is not idempotent inside any of them is read as from the Swift value.
@Suite(.timeLimit(.minutes(5)))
struct SQLiteWrapperErrorBridgeTests {
    typealias Shape = BridgedErrorFactsTests.Shape

    static let retryEverything = BridgedErrorFactsTests.retryEverything

    /// A rollback that failed after a busy transaction: were the busy code read, it would be retried.
    static let rollback = SQLiteRollbackError(
        transactionError: SQLiteError(code: 5, message: "database is locked"),
        rollbackError: SQLiteError(code: 1, message: "cannot rollback - no transaction is active"))

    /// Each wrapper around `inner`, named for the failure messages.
    static func wrappers(around inner: any Error) -> [(name: String, error: any Error)] {
        [
            (
                "rollback",
                SQLiteRollbackError(
                    transactionError: inner, rollbackError: SQLiteError(code: 1, message: "no transaction"))
            ),
            ("lost", SQLiteEnclosingTransactionLostError(savepointError: inner)),
            ("stale", SQLiteEnclosingTransactionStaleError(savepointError: inner)),
        ]
    }

    // MARK: - What the bridged form holds

    @Test func eachKeepsADomainItsDescriptionAndTheErrorsItWraps() throws {
        let transaction = SQLiteError(code: 5)
        let rollbackFailure = SQLiteError(code: 1)
        let rollback = SQLiteRollbackError(transactionError: transaction, rollbackError: rollbackFailure) as NSError
        #expect(rollback.domain == "Resilience.SQLiteRollbackError")
        #expect(rollback.code == 1)
        #expect(
            rollback.localizedDescription
                == SQLiteRollbackError(transactionError: transaction, rollbackError: rollbackFailure).description)
        #expect((rollback.userInfo[NSUnderlyingErrorKey] as? SQLiteError) == transaction)
        let others = try #require(rollback.userInfo["NSMultipleUnderlyingErrorsKey"] as? [any Error])
        #expect(others.count == 1)
        #expect((others.first as? SQLiteError) == rollbackFailure)

        let lostError = SQLiteEnclosingTransactionLostError(savepointError: SQLiteError(code: 13))
        let lost = lostError as NSError
        #expect(lost.domain == "Resilience.SQLiteEnclosingTransactionLostError")
        #expect(lost.code == 1)
        #expect(lost.localizedDescription == lostError.description)
        #expect((lost.userInfo[NSUnderlyingErrorKey] as? SQLiteError) == SQLiteError(code: 13))

        let staleError = SQLiteEnclosingTransactionStaleError(savepointError: SQLiteError(code: 517))
        let stale = staleError as NSError
        #expect(stale.domain == "Resilience.SQLiteEnclosingTransactionStaleError")
        #expect(stale.code == 1)
        #expect(stale.localizedDescription == staleError.description)
        #expect((stale.userInfo[NSUnderlyingErrorKey] as? SQLiteError) == SQLiteError(code: 517))
    }

    // MARK: - A failed rollback is final

    @Test(arguments: Shape.allCases)
    func aBridgedRollbackFailureIsNeverRetried(shape: Shape) async throws {
        let thrown = shape.wrap(Self.rollback)
        let context = RetryContext(attempt: 1)
        for classifier in [DefaultRetryClassifier(), SQLiteRetryClassifier()] as [any RetryClassifier] {
            #expect(
                classifier.decision(for: thrown, context: context) == .doNotRetry,
                "\(shape) \(classifier): the busy transaction inside is not what decides")
            let clock = TestClock()
            let policy = try BridgedErrorFactsTests.policy(classifier, clock: clock)
            let outcome: RetryOutcome<Int> = await BridgedErrorFactsTests.driven(clock) {
                await policy.outcome { throw thrown }
            }
            let original: RetryOutcome<Int> = await policy.outcome { throw Self.rollback }
            #expect(outcome.attempts == 1, "\(shape) \(classifier)")
            #expect(outcome.stopReason == original.stopReason, "\(shape) \(classifier)")
            #expect(outcome.stopReason == .notRetryable, "\(shape) \(classifier)")

            let runs = Counter()
            await BridgedErrorFactsTests.driven(clock) {
                _ = try? await policy.execute { () async throws -> Int in
                    runs.increment()
                    throw thrown
                }
            }
            #expect(runs.value == 1, "the work ran again on a connection in an unknown state: \(shape) \(classifier)")
        }
    }

    // MARK: - A lost or stale enclosing transaction is judged by the error inside

    @Test(arguments: Shape.allCases)
    func aBridgedLostOrStaleTransactionIsJudgedByTheErrorInside(shape: Shape) {
        let context = RetryContext(attempt: 1)
        let cases: [(any Error, RetryDecision)] = [
            (SQLiteEnclosingTransactionLostError(savepointError: SQLiteError(code: 13)), .doNotRetry),
            (SQLiteEnclosingTransactionLostError(savepointError: SQLiteError(code: 19)), .doNotRetry),
            (SQLiteEnclosingTransactionLostError(savepointError: SQLiteError(code: 5)), .retry),
            (SQLiteEnclosingTransactionStaleError(savepointError: SQLiteError(code: 517)), .retry),
        ]
        for (error, expected) in cases {
            let thrown = shape.wrap(error)
            for classifier in [DefaultRetryClassifier(), SQLiteRetryClassifier()] as [any RetryClassifier] {
                let decision = classifier.decision(for: thrown, context: context)
                #expect(decision == expected, "\(shape) \(classifier) \(error)")
                #expect(
                    decision == classifier.decision(for: error, context: context), "\(shape) \(classifier) \(error)")
            }
        }
    }

    @Test(arguments: Shape.allCases)
    func aBridgedLostTransactionAfterAFinalErrorIsNotRunAgain(shape: Shape) async throws {
        let thrown = shape.wrap(SQLiteEnclosingTransactionLostError(savepointError: SQLiteError(code: 13)))
        for classifier in [DefaultRetryClassifier(), SQLiteRetryClassifier()] as [any RetryClassifier] {
            let clock = TestClock()
            let policy = try BridgedErrorFactsTests.policy(classifier, clock: clock)
            let runs = Counter()
            await BridgedErrorFactsTests.driven(clock) {
                _ = try? await policy.execute { () async throws -> Int in
                    runs.increment()
                    throw thrown
                }
            }
            #expect(runs.value == 1, "a full database is retried: \(shape) \(classifier)")
        }
    }

    // MARK: - The facts of the wrapped error survive

    @Test(arguments: Shape.allCases)
    func aWrapped429IsNeverRetriedAndItsRetryAfterIsRead(shape: Shape) async throws {
        let tooMany = HTTPResponseError(statusCode: 429, headers: ["Retry-After": "5"])
        for (name, wrapper) in Self.wrappers(around: tooMany) {
            let thrown = shape.wrap(wrapper)
            #expect(ErrorHints.isTooManyRequests(thrown), "\(shape) \(name)")
            #expect(FailureAnalysis(thrown).retryAfter == .seconds(5), "\(shape) \(name)")
            let clock = TestClock()
            let policy = try BridgedErrorFactsTests.policy(Self.retryEverything, clock: clock)
            let outcome: RetryOutcome<Int> = await BridgedErrorFactsTests.driven(clock) {
                await policy.outcome { throw thrown }
            }
            let original: RetryOutcome<Int> = await policy.outcome { throw wrapper }
            #expect(outcome.attempts == 1, "\(shape) \(name)")
            #expect(outcome.stopReason == .tooManyRequests, "\(shape) \(name)")
            #expect(outcome.stopReason == original.stopReason, "\(shape) \(name)")
            #expect(outcome.retryAfter == .seconds(5), "\(shape) \(name)")
        }
    }

    @Test(arguments: Shape.allCases)
    func aWrappedRequestThatIsNotIdempotentIsNotSentAgain(shape: Shape) async throws {
        let post = HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST"))
        for (name, wrapper) in Self.wrappers(around: post) {
            let thrown = shape.wrap(wrapper)
            #expect(FailureAnalysis(thrown).requestIdempotency == .http(method: "POST"), "\(shape) \(name)")
            let clock = TestClock()
            let policy = try BridgedErrorFactsTests.policy(Self.retryEverything, clock: clock)
            let outcome: RetryOutcome<Int> = await BridgedErrorFactsTests.driven(clock) {
                await policy.outcome { throw thrown }
            }
            let original: RetryOutcome<Int> = await policy.outcome { throw wrapper }
            #expect(outcome.attempts == 1, "\(shape) \(name)")
            #expect(outcome.stopReason == .notIdempotent, "\(shape) \(name)")
            #expect(outcome.stopReason == original.stopReason, "\(shape) \(name)")
        }
    }

    @Test(arguments: Shape.allCases)
    func aWrapped503sRetryAfterSetsTheWait(shape: Shape) async throws {
        let unavailable = HTTPResponseError(statusCode: 503, headers: ["Retry-After": "7"])
        // The rollback's failure is final; the other two are judged by the 503 inside.
        for (name, wrapper) in Self.wrappers(around: unavailable) where name != "rollback" {
            let thrown = shape.wrap(wrapper)
            let clock = TestClock()
            let policy = try BridgedErrorFactsTests.policy(DefaultRetryClassifier(), clock: clock)
            let calls = Counter()
            let outcome = await BridgedErrorFactsTests.driven(clock) {
                await policy.outcome(idempotency: .idempotent) { () async throws -> Int in
                    let call = calls.increment()
                    if call == 1 { throw thrown }
                    return call
                }
            }
            #expect(outcome.attempts == 2, "\(shape) \(name)")
            #expect(outcome.elapsed == .seconds(7), "the server's wait, not the 1-second backoff: \(shape) \(name)")
        }
    }

    // MARK: - On the real libsqlite3

    /// A table whose database has no page to spare: a large row fails with `SQLITE_FULL`, after
    /// which SQLite rolls the whole transaction back on its own.
    static func fullDatabase() throws -> (TemporaryDatabase, SQLiteConnection) {
        let database = try TemporaryDatabase()
        let connection = try SQLiteConnection(path: database.path)
        try connection.execute("CREATE TABLE orders (item BLOB NOT NULL)")
        let pages = try #require(try connection.strings("PRAGMA page_count").first)
        _ = try connection.strings("PRAGMA max_page_count = \(pages)")
        return (database, connection)
    }

    /// A transaction run without `isInTransaction:` fails with `SQLITE_FULL`; SQLite has already
    /// rolled it back, so the helper's `ROLLBACK` fails and the call ends with an
    /// ``SQLiteRollbackError``. The app bridges it; a policy around the app's work must not
    /// run that work again.
    @Test(arguments: Shape.allCases)
    func aRealFailedRollbackBridgedIsNotRunAgain(shape: Shape) async throws {
        for classifier in [DefaultRetryClassifier(), SQLiteRetryClassifier()] as [any RetryClassifier] {
            let (database, connection) = try Self.fullDatabase()
            defer { database.remove() }
            let outer = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: classifier,
                clock: TestClock())
            let inner = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
            let runs = Counter()
            let thrown = Lock<(any Error)?>(nil)
            await #expect(throws: (any Error).self) {
                try await outer.execute {
                    do {
                        try await inner.writeTransaction(executeSQL: connection.execute) {
                            runs.increment()
                            try connection.execute("INSERT INTO orders (item) VALUES (randomblob(100000))")
                        }
                    } catch {
                        thrown.withLock { $0 = error }
                        throw shape.wrap(error)
                    }
                }
            }
            let error = try #require(thrown.withLock { $0 } as? SQLiteRollbackError, "\(shape) \(classifier)")
            #expect((error.transactionError as? SQLiteError)?.code.primary == .full)
            #expect(runs.value == 1, "the work ran again after a failed rollback: \(shape) \(classifier)")
            #expect(await outer.statistics.retries == 0, "\(shape) \(classifier)")
        }
    }

    /// A savepoint nested in the caller's transaction fails with `SQLITE_FULL`, and SQLite rolls
    /// the caller's transaction back: the call ends with ``SQLiteEnclosingTransactionLostError``.
    /// The app bridges it; a policy around the caller's whole transaction does not run it again,
    /// since a full database stays full.
    @Test(arguments: Shape.allCases)
    func aRealLostTransactionBridgedAfterAFullDatabaseIsNotRunAgain(shape: Shape) async throws {
        for classifier in [DefaultRetryClassifier(), SQLiteRetryClassifier()] as [any RetryClassifier] {
            let (database, connection) = try Self.fullDatabase()
            defer { database.remove() }
            let outer = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: classifier,
                clock: TestClock())
            let inner = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
            let runs = Counter()
            let thrown = Lock<(any Error)?>(nil)
            await #expect(throws: (any Error).self) {
                try await outer.execute {
                    runs.increment()
                    try connection.execute("BEGIN")
                    try connection.execute("INSERT INTO orders (item) VALUES ('outer')")
                    do {
                        try await inner.writeTransaction(
                            beginStatement: "SAVEPOINT inner", isInTransaction: { connection.isInTransaction },
                            executeSQL: connection.execute
                        ) {
                            try connection.execute("INSERT INTO orders (item) VALUES (randomblob(100000))")
                        }
                    } catch {
                        thrown.withLock { $0 = error }
                        throw shape.wrap(error)
                    }
                    try connection.execute("COMMIT")
                }
            }
            let error = try #require(
                thrown.withLock { $0 } as? SQLiteEnclosingTransactionLostError, "\(shape) \(classifier)")
            #expect((error.savepointError as? SQLiteError)?.code.primary == .full)
            #expect(runs.value == 1, "a full database was tried again: \(shape) \(classifier)")
            #expect(!connection.isInTransaction)
            #expect(try connection.strings("SELECT item FROM orders") == [])
        }
    }

    /// A savepoint in a stale WAL snapshot ends with ``SQLiteEnclosingTransactionStaleError``;
    /// the app bridges it. The `writeTransaction` running the caller's transaction still reads
    /// the busy code inside, rolls back and retries the whole transaction, which commits.
    @Test(arguments: Shape.allCases)
    func aRealStaleSnapshotBridgedHasTheEnclosingTransactionRetried(shape: Shape) async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let caller = try SQLiteConnection(path: database.path)
        try caller.execute("PRAGMA journal_mode = WAL; CREATE TABLE orders (item TEXT NOT NULL)")
        let other = try SQLiteConnection(path: database.path)
        let outer = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let transactions = Counter()
        let thrown = Lock<(any Error)?>(nil)
        try await outer.writeTransaction(
            beginStatement: "BEGIN",
            isInTransaction: { caller.isInTransaction },
            executeSQL: { try caller.execute($0) },
            operation: {
                _ = try caller.strings("SELECT count(*) FROM orders")
                if transactions.increment() == 1 {
                    try other.execute("INSERT INTO orders (item) VALUES ('other')")
                }
                do {
                    try await inner.writeTransaction(
                        beginStatement: "SAVEPOINT nested",
                        isInTransaction: { caller.isInTransaction },
                        executeSQL: { try caller.execute($0) },
                        operation: { try caller.execute("INSERT INTO orders (item) VALUES ('mine')") }
                    )
                } catch {
                    thrown.withLock { $0 = error }
                    throw shape.wrap(error)
                }
            }
        )
        #expect(thrown.withLock { $0 } is SQLiteEnclosingTransactionStaleError, "\(shape)")
        #expect(transactions.value == 2, "\(shape)")
        #expect(!caller.isInTransaction)
        #expect(try other.strings("SELECT item FROM orders ORDER BY rowid") == ["other", "mine"])
    }
}
