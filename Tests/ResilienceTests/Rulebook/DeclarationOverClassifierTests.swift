import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The caller's declaration (`idempotency:` of a policy, a pipeline, a ``Timeout`` or a ``Hedging``
/// call) outranks the classifier of a policy nested in the call on every path: the nested policy's
/// failures, its success, and what it tells the time limits and hedges around it.
///
/// A `POST` classifier (`HTTPRetryClassifier(method: "POST")`) inside a call declared
/// ``Idempotency/idempotent`` is idempotent: it retries its own failures, and its success does not
/// stop the declared call from running its attempt again. A `GET` classifier inside a call declared
/// ``Idempotency/notIdempotent`` is not idempotent: it never sends its request again, no layer in
/// between does, and its success stops the declared call as a declared call's success would.
///
/// The shapes (which call declares, the layers between it and the policy, the policy's own shape)
/// are drawn from a seeded generator; the seed and the shape are in every failure message.
@Suite("The caller's declaration outranks a nested classifier on every path", .timeLimit(.minutes(5)))
struct DeclarationOverClassifierTests {
    typealias Operation = @Sendable () async throws -> Int

    /// The call that makes the declaration; every one runs a retrying policy under it.
    enum Declaring: CaseIterable {
        /// `policy.execute(idempotency:)` of the retrying policy itself.
        case policy
        /// `pipeline.execute(idempotency:)` of a pipeline whose one stage is the retrying policy.
        case pipeline
        /// `Timeout.execute(idempotency:)` around the retrying policy, which inherits the declaration.
        case timeout
        /// `Hedging.execute(idempotency:)` around the retrying policy, which inherits the declaration.
        case hedging
    }

    /// A layer between the declared call and the nested policy, declaring nothing.
    enum Between: CaseIterable {
        case timeout, limiterPipeline, hedging
        /// A policy of one attempt with a deadline, as near as the nested policy's: it hands a scope down.
        case policyWithDeadline
    }

    /// The nested policy's shape, beside its classifier.
    enum Shape: CaseIterable {
        case plain
        case deadline
        case observer
    }

    /// How the nested policy is called.
    enum Entry: CaseIterable {
        case execute, outcome, attemptTimeout
    }

    struct Nesting: CustomStringConvertible {
        var declaring: Declaring
        var between: [Between]
        var shape: Shape
        var entry: Entry

        init(using generator: inout SeededRandomNumberGenerator) {
            self.declaring = Declaring.allCases.randomElement(using: &generator)!
            self.between = (0..<Int.random(in: 0...2, using: &generator)).map { _ in
                Between.allCases.randomElement(using: &generator)!
            }
            self.shape = Shape.allCases.randomElement(using: &generator)!
            self.entry = Entry.allCases.randomElement(using: &generator)!
        }

        var description: String {
            "\(self.declaring) declaring, between: \(self.between), nested policy \(self.shape) via \(self.entry)"
        }
    }

    /// What the nested policy's request does, and what the attempt does after it.
    enum Scenario {
        /// The request succeeds; then the attempt fails in a way that proves only its next step
        /// never left (a refused connection).
        case succeedsThenRefused
        /// The request fails with a 503, every time.
        case fails503
    }

    struct Counting: RetryObserver {}

