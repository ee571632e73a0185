import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// What a hedged call asks about a failed attempt before it starts another: the rules, then the
/// classifier a retry policy would ask (the default rules for a call alone, the retry stage's in a
/// pipeline).
@Suite("Hedging: the classifier a failed attempt is judged by", .timeLimit(.minutes(5)))
struct HedgingClassifierTests {
    /// An app's failure the default rules retry, and a classifier of the app's says is final.
    struct DeclinedError: Error, Equatable {}

    /// A classifier that stops on ``DeclinedError`` and has no opinion on anything else.
    static let declining = ClosureRetryClassifier { error, _ in
        chain(of: error, contains: DeclinedError.self) ? .doNotRetry : nil
    }

    /// CloudKit's lost response: the request may have been applied.
    static let lostResponse = NSError(
        domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.serverResponseLost.rawValue)

    /// The shapes a permanent failure (one the default rules do not retry) arrives in.
    enum PermanentFailure: CaseIterable, Sendable, CustomTestStringConvertible {
        case notFound
        case badRequestUnderNSUnderlyingErrorKey
        case notFoundInARESTServiceError
        case notFoundInAUsersEnum
        case decodingError

        var error: any Error {
            switch self {
            case .notFound:
                HTTPResponseError(statusCode: 404)
            case .badRequestUnderNSUnderlyingErrorKey:
                NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: HTTPResponseError(statusCode: 400)])
            case .notFoundInARESTServiceError:
                RESTServiceError(sdkCode: 9, underlying: HTTPResponseError(statusCode: 404))
            case .notFoundInAUsersEnum:
                SilentAppError.transport(HTTPResponseError(statusCode: 404))
            case .decodingError:
                DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not a quote"))
            }
        }

        var testDescription: String {
            switch self {
            case .notFound: "a 404"
            case .badRequestUnderNSUnderlyingErrorKey: "a 400 under NSUnderlyingErrorKey"
            case .notFoundInARESTServiceError: "a 404 in a RESTServiceError"
            case .notFoundInAUsersEnum: "a 404 in a user's enum"
            case .decodingError: "a DecodingError"
            }
        }
    }

    /// Runs one hedged call whose first attempt fails with `error` before it suspends; every later
    /// attempt returns 7. Returns the call's result and how many attempts ran.
    static func callFailingFirst(
        with error: any Error, through run: (@escaping @Sendable () async throws -> Int) async throws -> Int
    ) async -> (Result<Int, any Error>, Int) {
        let runs = Counter()
        let result = await Result {
            try await run {
                if runs.increment() == 1 { throw error }
                return 7
            }
        }
        return (result, runs.value)
    }

    // MARK: - A failure the classifier does not retry

    @Test("A permanent failure starts no replacement", arguments: PermanentFailure.allCases)
    func aPermanentFailureStartsNoReplacement(failure: PermanentFailure) async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        let (result, runs) = await Self.callFailingFirst(with: failure.error) { operation in
            try await hedging.execute(operation: operation)
        }
        #expect(runs == 1, "a doomed request was sent \(runs) times")
        #expect(throws: (any Error).self) { try result.get() }
    }

    /// A 404 wrapped at random depth in the shapes apps and the package wrap errors in.
    @Test func aPermanentFailureInAnyWrappingStartsNoReplacement() async throws {
        let seed: UInt64 = 0x4845_4447_4531_38
        var generator = SeededRandomNumberGenerator(seed: seed)
        let shapes: [ErrorShape] = [
            .nsUnderlying, .restService, .declaredWrapper, .silentEnum, .silentEnumWithPayload, .contextStruct,
        ]
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        for index in 0..<200 {
            let drawn = (0..<Int.random(in: 1...3, using: &generator)).map { _ in
                shapes.randomElement(using: &generator)!
            }
            let error = ErrorShape.wrap(HTTPResponseError(statusCode: 404), in: drawn)
            let (result, runs) = await Self.callFailingFirst(with: error) { operation in
                try await hedging.execute(operation: operation)
            }
            #expect(runs == 1, "seed \(seed), case \(index), shapes \(drawn): sent \(runs) times")
            #expect(throws: (any Error).self) { try result.get() }
        }
    }

    @Test func aRefusedReplacementSpendsNoBudgetToken() async throws {
        // A success would give back a tenth of a token: a spent token shows as 9.1.
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, budget: budget, clock: TestClock())
        let (_, runs) = await Self.callFailingFirst(with: HTTPResponseError(statusCode: 404)) { operation in
            try await hedging.execute(operation: operation)
        }
        #expect(runs == 1)
        #expect(budget.tokens == 10, "a replacement that was never sent spent \(10 - budget.tokens) tokens")
    }

    /// The first attempt runs until t = 3 and then fails plainly; the hedge, started at t = 1,
    /// fails with a 404 at once. No attempt starts after the 404, not even at the next hedge
    /// delay (t = 2), and the first attempt runs on: the call ends with its failure, the last.
    @Test func aPermanentFailureStartsNoFurtherHedgeAndTheRunningAttemptRunsOn() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: clock)
        let runs = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                switch runs.increment() {
                case 1:
                    try await clock.sleep(for: .seconds(3))
                    throw TransientError(id: 1)
                case 2: throw HTTPResponseError(statusCode: 404)
                default: return 7
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
        clock.advance(by: .seconds(1))  // t = 1: the hedge starts and fails
        try await yieldUntil { hedging.failuresTaken.load(ordering: .acquiring) > 0 }
        await clock.waitForSleepRequests(count: 3)  // the next hedge's timer, due at t = 2
        clock.advance(by: .seconds(2))  // t = 2: no hedge; t = 3: the first attempt fails
        let error = await #expect(throws: TransientError.self) { try await call.value }
        #expect(error == TransientError(id: 1))
        #expect(runs.value == 2, "\(runs.value) attempts ran")
    }

    // MARK: - A failure the classifier says must not be sent again

    @Test func aLostCloudKitResponseEndsAnUndeclaredCallAtOnce() async throws {
        let scene = try HedgingFailureTests.HungFirstAttempt(early: Self.lostResponse)
        async let ended: (Result<Int, any Error>, Duration) = {
            let result = await Result { try await scene.hedging.execute { try await scene.request() } }
            return (result, scene.clock.now.offset)
        }()
        await scene.startTheHedge()
        let (result, at) = await ended
        #expect(at == .seconds(3), "the lost response came at t = 3; the call ended at \(at)")
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
        #expect(throws: Self.lostResponse) { try result.get() }
    }

    @Test func aPolicyAroundAHedgedCallDoesNotResendALostCloudKitResponse() async throws {
        let scene = try HedgingFailureTests.HungFirstAttempt(early: Self.lostResponse)
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: CloudKitRetryClassifier(operationIsIdempotent: true), clock: scene.clock)
        async let outcome = outer.outcome { try await scene.hedging.execute { try await scene.request() } }
        await scene.startTheHedge()
        let settled = await outcome
        // The hedged call's classifier said the request may have been applied: the policy around
        // it, whose own classifier would send a lost response again, hears so and stops.
        #expect(settled.stopReason == .notIdempotent, "stopped with \(settled.stopReason)")
        #expect(settled.elapsed == .seconds(3))
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
    }

    // MARK: - A pipeline's hedging stage

    @Test func aHedgingStageJudgesAFailureWithTheRetryStageInsideIt() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        let retry = try RetryPolicy(maximumAttempts: 2, classifier: Self.declining)
        let pipeline = ResiliencePipeline {
            hedging
            retry
        }
        let (result, runs) = await Self.callFailingFirst(with: DeclinedError()) { operation in
            try await pipeline.execute(operation: operation)
        }
        #expect(runs == 1, "a declined request was sent \(runs) times")
        #expect(throws: DeclinedError()) { try result.get() }
    }

    @Test func aHedgingStageFindsTheRetryStageDeeperInside() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        let inner = ResiliencePipeline {
            CircuitBreaker(name: "declining")
            try! RetryPolicy(maximumAttempts: 2, classifier: Self.declining)
        }
        let pipeline = ResiliencePipeline {
            hedging
            inner
        }
        let (result, runs) = await Self.callFailingFirst(with: SilentAppError.transport(DeclinedError())) {
            operation in
            try await pipeline.execute(operation: operation)
        }
        #expect(runs == 1, "a declined request was sent \(runs) times")
        #expect(throws: (any Error).self) { try result.get() }
    }

    @Test func aHedgingStageEndsAtOnceOnALostCloudKitResponseItsRetryStageWillNotResend() async throws {
        let scene = try HedgingFailureTests.HungFirstAttempt(early: Self.lostResponse)
        let retry = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: CloudKitRetryClassifier(), clock: scene.clock)
        let pipeline = ResiliencePipeline {
            scene.hedging
            retry
        }
        async let ended: (Result<Int, any Error>, Duration) = {
            let result = await Result { try await pipeline.execute { try await scene.request() } }
            return (result, scene.clock.now.offset)
        }()
        await scene.startTheHedge()
        let (result, at) = await ended
        #expect(at == .seconds(3), "the lost response came at t = 3; the call ended at \(at)")
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
        #expect(throws: (any Error).self) { try result.get() }
    }

    // MARK: - The rules stay on top

    /// The retry stage's classifier says retry to everything; a 429 still starts nothing.
    @Test func a429IsNeverReplacedWhateverThePipelinesClassifierSays() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        let retry = try RetryPolicy(maximumAttempts: 2, classifier: ClosureRetryClassifier { _, _ in .retry })
        let pipeline = ResiliencePipeline {
            hedging
            retry
        }
        let (result, runs) = await Self.callFailingFirst(with: HTTPResponseError(statusCode: 429)) { operation in
            try await pipeline.execute(operation: operation)
        }
        #expect(runs == 1, "a 429 was sent again \(runs - 1) times")
        #expect(throws: (any Error).self) { try result.get() }
    }
}

/// Whether an error of type `type` is in `error`'s chain, for the tests' classifiers.
private func chain<E: Error>(of error: any Error, contains type: E.Type) -> Bool {
    var found = false
    _ = ErrorChain.walk(error) { node in
        found = node is E
        return !found
    }
    return found
}
