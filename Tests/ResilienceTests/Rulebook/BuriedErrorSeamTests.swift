import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A 429 buried where users put it: below a large payload, in an error that is a class
/// instance, among the failures a `CustomNSError` does not name, in one item of a batch.
/// Every entry point must see it: nothing is sent again, and the hint is kept.
@Suite("The rules see a 429 buried among payloads, class instances and batches")
struct BuriedErrorSeamTests {
    static let seeds: [UInt64] = [71, 72, 73]
    static let casesPerSeed = 12

    /// The ways a call reaches the rules.
    enum Entry: CaseIterable {
        case execute
        case outcome
        case policyInsidePolicy
        case breakerAroundPolicy
    }

    /// What a call through an entry point did with an operation that always throws.
    struct Observed {
        var runs: Int
        var stopReason: RetryStopReason?
        var retryAfter: Duration?
        var breakerOpenFor: Duration?
    }

    /// A policy that retries anything its classifier is asked about, so only the rules can stop it.
    static func policy(_ clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 4, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock)
    }

    /// Runs an operation that throws `error` through `entry`.
    static func run(_ error: any Error, through entry: Entry) async throws -> Observed {
        let clock = TestClock()
        let runs = Counter()
        let operation: @Sendable () async throws -> Int = {
            runs.increment()
            throw error
        }
        switch entry {
        case .execute:
            _ = try? await Self.policy(clock).execute(operation: operation)
            return Observed(runs: runs.value)
        case .outcome:
            let outcome = try await Self.policy(clock).outcome(operation: operation)
            return Observed(runs: runs.value, stopReason: outcome.stopReason, retryAfter: outcome.retryAfter)
        case .policyInsidePolicy:
            let inner = try Self.policy(clock)
            let outcome = try await Self.policy(clock).outcome { try await inner.execute(operation: operation) }
            return Observed(runs: runs.value, stopReason: outcome.stopReason, retryAfter: outcome.retryAfter)
        case .breakerAroundPolicy:
            let breaker = try CircuitBreaker(name: "buried", tripRule: .consecutiveFailures(5), clock: clock)
            let policy = try Self.policy(clock)
            _ = try? await breaker.execute { try await policy.execute(operation: operation) }
            return Observed(runs: runs.value, breakerOpenFor: breaker.snapshot().remainingOpenTime)
        }
    }

    /// Expects every entry point to make one attempt and stop on the 429 with its seven-second hint.
    static func expectEveryEntryStops(
        on error: any Error, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for entry in Entry.allCases {
            let observed = try await Self.run(error, through: entry)
            #expect(observed.runs == 1, "\(entry): \(comment)", sourceLocation: sourceLocation)
            switch entry {
            case .execute:
                break
            case .outcome, .policyInsidePolicy:
                #expect(observed.stopReason == .tooManyRequests, "\(entry): \(comment)", sourceLocation: sourceLocation)
                #expect(observed.retryAfter == TooManyRequestsShape.hint, "\(entry)", sourceLocation: sourceLocation)
            case .breakerAroundPolicy:
                #expect(
                    observed.breakerOpenFor == TooManyRequestsShape.hint, "the hint opens the breaker: \(comment)",
                    sourceLocation: sourceLocation)
            }
        }
    }

    @Test("A 429 below a large payload, at a random depth and position, stops every entry point", arguments: seeds)
    func a429BelowALargePayloadStopsEveryEntryPoint(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<Self.casesPerSeed {
            let error = BuriedShapes.buried429(using: &generator)
            try await Self.expectEveryEntryStops(on: error, "seed \(seed) case \(index)")
        }
    }

    @Test("A 429 inside an error that is a class instance stops every entry point", arguments: seeds)
    func a429InAClassInstanceErrorStopsEveryEntryPoint(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<Self.casesPerSeed {
            let tooMany = TooManyRequestsShape.allCases.randomElement(using: &generator)!.error
            let cause = ErrorShape.wrap(
                tooMany, in: ErrorShape.draw(depth: Int.random(in: 0...2, using: &generator), using: &generator))
            let payload = BuriedShapes.anything(Int.random(in: 0...1_600, using: &generator))
            var error: any Error = RequestFailure(attempt: index, payload: payload, cause: cause)
            if Bool.random(using: &generator) { error = SilentAppError.transport(error) }
            try await Self.expectEveryEntryStops(on: error, "seed \(seed) case \(index)")
        }
    }

    @Test("A 429 among the failures a CustomNSError does not name stops every entry point", arguments: seeds)
    func a429ACustomNSErrorDoesNotNameStopsEveryEntryPoint(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<Self.casesPerSeed {
            let tooMany = TooManyRequestsShape.allCases.randomElement(using: &generator)!.error
            let count = Int.random(in: 1...200, using: &generator)
            // The first failure is the one under `NSUnderlyingErrorKey`: the 429 is after it.
            let failures = BuriedShapes.failures(count, with: tooMany, at: Int.random(in: 1...count, using: &generator))
            let exported = BuriedShapes.records(Int.random(in: 0...1_600, using: &generator))
            let error = ExportFailure(exported: exported, failures: failures)
            try await Self.expectEveryEntryStops(on: error, "seed \(seed) case \(index)")
        }
    }

    @Test("A 429 from one item of a batch whose items carry payloads stops every entry point", arguments: seeds)
    func a429FromOneItemOfABatchStopsEveryEntryPoint(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<Self.casesPerSeed / 3 {
            let tooMany = TooManyRequestsShape.allCases.randomElement(using: &generator)!.error
            let count = Int.random(in: 100...600, using: &generator)
            let culprit = Int.random(in: 60..<count, using: &generator)
            let records = BuriedShapes.records(count)
            let attachments = BuriedShapes.anything(50)
            let items = (0..<count).map { item -> any Error in
                ItemFailure(
                    record: records[item], attachments: attachments, cause: item == culprit ? tooMany : TransientError()
                )
            }
            let error = NSError(domain: "Sync", code: 1, userInfo: [ErrorChain.multipleUnderlyingErrorsKey: items])
            try await Self.expectEveryEntryStops(on: error, "seed \(seed) case \(index): item \(culprit) of \(count)")
        }
    }

    @Test("One item's class-instance error answered 429 ends a CloudKit batch", arguments: seeds)
    func anItemsClassInstanceErrorAnswered429EndsTheCloudKitBatch(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        let count = Int.random(in: 50...400, using: &generator)
        let culprit = Int.random(in: 0..<count, using: &generator)
        var perItem: [Int: any Error] = [:]
        for item in 0..<count {
            let cause: any Error = item == culprit ? TooManyRequestsShape.httpResponse.error : TransientError(id: item)
            perItem[item] = RequestFailure(attempt: 1, payload: BuriedShapes.anything(20), cause: cause)
        }
        let policy = try Self.policy(TestClock())
        let calls = Counter()
        let result = try await policy.retryingFailedItems(Array(0..<count)) { [perItem] _ in
            calls.increment()
            throw NSError(
                domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                userInfo: [CloudKitErrorCode.partialErrorsKey: perItem])
        }
        #expect(calls.value == 1, "item \(culprit) of \(count) was answered 429: the batch is not sent again")
        #expect(result.stopReason == .tooManyRequests)
    }

    @Test func aStoredNSErrorWithTheWrappersDomainAndCodeIsAnErrorBelowIt() {
        struct ForwardedFailure: CustomNSError {
            static var errorDomain: String { "Service" }
            var errorCode: Int { 7 }
            var errorUserInfo: [String: Any] { [:] }
            let underlying: NSError
        }
        let inner = NSError(
            domain: "Service", code: 7, userInfo: [NSUnderlyingErrorKey: HTTPResponseError(statusCode: 429)])
        #expect(FailureAnalysis(ForwardedFailure(underlying: inner)).isTooManyRequests)
    }
}
