import Foundation
import Resilience
import ResilienceTesting
import Testing

/// An error the default rules speak for, wrapped at random depth in errors that say nothing of their
/// own, is judged as it is when thrown directly: by every classifier the library ships, and by a policy.
@Suite("Classifiers judge an error the same in every shape that says nothing of its own")
struct ClassificationShapeRandomizedTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]
    static let casesPerSeed = 40

    /// The shapes that add nothing a rule speaks for: the error below decides.
    static let silentShapes: [ErrorShape] = [
        .nsUnderlying, .nsMultipleUnderlying, .restService, .declaredWrapper, .silentEnum, .silentEnumWithPayload,
        .contextStruct,
    ]

    static func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    /// Errors some rule speaks for, each with a name for the failure message.
    static let errors: [(String, @Sendable () -> any Error)] = [
        ("serverResponseLost", { cloudKitError(.serverResponseLost) }),
        (
            "partialFailure",
            {
                cloudKitError(
                    .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: ["b": cloudKitError(.zoneBusy)]])
            }
        ),
        ("notAuthenticated", { cloudKitError(.notAuthenticated) }),
        ("operationCancelled", { cloudKitError(.operationCancelled) }),
        ("zoneBusy", { cloudKitError(.zoneBusy) }),
        ("networkFailure", { cloudKitError(.networkFailure) }),
        ("serverRecordChanged", { cloudKitError(.serverRecordChanged) }),
        ("SQLITE_BUSY", { SQLiteError(code: .busy) }),
        ("SQLITE_CONSTRAINT_UNIQUE", { SQLiteError(code: .constraintUnique) }),
        ("PermanentError", { PermanentError() }),
        ("HTTP 503", { HTTPResponseError(statusCode: 503) }),
        ("HTTP 404", { HTTPResponseError(statusCode: 404) }),
        ("URLError.timedOut", { URLError(.timedOut) }),
        ("DecodingError", { DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad JSON")) }),
    ]

    static func wrap(_ error: any Error, using generator: inout SeededRandomNumberGenerator) -> (any Error, String) {
        var wrapped = error
        var path: [String] = []
        for _ in 0..<Int.random(in: 1...3, using: &generator) {
            let shape = Self.silentShapes.randomElement(using: &generator)!
            wrapped = shape.wrap(wrapped)
            path.append("\(shape)")
        }
        return (wrapped, path.joined(separator: " > "))
    }

    /// The decision `classifier` makes on `error`, as a policy asks (with its reading) and as a caller asks (without).
    static func decisions(of classifier: some RetryClassifier, on error: any Error) -> [RetryDecision?] {
        [
            classifier.decision(for: error, context: RetryContext(attempt: 1, analysis: FailureAnalysis(error))),
            classifier.decision(for: error, context: RetryContext(attempt: 1)),
        ]
    }

    @Test(arguments: seeds)
    func everyClassifierJudgesAWrappedErrorAsTheErrorItself(seed: UInt64) {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<Self.casesPerSeed {
            let (name, make) = Self.errors.randomElement(using: &generator)!
            let (wrapped, path) = Self.wrap(make(), using: &generator)
            let classifiers: [any RetryClassifier] = [
                DefaultRetryClassifier(), CloudKitRetryClassifier(),
                CloudKitRetryClassifier(operationIsIdempotent: true),
                SQLiteRetryClassifier(), HTTPRetryClassifier(),
            ]
            for classifier in classifiers {
                let direct = Self.decisions(of: classifier, on: make())
                #expect(direct[0] == direct[1], "\(name) read by \(type(of: classifier))")
                #expect(
                    Self.decisions(of: classifier, on: wrapped) == direct,
                    "\(name) in \(path), read by \(type(of: classifier))")
            }
        }
    }

    @Test(arguments: seeds)
    func aPolicyTreatsAWrappedErrorAsTheErrorItself(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<Self.casesPerSeed / 4 {
            let (name, make) = Self.errors.randomElement(using: &generator)!
            let (wrapped, path) = Self.wrap(make(), using: &generator)
            var results: [(attempts: Int, stopReason: RetryStopReason)] = []
            for error in [make(), wrapped] {
                let policy = try RetryPolicy(
                    maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
                let runs = Counter()
                let outcome = await policy.outcome { () async throws -> Int in
                    runs.increment()
                    throw error
                }
                #expect(runs.value == outcome.attempts)
                results.append((outcome.attempts, outcome.stopReason))
            }
            #expect(results[0].attempts == results[1].attempts, "\(name) in \(path)")
            #expect(results[0].stopReason == results[1].stopReason, "\(name) in \(path)")
        }
    }

    /// An error that says it is worth retrying, wrapping what it may.
    struct RetryableWrapper: RetryableError, UnderlyingErrorProviding {
        var underlying: any Error
        var isRetryable: Bool { true }
        var underlyingErrors: [any Error] { [self.underlying] }
    }

    /// The default rules read a retryable error above a 429, a timeout or a cancellation; the hard rules still win.
    @Test(arguments: silentShapes)
    func theHardRulesStillRankAboveARetryableErrorInTheChain(shape: ErrorShape) async throws {
        let clock = TestClock()
        func policy() throws -> RetryPolicy {
            try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        }
        let tooMany = shape.wrap(RetryableWrapper(underlying: HTTPResponseError(statusCode: 429)))
        #expect(
            DefaultRetryClassifier().decision(for: tooMany, context: RetryContext(attempt: 1)) == .retry,
            "the classifier alone would retry")
        let limited = try await policy().outcome { () async throws -> Int in throw tooMany }
        #expect(limited.attempts == 1)
        #expect(limited.stopReason == .tooManyRequests)

        let timedOut = shape.wrap(RetryableWrapper(underlying: URLError(.timedOut)))
        let post = try await policy().outcome(idempotency: .notIdempotent) { () async throws -> Int in throw timedOut }
        #expect(post.attempts == 1)
        #expect(post.stopReason == .notIdempotent)

        let stopped = shape.wrap(RetryableWrapper(underlying: CancellationError()))
        let cancelled = try await policy().outcome { () async throws -> Int in throw stopped }
        #expect(cancelled.attempts == 1)
        #expect(cancelled.stopReason == .cancelled)
    }
}
