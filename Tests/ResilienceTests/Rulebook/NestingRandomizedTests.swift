import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A failure that proves the request never left: a refused connection.
struct RefusedBeforeSending: Error, RequestDeliveryReporting {
    var requestDelivery: RequestDelivery { .notSent }
}

/// Random nestings, one to three deep, of retry policies (through every entry point),
/// breakers and pipeline stages, around an operation that follows a random script of
/// failures: the hard rules hold at every level, and every call ends.
@Suite("The hard rules hold in random nestings of policies, breakers and pipelines")
struct NestingRandomizedTests {
    static let seeds: [UInt64] = [21, 22, 23, 24]
    /// Each case takes a few scheduling rounds per wait; alone a seed's cases take a few
    /// milliseconds, but in the full suite under ThreadSanitizer, with the stress tests
    /// flooding the two-thread pool, 150 cases a seed outlasted a one-minute limit.
    static let casesPerSeed = 60

    /// One layer of a nesting.
    enum Layer: CaseIterable {
        case policy
        case policyOutcome
        case policyWithAttemptTimeout
        case breaker
        case pipelinePolicy
        case pipelineBreaker
        case pipelineFallback
    }

    /// What one run of the operation does.
    enum Step: CaseIterable {
        case success
        case transient
        case refused
        case tooManyRequests
        case downstreamRejection
        case cancellation
        case timedOutPOST

        func error(using generator: inout SeededRandomNumberGenerator) -> (any Error)? {
            switch self {
            case .success: nil
            case .transient: TransientError()
            case .refused: RefusedBeforeSending()
            case .tooManyRequests:
                ErrorShape.nsUnderlying.wrap(TooManyRequestsShape.allCases.randomElement(using: &generator)!.error)
            case .downstreamRejection:
                CircuitBreakerOpenError(breakerName: "downstream", state: .open, retryAfter: .seconds(1))
            case .cancellation: CancellationError()
            case .timedOutPOST: TimedOutPOSTShape.allCases.randomElement(using: &generator)!.error
            }
        }

        /// Whether no layer may run the operation again after this step, in a call so declared.
        func endsTheCall(notIdempotent: Bool) -> Bool {
            switch self {
            case .tooManyRequests, .cancellation, .timedOutPOST: true
            case .transient: notIdempotent
            case .success, .refused, .downstreamRejection: false
            }
        }
    }

    /// One drawn case: the layers outermost first, each policy's attempts, the script and the declaration.
    struct Case: CustomStringConvertible {
        var layers: [(Layer, attempts: Int, classifier: ClassifierUnderTest)]
        var script: [(Step, any Error)]
        var notIdempotent: Bool
        var seed: UInt64

        init(seed: UInt64, using generator: inout SeededRandomNumberGenerator) {
            self.seed = seed
            let depth = Int.random(in: 1...3, using: &generator)
            self.layers = (0..<depth).map { _ in
                (
                    Layer.allCases.randomElement(using: &generator)!, Int.random(in: 1...3, using: &generator),
                    ClassifierUnderTest.allCases.randomElement(using: &generator)!
                )
            }
            self.notIdempotent = Bool.random(using: &generator)
            if self.notIdempotent, self.layers[0].0 == .breaker {
                self.layers[0].0 = .policy  // the declaration is made on the outermost call
            }
            self.script = (0..<Int.random(in: 1...8, using: &generator)).map { _ in
                let step = Step.allCases.randomElement(using: &generator)!
                return (step, step.error(using: &generator) ?? TransientError())
            }
        }

        var maximumRuns: Int {
            self.layers.reduce(1) { product, layer in
                switch layer.0 {
                case .breaker, .pipelineBreaker: product
                default: product * layer.attempts
                }
            }
        }

        var description: String {
            "seed \(self.seed): \(self.layers.map { "\($0.0)(\($0.attempts), \($0.classifier))" }) script \(self.script.map(\.0))"
                + (self.notIdempotent ? " not idempotent" : "")
        }
    }