    /// Runs `nesting` under `declaration` with the nested policy's classifier made for `method`, and
    /// returns how many times the nested policy's request was sent.
    static func sends(
        _ nesting: Nesting, declaration: Idempotency, method: String, scenario: Scenario
    ) async throws -> Int {
        let clock = TestClock()
        let long = Duration.seconds(100_000)
        let sends = Counter()
        // Retries every failure at once, up to three attempts: only the rules stop it.
        let retrying = try RetryPolicy(
            name: "declared", maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock)
        let nested = try RetryPolicy(
            name: "nested", maximumAttempts: 2, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: method), deadline: nesting.shape == .deadline ? long : nil,
            observer: nesting.shape == .observer ? Counting() : nil, clock: clock)
        let request: Operation = {
            sends.increment()
            if case .fails503 = scenario { throw HTTPResponseError(statusCode: 503) }
            return 1
        }
        let attempt: Operation = {
            switch nesting.entry {
            case .execute: _ = try await nested.execute(operation: request)
            case .outcome: _ = try await nested.outcome(operation: request).get()
            case .attemptTimeout: _ = try await nested.execute(attemptTimeout: long, operation: request)
            }
            if case .succeedsThenRefused = scenario { throw URLError(.cannotConnectToHost) }
            return 1
        }
        var operation = attempt
        for layer in nesting.between.reversed() {
            let inner = operation
            switch layer {
            case .timeout:
                let timeout = try Timeout(long, clock: clock)
                operation = { try await timeout.execute(operation: inner) }
            case .limiterPipeline:
                let pipeline = try ResiliencePipeline { try ConcurrencyLimiter(limit: 4, clock: clock) }
                operation = { try await pipeline.execute(operation: inner) }
            case .hedging:
                let hedging = try Hedging(delay: .fixed(long), maximumHedges: 1, clock: clock)
                operation = { try await hedging.execute(operation: inner) }
            case .policyWithDeadline:
                let policy = try RetryPolicy(maximumAttempts: 1, deadline: long, clock: clock)
                operation = { try await policy.execute(operation: inner) }
            }
        }
        let body = operation
        switch nesting.declaring {
        case .policy:
            _ = try? await retrying.execute(idempotency: declaration, operation: body)
        case .pipeline:
            let pipeline = ResiliencePipeline { retrying }
            _ = try? await pipeline.execute(idempotency: declaration, operation: body)
        case .timeout:
            let timeout = try Timeout(long, clock: clock)
            _ = try? await timeout.execute(idempotency: declaration) {
                try await retrying.execute(operation: body)
            }
        case .hedging:
            let hedging = try Hedging(delay: .fixed(long), maximumHedges: 1, clock: clock)
            _ = try? await hedging.execute(idempotency: declaration) {
                try await retrying.execute(operation: body)
            }
        }
        return sends.value
    }

    static let seed: UInt64 = 0x5EA3_2101
    static let rounds = 40

    /// A `POST` classifier inside a call declared idempotent: its success does not stop the declared
    /// call from running the attempt again, and the `POST` goes out once per attempt.
    @Test func aPOSTClassifierUnderAnIdempotentDeclarationLetsTheAttemptRunAgain() async throws {
        var generator = SeededRandomNumberGenerator(seed: Self.seed)
        for round in 0..<Self.rounds {
            let nesting = Nesting(using: &generator)
            let sends = try await Self.sends(
                nesting, declaration: .idempotent, method: "POST", scenario: .succeedsThenRefused)
            #expect(
                sends >= 3,
                "seed \(Self.seed), round \(round), \(nesting): the POST went out \(sends) times, the attempt did not run again"
            )
        }
    }

    /// A `POST` classifier inside a call declared idempotent retries its own failures: the
    /// declaration, not the classifier, says whether its request may go out again.
    @Test func aPOSTClassifierUnderAnIdempotentDeclarationRetriesItsOwnFailure() async throws {
        var generator = SeededRandomNumberGenerator(seed: Self.seed &+ 1)
        for round in 0..<Self.rounds {
            let nesting = Nesting(using: &generator)
            let sends = try await Self.sends(nesting, declaration: .idempotent, method: "POST", scenario: .fails503)
            #expect(
                sends >= 2, "seed \(Self.seed &+ 1), round \(round), \(nesting): the POST went out \(sends) times")
        }
    }

    /// A `GET` classifier inside a call declared not idempotent never sends its request again, and no
    /// layer around it does: not the policy itself, not a hedge, not the declared call.
    @Test func aGETClassifierUnderANotIdempotentDeclarationNeverSendsAgain() async throws {
        var generator = SeededRandomNumberGenerator(seed: Self.seed &+ 2)
        for round in 0..<Self.rounds {
            let nesting = Nesting(using: &generator)
            let sends = try await Self.sends(nesting, declaration: .notIdempotent, method: "GET", scenario: .fails503)
            #expect(sends == 1, "seed \(Self.seed &+ 2), round \(round), \(nesting): the GET went out \(sends) times")
        }
    }

    /// A `GET` classifier inside a call declared not idempotent, in a policy with a deadline: its
    /// success stops the declared call from running the attempt again, as a `POST` classifier's does
    /// there, also when a policy between has a deadline as near (the nested one then hands no scope
    /// down of its own). A plain policy call reads no scope when it succeeds: see
    /// Docs/DesignDecisions.md.
    @Test func aGETClassifiersSuccessUnderANotIdempotentDeclarationStopsTheDeclaredCall() async throws {
        var generator = SeededRandomNumberGenerator(seed: Self.seed &+ 3)
        for round in 0..<Self.rounds {
            var nesting = Nesting(using: &generator)
            nesting.shape = .deadline
            let sends = try await Self.sends(
                nesting, declaration: .notIdempotent, method: "GET", scenario: .succeedsThenRefused)
            #expect(sends == 1, "seed \(Self.seed &+ 3), round \(round), \(nesting): the GET went out \(sends) times")
        }
    }

    /// The control for the two success tests: a `POST` classifier under a call declared not
    /// idempotent stops it, in every shape, so a nesting in which no success is heard would show.
    @Test func aPOSTClassifiersSuccessUnderANotIdempotentDeclarationStopsTheDeclaredCall() async throws {
        var generator = SeededRandomNumberGenerator(seed: Self.seed &+ 4)
        for round in 0..<Self.rounds {
            let nesting = Nesting(using: &generator)
            let sends = try await Self.sends(
                nesting, declaration: .notIdempotent, method: "POST", scenario: .succeedsThenRefused)
            #expect(sends == 1, "seed \(Self.seed &+ 4), round \(round), \(nesting): the POST went out \(sends) times")
        }
    }
}
