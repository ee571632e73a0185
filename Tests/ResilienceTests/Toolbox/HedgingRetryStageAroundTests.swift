import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A pipeline's hedging stage with no classifier of its own and no retry stage inside it judges a
/// failed attempt with the classifier of the nearest retry stage around it, settled when the
/// pipeline is built: the doomed request that retry stage would not send again is not sent again
/// as a replacement either, and the failure it would send again is.
@Suite("Hedging: the retry stage around a pipeline's hedging stage", .timeLimit(.minutes(5)))
struct HedgingRetryStageAroundTests {
    typealias DeclinedError = HedgingClassifierTests.DeclinedError

    /// Stops on ``DeclinedError`` (which the default rules retry); no opinion on anything else.
    static let declining = HedgingClassifierTests.declining

    /// Retries every failure the rules leave open, an HTTP 404 included (which the default rules
    /// do not retry).
    static let retryingEverything = ClosureRetryClassifier { _, _ in .retry }

    /// Where the hedging stage sits, below the retry stage `retry`.
    enum Shape: CaseIterable, Sendable, CustomTestStringConvertible {
        /// `[retry, hedging]`: the hedging stage innermost.
        case innermost
        /// `[retry, timeout, hedging, breaker]`: a stage between, and one inside.
        case betweenStages
        /// `[retry, [breaker, hedging]]`: in a pipeline nested as a stage.
        case inANestedPipeline
        /// `[retry, [hedging]]`: the only stage of a pipeline nested as a stage.
        case aloneInANestedPipeline
        /// `[retryEverything, retry, hedging]`: two retry stages around it; the nearer one counts.
        case belowTwoRetryStages

        var testDescription: String {
            switch self {
            case .innermost: "[retry, hedging]"
            case .betweenStages: "[retry, timeout, hedging, breaker]"
            case .inANestedPipeline: "[retry, [breaker, hedging]]"
            case .aloneInANestedPipeline: "[retry, [hedging]]"
            case .belowTwoRetryStages: "[other retry, retry, hedging]"
            }
        }

