import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// The public errors that carry rule facts keep them when bridged `as NSError` (a plain
/// `NSError` on Linux): alone, below another error's `NSUnderlyingErrorKey`, or in an app's
/// enum, a 429 is never retried, a `Retry-After` is honoured, a `POST` answered 503 is not sent
/// again, and an SQLite result code is judged as the Swift value is.
@Suite("Bridged errors keep their rule facts")
struct BridgedErrorFactsTests {
    /// An app's own error holding what it caught.
    enum AppError: Error {
        case failed(any Error)
    }

    /// The forms a bridged error reaches a policy in.
    enum Shape: String, CaseIterable, Sendable {
        /// `error as NSError`.
        case bridged
        /// That, below `NSUnderlyingErrorKey` of an app's `NSError`.
        case underlying
        /// That, in an app's enum.
        case appEnum

        func wrap(_ error: any Error) -> any Error {
            let bridged = error as NSError
            switch self {
            case .bridged: return bridged
            case .underlying: return NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: bridged])
            case .appEnum: return AppError.failed(bridged)
            }
        }
    }

    static let retryEverything = ClosureRetryClassifier { _, _ in .retry }

    static func policy(_ classifier: any RetryClassifier, clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, classifier: classifier,
            maximumRetryAfter: .seconds(60), clock: clock)
    }

    /// Runs `body` while moving `clock` to each deadline the call waits on.
    static func driven<T: Sendable>(_ clock: TestClock, _ body: @escaping @Sendable () async -> T) async -> T {
        let task = Task { await body() }
        let driver = Task { while await clock.advanceToNextDeadline(within: .seconds(100)) != nil {} }
        let value = await task.value
        driver.cancel()
        return value
    }

    // MARK: - What the bridged form holds

    @Test func anHTTPResponseErrorKeepsItsStatusHintIdempotencyAndDelivery() {
        let post = Idempotency.http(method: "POST")
        let error = HTTPResponseError(
            statusCode: 429, headers: ["Retry-After": "30"], url: URL(string: "https://example.com/orders"),
            requestIdempotency: post, recordedDelivery: .mayHaveBeenSent)
        let bridged = error as NSError
        #expect(bridged.domain == "Resilience.HTTPResponseError")
        #expect(bridged.domain == HTTPResponseError.errorDomain)
        #expect(bridged.code == 429)
        #expect(bridged.localizedDescription == error.description)
        #expect(bridged.userInfo["HTTPStatusCode"] as? Int == 429)
        #expect(bridged.userInfo["Retry-After"] as? Double == 30)
        #expect(bridged.userInfo[ErrorHints.requestIdempotencyKey] as? Idempotency == post)
        #expect(bridged.userInfo[ErrorHints.requestDeliveryKey] as? RequestDelivery == .mayHaveBeenSent)
        let bare = HTTPResponseError(statusCode: 503) as NSError
        #expect(bare.userInfo["Retry-After"] == nil, "no hint, no entry")
        #expect(bare.userInfo[ErrorHints.requestIdempotencyKey] == nil)
        #expect(bare.userInfo[ErrorHints.requestDeliveryKey] == nil)
    }

    @Test func aRESTServiceErrorKeepsItsCodesStatusHintAndUnderlyingError() {
        let sdk = NSError(domain: "KiiCloud", code: 503)
        let error = RESTServiceError(
            sdkCode: 503, httpStatus: 409, serverErrorCode: "USER_ALREADY_EXISTS", message: "Duplicate entry exists",
            retryAfter: .seconds(2), underlying: sdk)
        let bridged = error as NSError
        #expect(bridged.domain == "Resilience.RESTServiceError")
        #expect(bridged.code == 503)
        #expect(bridged.localizedDescription == error.description)
        #expect(bridged.userInfo["HTTPStatusCode"] as? Int == 409)
        #expect(bridged.userInfo["Retry-After"] as? Double == 2)
        #expect((bridged.userInfo[NSUnderlyingErrorKey] as? NSError)?.domain == "KiiCloud")
    }

    @Test func anSQLiteErrorKeepsItsResultCode() {
        let bridged = SQLiteError(code: 517, message: "database is locked") as NSError
        #expect(bridged.domain == "Resilience.SQLiteError")
        #expect(bridged.code == 517)
        #expect(bridged.localizedDescription == SQLiteError(code: 517, message: "database is locked").description)
    }

    // MARK: - HTTP 429 is never retried, whatever a classifier says

    @Test(arguments: Shape.allCases)
    func aBridged429IsNeverRetried(shape: Shape) async throws {
        let failures: [any Error] = [
            HTTPResponseError(statusCode: 429, headers: ["Retry-After": "5"]),
            RESTServiceError(sdkCode: 1, httpStatus: 429, retryAfter: .seconds(5)),
        ]
        for failure in failures {
            let clock = TestClock()
            let policy = try Self.policy(Self.retryEverything, clock: clock)
            let thrown = shape.wrap(failure)
            let outcome: RetryOutcome<Int> = await policy.outcome { throw thrown }
            #expect(outcome.attempts == 1, "\(shape) \(failure)")
            #expect(outcome.stopReason == .tooManyRequests, "\(shape) \(failure)")
            #expect(outcome.retryAfter == .seconds(5), "\(shape) \(failure)")

            var attempts = 0
            do {
                _ = try await policy.execute { () async throws -> Int in
                    attempts += 1
                    throw thrown
                }
            } catch {}
            #expect(attempts == 1, "\(shape) \(failure)")
            #expect(ErrorHints.isTooManyRequests(thrown), "\(shape) \(failure)")
        }
    }

    // MARK: - Retry-After is honoured

    @Test(arguments: Shape.allCases)
    func aBridged503sRetryAfterSetsTheWait(shape: Shape) async throws {
        let failures: [any Error] = [
            HTTPResponseError(statusCode: 503, headers: ["Retry-After": "7"]),
            RESTServiceError(sdkCode: 1, httpStatus: 503, retryAfter: .seconds(7)),
        ]
        for failure in failures {
            let clock = TestClock()
            let policy = try Self.policy(DefaultRetryClassifier(), clock: clock)
            let thrown = shape.wrap(failure)
            #expect(FailureAnalysis(thrown).retryAfter == .seconds(7), "\(shape) \(failure)")
            let calls = Lock(0)
            let outcome = await Self.driven(clock) {
                await policy.outcome(idempotency: .idempotent) { () async throws -> Int in
                    let call = calls.withLock { count in
                        count += 1
                        return count
                    }
                    if call == 1 { throw thrown }
                    return call
                }
            }
            #expect(outcome.attempts == 2, "\(shape) \(failure)")
            #expect(outcome.elapsed == .seconds(7), "the server's wait, not the 1-second backoff: \(shape) \(failure)")
        }
    }

    // MARK: - A POST answered 503 is not sent again

    @Test(arguments: Shape.allCases)
    func aBridgedPOSTs503IsNotSentAgain(shape: Shape) async throws {
        let failure = HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST"))
        let thrown = shape.wrap(failure)
        for classifier in [Self.retryEverything, DefaultRetryClassifier()] as [any RetryClassifier] {
            let clock = TestClock()
            let policy = try Self.policy(classifier, clock: clock)
            let outcome: RetryOutcome<Int> = await policy.outcome { throw thrown }
            #expect(outcome.attempts == 1, "\(shape) \(classifier)")
            #expect(outcome.stopReason == .notIdempotent, "\(shape) \(classifier)")
        }
        #expect(FailureAnalysis(thrown).requestIdempotency == .http(method: "POST"), "\(shape)")
    }

    @Test(arguments: Shape.allCases)
    func aBridgedRecordedDeliveryIsRead(shape: Shape) {
        let failure = HTTPResponseError(statusCode: 401, recordedDelivery: .mayHaveBeenSent)
        let analysis = FailureAnalysis(shape.wrap(failure))
        let original = FailureAnalysis(failure)
        #expect(analysis.delivery == original.delivery, "\(shape)")
        #expect(analysis.delivery == .mayHaveBeenSent, "\(shape)")
    }

    // MARK: - A REST SDK's codes still decide

    @Test(arguments: Shape.allCases)
    func aBridgedDuplicateEntryIsFinal(shape: Shape) {
        let duplicate = RESTServiceError(sdkCode: 503, httpStatus: 409, serverErrorCode: "USER_ALREADY_EXISTS")
        let context = RetryContext(attempt: 1)
        let decision = DefaultRetryClassifier().decision(for: shape.wrap(duplicate), context: context)
        #expect(decision == DefaultRetryClassifier().decision(for: duplicate, context: context), "\(shape)")
        #expect(decision == .doNotRetry, "\(shape)")
    }

    // MARK: - SQLite result codes

    @Test(arguments: Shape.allCases)
    func aBridgedSQLiteErrorIsJudgedByItsCode(shape: Shape) {
        let context = RetryContext(attempt: 1)
        for (code, expected) in [
            (5, RetryDecision.retry), (517, .retry), (6, .retry), (19, .doNotRetry), (13, .doNotRetry),
        ] {
            let thrown = shape.wrap(SQLiteError(code: Int32(code)))
            #expect(SQLiteRetryClassifier().decision(for: thrown, context: context) == expected, "\(shape) \(code)")
            #expect(DefaultRetryClassifier().decision(for: thrown, context: context) == expected, "\(shape) \(code)")
        }
    }

    @Test(arguments: Shape.allCases)
    func aBridgedSQLiteBusyIsStillRetried(shape: Shape) async throws {
        let thrown = shape.wrap(SQLiteError(code: 5, message: "database is locked"))
        for classifier in [SQLiteRetryClassifier(), DefaultRetryClassifier()] as [any RetryClassifier] {
            let clock = TestClock()
            let policy = try Self.policy(classifier, clock: clock)
            let calls = Lock(0)
            let outcome = await Self.driven(clock) {
                await policy.outcome { () async throws -> Int in
                    let call = calls.withLock { count in
                        count += 1
                        return count
                    }
                    if call == 1 { throw thrown }
                    return call
                }
            }
            #expect(outcome.attempts == 2, "\(shape) \(classifier)")
            #expect(outcome.stopReason == .succeeded, "\(shape) \(classifier)")
        }
    }

    @Test(arguments: Shape.allCases)
    func aBridgedConstraintViolationIsNotRetried(shape: Shape) async throws {
        let thrown = shape.wrap(SQLiteError(code: 19, message: "UNIQUE constraint failed"))
        let clock = TestClock()
        let policy = try Self.policy(DefaultRetryClassifier(), clock: clock)
        let outcome: RetryOutcome<Int> = await Self.driven(clock) { await policy.outcome { throw thrown } }
        #expect(outcome.attempts == 1, "\(shape)")
        #expect(outcome.stopReason == .notRetryable, "\(shape)")
    }
}
