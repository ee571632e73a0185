import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A refusal by one of the library's own gates reads as a rejection for a ``Fallback``
/// wherever it sits in the error's chain, standalone and as a pipeline stage, as the one
/// failure analysis reads it.
@Suite("A fallback tells a refusal wrapped in any shape")
struct FallbackRejectionSeamTests {
    /// The refusals the library's gates make, each as its gate throws it.
    static let refusals: [any Error & Sendable] = [
        CircuitBreakerOpenError(breakerName: "inner", state: .open, retryAfter: .seconds(4)),
        LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull, queued: 0),
        LimiterRejectionError(limiterName: "bulkhead", reason: .queueTimedOut, queued: 3),
        LimiterRejectionError(limiterName: "rate", reason: .noPermit, retryAfter: .seconds(2)),
        AdaptiveThrottleRejection(rejectionProbability: 0.9),
    ]

    /// A fallback that answers -1 for a rejection and -2 for any other failure, and records
    /// what it saw.
    static func fallback(_ seen: Recorder<Bool>) -> Fallback<Int> {
        Fallback<Int> { context in
            seen.record(context.isRejection)
            return context.isRejection ? -1 : -2
        }
    }

    @Test(
        "A standalone fallback reads a refusal in every shape as a rejection",
        arguments: Self.refusals.indices, LocalRejectionShape.all)
    func aStandaloneFallbackReadsAWrappedRefusalAsARejection(index: Int, shape: LocalRejectionShape) async throws {
        let refusal = Self.refusals[index]
        let seen = Recorder<Bool>()
        let value = try await Self.fallback(seen).execute { () async throws -> Int in throw shape.wrap(refusal) }
        #expect(value == -1, "\(refusal) in \(shape)")
        #expect(seen.values == [true])
    }

    @Test(
        "A fallback stage reads a refusal from a gate behind a wrapping stage as a rejection",
        arguments: FullLimiter.Kind.allCases, LocalRejectionShape.all)
    func aFallbackStageReadsAWrappedLimiterRefusalAsARejection(kind: FullLimiter.Kind, shape: LocalRejectionShape)
        async throws
    {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let seen = Recorder<Bool>()
        let ran = Counter()
        func run(behind gate: some ResilienceStrategy) async throws -> Int {
            let pipeline = ResiliencePipeline {
                Self.fallback(seen)
                WrappingStage(shape: shape)
                gate
            }
            return try await pipeline.execute { () async throws -> Int in ran.increment() }
        }
        let value =
            switch kind {
            case .bulkhead: try await run(behind: limiter.bulkhead!)
            case .rateLimiter: try await run(behind: limiter.rateLimiter!)
            }
        #expect(value == -1, "\(kind), \(shape)")
        #expect(seen.values == [true])
        #expect(ran.value == 0)
        try await limiter.release()
    }

    @Test(
        "A fallback stage reads an open breaker behind a wrapping stage as a rejection",
        arguments: LocalRejectionShape.all)
    func aFallbackStageReadsAWrappedOpenBreakerAsARejection(shape: LocalRejectionShape) async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "down", tripRule: .consecutiveFailures(1), clock: clock)
        await breaker.fail()
        let seen = Recorder<Bool>()
        let pipeline = ResiliencePipeline {
            Self.fallback(seen)
            WrappingStage(shape: shape)
            breaker
        }
        #expect(try await pipeline.execute { () async throws -> Int in 1 } == -1, "\(shape)")
        #expect(seen.values == [true])
    }

    /// The analysis still counts an inner breaker's refusal in an outer breaker; for the
    /// fallback outside both it is a refusal all the same: nothing ran.
    @Test func anInnerBreakersRefusalThroughAnOuterBreakerIsARejection() async throws {
        let clock = TestClock()
        let outer = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(5), clock: clock)
        let inner = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        await inner.fail()
        let seen = Recorder<Bool>()
        let value = try await Self.fallback(seen).execute {
            try await outer.execute {
                do {
                    return try await inner.execute { 1 }
                } catch {
                    throw DeclaredAppError.transport(error)
                }
            }
        }
        #expect(value == -1)
        #expect(seen.values == [true])
        #expect(outer.snapshot().consecutiveFailures == 1, "the outer breaker still counts it")
    }

    @Test(
        "A failure of the dependency in any shape is not a rejection",
        arguments: LocalRejectionShape.all)
    func aWrappedFailureOfTheDependencyIsNotARejection(shape: LocalRejectionShape) async throws {
        let seen = Recorder<Bool>()
        let fallback = Self.fallback(seen)
        for failure in [
            TransientError(id: 3), URLError(.timedOut), TimeoutError(timeoutName: "t", timeout: .seconds(1)),
        ]
            as [any Error]
        {
            #expect(try await fallback.execute { () async throws -> Int in throw shape.wrap(failure) } == -2)
        }
        #expect(seen.values == [false, false, false], "\(shape)")
    }

    @Test(arguments: Self.refusals.indices)
    func aRefusalBesideAFailureThatMayHaveLeftIsNotARejection(index: Int) async throws {
        // One item of a batch was refused; another may have reached the server.
        let batch = NSError(
            domain: "Batch", code: 2,
            userInfo: [ErrorChain.multipleUnderlyingErrorsKey: [Self.refusals[index], URLError(.timedOut)]])
        let seen = Recorder<Bool>()
        #expect(try await Self.fallback(seen).execute { () async throws -> Int in throw batch } == -2)
        #expect(seen.values == [false])
    }
}