    /// Runs `testCase`; returns the steps the operation ran and how the call ended.
    static func run(_ testCase: Case) async throws -> (
        steps: [Step], errors: [any Error], result: Result<Int, any Error>
    ) {
        let clock = TestClock()
        let frozen = TestClock()  // breakers and timeouts: never due, so every run is the script's
        let ran = Recorder<(Step, any Error)>()
        let script = testCase.script
        var next: @Sendable () async throws -> Int = {
            let index = ran.values.count
            guard index < script.count else {
                ran.record((.success, TransientError()))
                return 1
            }
            ran.record(script[index])
            if script[index].0 == .success { return 1 }
            throw script[index].1
        }
        for (index, (layer, attempts, classifier)) in testCase.layers.enumerated().reversed() {
            let inner = next
            let declared: Idempotency? = index == 0 && testCase.notIdempotent ? .notIdempotent : nil
            let policy = try RetryPolicy(
                maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none,
                classifier: classifier.classifier, clock: clock)
            let breaker = try CircuitBreaker(
                name: "layer\(index)", tripRule: .consecutiveFailures(attempts), openDuration: .fixed(.seconds(30)),
                clock: frozen)
            let timeout = try Timeout(.seconds(86_400), clock: frozen)
            switch layer {
            case .policy:
                next = {
                    if let declared { return try await policy.execute(idempotency: declared, operation: inner) }
                    return try await policy.execute(operation: inner)
                }
            case .policyOutcome:
                next = {
                    if let declared { return try await policy.outcome(idempotency: declared, operation: inner).get() }
                    return try await policy.outcome(operation: inner).get()
                }
            case .policyWithAttemptTimeout:
                next = {
                    try await policy.execute(attemptTimeout: .seconds(86_400), idempotency: declared, operation: inner)
                }
            case .breaker:
                next = { try await breaker.execute(operation: inner) }
            case .pipelinePolicy:
                next = Self.stage(
                    ResiliencePipeline {
                        timeout
                        policy
                    }, declared: declared, inner)
            case .pipelineBreaker:
                next = Self.stage(
                    ResiliencePipeline {
                        breaker
                        timeout
                    }, declared: declared, inner)
            case .pipelineFallback:
                next = Self.stage(
                    ResiliencePipeline {
                        Fallback<Int>.value(-1)
                        policy
                        timeout
                    }, declared: declared, inner)
            }
        }
        let call = next
        // Moves the policies' clock to the end of each retry's wait as soon as it sleeps, never
        // to a time limit's end (one day away): time stands still while the call runs.
        let mover = Task {
            while await clock.advanceToNextDeadline(within: .seconds(3_600)) != nil {}
        }
        defer { mover.cancel() }
        let result = await Result { try await call() }
        let runs = ran.values
        return (runs.map(\.0), runs.map(\.1), result)
    }

    /// `inner` run through `pipeline`, with the call's declaration if it has one.
    static func stage<Stages: ResilienceStrategy>(
        _ pipeline: ResiliencePipeline<Stages>, declared: Idempotency?,
        _ inner: @escaping @Sendable () async throws -> Int
    ) -> @Sendable () async throws -> Int {
        {
            if let declared { return try await pipeline.execute(idempotency: declared, operation: inner) }
            return try await pipeline.execute(operation: inner)
        }
    }

    @Test(
        "No layer retries a 429, a cancellation or a request that may have reached the server",
        .timeLimit(.minutes(5)), arguments: seeds)
    func randomNestingsKeepTheRules(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<Self.casesPerSeed {
            let testCase = Case(seed: seed, using: &generator)
            let (steps, errors, result) = try await Self.run(testCase)
            #expect(steps.count >= 1, "\(testCase)")
            #expect(steps.count <= testCase.maximumRuns, "\(testCase): ran \(steps)")
            for step in steps.dropLast() {
                #expect(!step.endsTheCall(notIdempotent: testCase.notIdempotent), "\(testCase): ran \(steps)")
            }
            // A failure that ends the call ends it with that very error, unless a fallback answered.
            if let last = steps.last, last.endsTheCall(notIdempotent: testCase.notIdempotent),
                !testCase.layers.contains(where: { $0.0 == .pipelineFallback }), let lastError = errors.last
            {
                let thrown = try #require(result.failureValue, "\(testCase): ran \(steps)")
                #expect(
                    NestedRetryLedger.isSameBox(thrown, lastError), "\(testCase): ended with \(thrown)")
            }
        }
    }
}
