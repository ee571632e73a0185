import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A 429, and separately a timed-out POST, wrapped at random depth in every shape
/// real code wraps errors in, thrown through every entry point and every
/// classifier the library ships: the call makes exactly one attempt, and the
/// server's hint can still be read from what it throws.
@Suite("The hard rules hold for every error shape, classifier and entry point")
struct RulebookRandomizedTests {
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]
    static let casesPerSeed = 60
    /// The time limit of ``EntryPoint/executeWithAttemptTimeout``: longer than every retry's wait.
    static let attemptTimeout: Duration = .seconds(30)

    /// How a failing operation is reached.
    enum EntryPoint: CaseIterable {
        case execute
        case outcome
        case executeWithAttemptTimeout
        case writeTransaction
        case policyAroundBreaker
        case breakerAroundPolicy
        case policyInsidePolicy
        case policyAroundTimeout
        case policyAroundHedging
        case pipeline
    }

    /// Runs `error` through `entry` with `classifier`; returns how many times the operation ran and what was thrown.
    static func run(
        _ makeError: @escaping @Sendable () -> any Error, through entry: EntryPoint, classifier: any RetryClassifier
    ) async throws -> (attempts: Int, thrown: (any Error)?) {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(10)), jitter: .none, classifier: classifier,
            maximumRetryAfter: .seconds(60), clock: clock)
        // A call that wrongly retries sleeps first; this moves the clock past every such
        // sleep, exactly, so a broken rule shows as a second attempt instead of a hang. It
        // never moves past the attempt's own time limit (the one sleep of `attemptTimeout`
        // on this clock): the operation throws at once, and the test is about that error
        // being seen, not about a limit that could win the race against it under load.
        let mover = Task {
            var moved = 0
            while !Task.isCancelled {
                await clock.waitForSleepRequests(count: moved + 1)
                let requests = clock.sleepRequests
                while moved < requests.count {
                    if requests[moved] != Self.attemptTimeout { clock.advance(by: requests[moved]) }
                    moved += 1
                }
            }
        }
        defer { mover.cancel() }
        let counter = Counter()
        let operation: @Sendable () async throws -> Int = {
            counter.increment()
            throw makeError()
        }
        var thrown: (any Error)?
        do {
            switch entry {
            case .execute:
                _ = try await policy.execute(operation: operation)
            case .outcome:
                _ = try await policy.outcome(operation: operation).get()
            case .executeWithAttemptTimeout:
                _ = try await policy.execute(attemptTimeout: Self.attemptTimeout, operation: operation)
            case .writeTransaction:
                _ = try await policy.writeTransaction(
                    classifier: classifier, executeSQL: { _ in }, operation: operation)
            case .policyAroundBreaker:
                let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(100), clock: clock)
                _ = try await policy.execute { try await breaker.execute(operation: operation) }
            case .breakerAroundPolicy:
                let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(100), clock: clock)
                _ = try await breaker.execute { try await policy.execute(operation: operation) }
            case .policyInsidePolicy:
                let outer = try RetryPolicy(
                    maximumAttempts: 3, backoff: .constant(.milliseconds(10)), jitter: .none, classifier: classifier,
                    clock: clock)
                _ = try await outer.execute { try await policy.execute(operation: operation) }
            case .policyAroundTimeout:
                // Strategies that time the operation get a clock of their own that never
                // moves, so only a retry's wait is ever moved past.
                let timeout = try Timeout(.seconds(30), clock: TestClock())
                _ = try await policy.execute { try await timeout.execute(operation: operation) }
            case .policyAroundHedging:
                let hedging = try Hedging(delay: .fixed(.seconds(30)), clock: TestClock())
                _ = try await policy.execute { try await hedging.execute(operation: operation) }
            case .pipeline:
                let breaker = try CircuitBreaker(name: "stage", tripRule: .consecutiveFailures(100), clock: clock)
                let timeout = try Timeout(.seconds(30), clock: TestClock())
                let pipeline = ResiliencePipeline {
                    policy
                    breaker
                    timeout
                }
                _ = try await pipeline.execute(operation: operation)
            }
        } catch {
            thrown = error
        }
        return (counter.value, thrown)
    }

    @Test("A 429 at any depth is attempted once, and its hint survives", arguments: seeds)
    func tooManyRequestsAtRandomDepth(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<Self.casesPerSeed {
            let core = TooManyRequestsShape.allCases.randomElement(using: &generator)!
            let depth = Int.random(in: 0...4, using: &generator)
            let shapes = ErrorShape.draw(depth: depth, using: &generator)
            let entry = EntryPoint.allCases.randomElement(using: &generator)!
            let classifier = ClassifierUnderTest.allCases.randomElement(using: &generator)!
            let label = "429 as \(core) in \(shapes) through \(entry) with \(classifier)"

            let (attempts, thrown) = try await Self.run(
                { ErrorShape.wrap(core.error, in: shapes) }, through: entry, classifier: classifier.classifier)
            #expect(attempts == 1, "\(label)")
            let thrownError = try #require(thrown, "\(label)")
            #expect(FailureAnalysis(thrownError).isTooManyRequests, "\(label)")
            #expect(ErrorHints.retryAfter(of: thrownError) == TooManyRequestsShape.hint, "\(label)")
        }
    }

    @Test("A timed-out POST at any depth is sent once", arguments: seeds)
    func timedOutPOSTAtRandomDepth(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed &* 7_919)
        for _ in 0..<Self.casesPerSeed {
            let core = TimedOutPOSTShape.allCases.randomElement(using: &generator)!
            let depth = Int.random(in: 0...4, using: &generator)
            let shapes = ErrorShape.draw(depth: depth, using: &generator)
            let entry = EntryPoint.allCases.randomElement(using: &generator)!
            let classifier = ClassifierUnderTest.allCases.randomElement(using: &generator)!
            let label = "POST as \(core) in \(shapes) through \(entry) with \(classifier)"

            let (attempts, thrown) = try await Self.run(
                { ErrorShape.wrap(core.error, in: shapes) }, through: entry, classifier: classifier.classifier)
            #expect(attempts == 1, "\(label)")
            let thrownError = try #require(thrown, "\(label)")
            #expect(FailureAnalysis(thrownError).requestIdempotency?.isIdempotent == false, "\(label)")
        }
    }

    @Test("Every shape is seen through, alone and nested two deep")
    func everyShapeIsSeenThrough() {
        for outer in ErrorShape.allCases {
            for inner in ErrorShape.allCases {
                let error = outer.wrap(inner.wrap(TooManyRequestsShape.httpResponse.error))
                let analysis = FailureAnalysis(error)
                #expect(analysis.isTooManyRequests, "\(outer) around \(inner)")
                #expect(analysis.retryAfter == TooManyRequestsShape.hint, "\(outer) around \(inner)")
            }
        }
    }
}