        /// One call through the pipeline of this shape, whose retry stage `retry` makes one attempt
        /// (so every extra run is the hedging stage's replacement), failing its first run with
        /// `error`. Returns the result and the runs.
        func call(
            failingFirstWith error: any Error, retryClassifier: any RetryClassifier
        ) async throws -> (Result<Int, any Error>, Int) {
            let clock = TestClock()
            let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: clock)
            let retry = try RetryPolicy(maximumAttempts: 1, classifier: retryClassifier, clock: clock)
            let run: (@escaping @Sendable () async throws -> Int) async throws -> Int
            switch self {
            case .innermost:
                let pipeline = ResiliencePipeline {
                    retry
                    hedging
                }
                run = { try await pipeline.execute(operation: $0) }
            case .betweenStages:
                let pipeline = try ResiliencePipeline {
                    retry
                    try Timeout(.seconds(30), clock: clock)
                    hedging
                    CircuitBreaker(name: "inside")
                }
                run = { try await pipeline.execute(operation: $0) }
            case .inANestedPipeline:
                let inner = ResiliencePipeline {
                    CircuitBreaker(name: "between")
                    hedging
                }
                let pipeline = ResiliencePipeline {
                    retry
                    inner
                }
                run = { try await pipeline.execute(operation: $0) }
            case .aloneInANestedPipeline:
                let inner = ResiliencePipeline { hedging }
                let pipeline = ResiliencePipeline {
                    retry
                    inner
                }
                run = { try await pipeline.execute(operation: $0) }
            case .belowTwoRetryStages:
                // The outer retry stage judges every failure the other way round.
                let other = ClosureRetryClassifier { error, context in
                    let nearer =
                        retryClassifier.decision(for: error, context: context)
                        ?? DefaultRetryClassifier().decision(for: error, context: context)
                    return nearer?.isRetryable == true ? .doNotRetry : .retry
                }
                let outer = try RetryPolicy(maximumAttempts: 1, classifier: other, clock: clock)
                let pipeline = ResiliencePipeline {
                    outer
                    retry
                    hedging
                }
                run = { try await pipeline.execute(operation: $0) }
            }
            return await HedgingClassifierTests.callFailingFirst(with: error, through: run)
        }
    }

    /// The retry stage around declines a failure the default rules retry: the hedging stage does
    /// not replace it.
    @Test(arguments: Shape.allCases)
    func aFailureTheRetryStageAroundDeclinesIsNotReplaced(shape: Shape) async throws {
        let (result, runs) = try await shape.call(failingFirstWith: DeclinedError(), retryClassifier: Self.declining)
        #expect(runs == 1, "\(shape): a declined request was sent \(runs) times")
        #expect(throws: DeclinedError.self, "\(shape)") { try result.get() }
    }

    /// The retry stage around retries a failure the default rules do not (an HTTP 404): the
    /// hedging stage replaces it, and the replacement wins.
    @Test(arguments: Shape.allCases)
    func aFailureTheRetryStageAroundRetriesIsReplaced(shape: Shape) async throws {
        let (result, runs) = try await shape.call(
            failingFirstWith: HTTPResponseError(statusCode: 404), retryClassifier: Self.retryingEverything)
        #expect(runs == 2, "\(shape): sent \(runs) times")
        #expect((try? result.get()) == 7, "\(shape): \(result)")
    }

    /// A retry stage inside the hedging stage is nearer than one around it, and decides.
    @Test func theRetryStageInsideWinsOverTheOneAround() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 1, classifier: Self.retryingEverything)
            hedging
            try RetryPolicy(maximumAttempts: 1, classifier: Self.declining)
        }
        let (result, runs) = await HedgingClassifierTests.callFailingFirst(with: DeclinedError()) {
            try await pipeline.execute(operation: $0)
        }
        #expect(runs == 1, "a request the retry stage inside declines was sent \(runs) times")
        #expect(throws: DeclinedError.self) { try result.get() }
    }

    /// One hedging strategy in two pipelines judges each call by the retry stage around it in
    /// the pipeline the call goes through; alone, by the default rules.
    @Test func aSharedHedgingStageJudgesByThePipelineTheCallGoesThrough() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: TestClock())
        let retrying = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 1, classifier: Self.retryingEverything)
            hedging
        }
        let plain = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 1)
            hedging
        }
        let notFound = HTTPResponseError(statusCode: 404)
        let (_, throughRetrying) = await HedgingClassifierTests.callFailingFirst(with: notFound) {
            try await retrying.execute(operation: $0)
        }
        let (_, throughPlain) = await HedgingClassifierTests.callFailingFirst(with: notFound) {
            try await plain.execute(operation: $0)
        }
        let (_, alone) = await HedgingClassifierTests.callFailingFirst(with: notFound) {
            try await hedging.execute(operation: $0)
        }
        #expect(throughRetrying == 2)
        #expect(throughPlain == 1)
        #expect(alone == 1)
    }

    /// The pipeline holds a copy of the hedging strategy that knows the retry stage around it,
    /// and shares the strategy's state: the delay learned from calls through the pipeline is the
    /// strategy's.
    @Test func thePipelinesCopySharesTheStrategysState() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .percentile(50, ofLast: 10, initial: .seconds(1)), clock: clock)
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 1, classifier: Self.retryingEverything)
            hedging
        }
        #expect(pipeline.strategies.inner !== hedging, "not a copy")
        #expect(pipeline.strategies.inner.maximumHedges == hedging.maximumHedges)
        for _ in 0..<10 {
            let call = Task {
                try await pipeline.execute { () async throws -> Int in
                    try await clock.sleep(for: .milliseconds(200))
                    return 1
                }
            }
            await clock.waitForSleepers(count: 2)  // the attempt, and the hedge's timer
            clock.advance(by: .milliseconds(200))
            #expect(try await call.value == 1)
        }
        #expect(hedging.currentDelay == .milliseconds(200))
        #expect(pipeline.strategies.inner.currentDelay == .milliseconds(200))
    }

    /// The hedging stage's own classifier still wins over the retry stage around it.
    @Test func itsOwnClassifierWinsOverTheRetryStageAround() async throws {
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, classifier: Self.declining, clock: TestClock())
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 1, classifier: Self.retryingEverything)
            hedging
        }
        let (_, runs) = await HedgingClassifierTests.callFailingFirst(with: DeclinedError()) {
            try await pipeline.execute(operation: $0)
        }
        #expect(runs == 1)
    }
}
