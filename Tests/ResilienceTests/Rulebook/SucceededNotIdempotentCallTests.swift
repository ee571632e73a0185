import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A call declared not idempotent succeeds inside an attempt of an outer policy that retries
/// everything, and the attempt then fails on the app's own check of the answer: its request
/// reached the server, so the outer policy must not run the attempt again, wherever it learns
/// of the success (a scope of its own, or one around the attempt).
@Suite("A not-idempotent call that succeeded is not sent again by the layers around it", .timeLimit(.minutes(5)))
struct SucceededNotIdempotentCallTests {
    /// The app's check of an answer the server sent: the request was acted on.
    struct Rejected: Error {}

    /// The entry point that declares the inner call not idempotent.
    enum Declarer: String, CaseIterable, Sendable {
        case policy, pipeline, timeout, hedging
    }

    /// What the outer policy's attempt runs under, where the success is noted.
    enum Around: String, CaseIterable, Sendable {
        /// `outer.outcome(attemptTimeout:)`, a limit that never fires.
        case attemptLimit
        /// An outer policy with a deadline, which hands it down.
        case deadline
        /// The outer call declared `.idempotent`.
        case declaredIdempotent
        /// A plain outer policy around a `Timeout` that never fires.
        case timeout
        /// A plain outer policy around a hedged call, whose attempt holds the inner call.
        case hedged
        /// A pipeline whose stage is the outer policy, called through `execute(idempotency: .idempotent)`.
        case pipeline
    }

    static func retryEverything(deadline: Duration? = nil, clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, deadline: deadline, clock: clock)
    }

    static func inner(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    /// Sends once through `declarer`, declared not idempotent; the send succeeds.
    static func declaredCall(
        _ declarer: Declarer, clock: TestClock, _ send: @escaping @Sendable () async throws -> Int
    ) async throws -> Int {
        switch declarer {
        case .policy:
            return try await Self.inner(clock: clock).execute(idempotency: .notIdempotent) { try await send() }
        case .pipeline:
            let pipeline = ResiliencePipeline { try! CircuitBreaker(name: "orders", clock: clock) }
            return try await pipeline.execute(idempotency: .notIdempotent) { try await send() }
        case .timeout:
            let timeout = try Timeout(.seconds(3_600), clock: clock)
            return try await timeout.execute(idempotency: .notIdempotent) { try await send() }
        case .hedging:
            let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
            return try await hedging.execute(idempotency: .notIdempotent) { try await send() }
        }
    }

    /// Runs `attempt` through an outer policy that retries everything, under `around`.
    static func outerCall(
        _ around: Around, clock: TestClock, _ attempt: @escaping @Sendable () async throws -> Int
    ) async throws -> RetryOutcome<Int> {
        let outer = try Self.retryEverything(deadline: around == .deadline ? .seconds(3_600) : nil, clock: clock)
        switch around {
        case .attemptLimit:
            return await outer.outcome(attemptTimeout: .seconds(3_600)) { try await attempt() }
        case .deadline:
            return await outer.outcome { try await attempt() }
        case .declaredIdempotent:
            return await outer.outcome(idempotency: .idempotent) { try await attempt() }
        case .timeout:
            let timeout = try Timeout(.seconds(3_600), clock: clock)
            return await outer.outcome { try await timeout.execute { try await attempt() } }
        case .hedged:
            let hedging = try Hedging(delay: .fixed(.seconds(3_600)), clock: clock)
            return await outer.outcome { try await hedging.execute { try await attempt() } }
        case .pipeline:
            // The pipeline's stage reports no outcome: built from the call and the policy's statistics.
            let pipeline = ResiliencePipeline { outer }
            let attempts = Counter()
            let result: Result<Int, any Error>
            do {
                result = .success(
                    try await pipeline.execute(idempotency: .idempotent) {
                        attempts.increment()
                        return try await attempt()
                    })
            } catch {
                result = .failure(error)
            }
            let stops = await outer.statistics.stopReasons
            return RetryOutcome(
                result: result, attempts: attempts.value, stopReason: stops.keys.first ?? .succeeded,
                retryAfter: nil, elapsed: .zero)
        }
    }

    /// The reviewer's case on the test clock: the request succeeds, the app rejects the answer,
    /// and the attempt fails. Sent once, and the outer policy stops with `notIdempotent`, as
    /// it does when the declared call itself fails.
    @Test(arguments: Declarer.allCases, Around.allCases)
    func anAttemptThatFailsAfterANotIdempotentCallSucceededIsNotRunAgain(
        declarer: Declarer, around: Around
    ) async throws {
        let clock = TestClock()
        let sends = Counter()
        let outcome = try await Self.outerCall(around, clock: clock) {
            _ = try await Self.declaredCall(declarer, clock: clock) {
                sends.increment()
                return 200
            }
            throw Rejected()
        }
        #expect(sends.value == 1, "sent \(sends.value) times")
        #expect(outcome.error is Rejected)
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// The control: the declared call fails instead, in a way that does not prove its request
    /// never left. The outer policy stops there too, under every scope, its own declaration
    /// `.idempotent` included: the nested call knows its request.
    @Test(arguments: Declarer.allCases, Around.allCases)
    func anAttemptWhoseNotIdempotentCallFailedIsNotRunAgain(declarer: Declarer, around: Around) async throws {
        let clock = TestClock()
        let sends = Counter()
        let outcome = try await Self.outerCall(around, clock: clock) {
            try await Self.declaredCall(declarer, clock: clock) {
                sends.increment()
                throw TransientError()
            }
        }
        #expect(sends.value == 1, "sent \(sends.value) times")
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// A plain policy between the scope and the attempt hears of the success through the scope
    /// around it, stops, and tells the policy around it, which stops too.
    @Test(arguments: Around.allCases)
    func aPlainPolicyInsideAScopeStopsAndTellsThePolicyAroundIt(around: Around) async throws {
        let clock = TestClock()
        let sends = Counter()
        let middle = try Self.retryEverything(clock: clock)
        let outcome = try await Self.outerCall(around, clock: clock) {
            try await middle.execute {
                _ = try await Self.declaredCall(.policy, clock: clock) {
                    sends.increment()
                    return 200
                }
                throw Rejected()
            }
        }
        #expect(sends.value == 1, "sent \(sends.value) times")
        #expect(outcome.stopReason == .notIdempotent)
        #expect(await middle.statistics.stopReasons[.notIdempotent] == 1)
    }

    /// A success before a nested policy's attempt began is not that attempt's: the nested policy
    /// retries its own failures as usual, and the call goes on.
    @Test(arguments: [Around.attemptLimit, .deadline, .declaredIdempotent, .pipeline])
    func aSuccessBeforeANestedPolicysAttemptDoesNotStopIt(around: Around) async throws {
        let clock = TestClock()
        let sends = Counter()
        let reads = Counter()
        let reader = try Self.retryEverything(clock: clock)
        let outcome = try await Self.outerCall(around, clock: clock) {
            _ = try await Self.declaredCall(.policy, clock: clock) {
                sends.increment()
                return 200
            }
            return try await reader.execute {
                reads.increment()
                if reads.value < 3 { throw TransientError() }
                return 7
            }
        }
        #expect(sends.value == 1)
        #expect(reads.value == 3)
        #expect(try outcome.get() == 7)
    }

    /// Which of three nested policies with deadlines has the attempt that fails after the
    /// declared call, inside the innermost one's attempt, succeeded.
    enum FailingLevel: String, CaseIterable, Sendable {
        case innermost, middle, outermost
    }

    /// Three policies with deadlines, each in the attempt of the one around it, the declared call
    /// in the innermost one's attempt: whichever level's attempt then fails, after the calls nested
    /// in it returned, hears of the success, stops with `notIdempotent`, and the request is sent once.
    @Test(arguments: FailingLevel.allCases)
    func threeNestedPoliciesWithDeadlinesSendTheRequestOnce(failing: FailingLevel) async throws {
        let clock = TestClock()
        let sends = Counter()
        let outermost = try Self.retryEverything(deadline: .seconds(3_600), clock: clock)
        let middle = try Self.retryEverything(deadline: .seconds(1_800), clock: clock)
        let innermost = try Self.retryEverything(deadline: .seconds(900), clock: clock)
        let outcome = await outermost.outcome {
            _ = try await middle.execute {
                _ = try await innermost.execute {
                    _ = try await Self.declaredCall(.policy, clock: clock) {
                        sends.increment()
                        return 200
                    }
                    if failing == .innermost { throw Rejected() }
                    return 1
                }
                if failing == .middle { throw Rejected() }
                return 2
            }
            if failing == .outermost { throw Rejected() }
            return 3
        }
        #expect(sends.value == 1, "\(failing): sent \(sends.value) times")
        #expect(outcome.error is Rejected)
        #expect(outcome.stopReason == .notIdempotent)
    }

    // MARK: - What a plain policy cannot know, and the workarounds the rules article gives

    /// A plain policy, with no scope around it, binds nothing on its first attempt's success path
    /// for a nested call to mark: it runs the attempt again. Recorded as the rules article
    /// documents it (see "Which calls may be repeated").
    @Test func aPlainPolicyWithNoScopeAroundItRunsTheAttemptAgain() async throws {
        let clock = TestClock()
        let sends = Counter()
        let outer = try Self.retryEverything(clock: clock)
        let outcome = await outer.outcome {
            _ = try await Self.inner(clock: clock).execute(idempotency: .notIdempotent) {
                sends.increment()
                return 200
            }
            throw Rejected()
        }
        #expect(sends.value == 3)
        #expect(outcome.stopReason == .exhausted)
    }

    /// The article's workarounds: declare the outer call not idempotent, or give it an attempt
    /// limit or a deadline. Each sends the request once.
    @Test(arguments: ["declaredNotIdempotent", "attemptLimit", "deadline"])
    func theDocumentedWorkaroundsSendTheRequestOnce(workaround: String) async throws {
        let clock = TestClock()
        let sends = Counter()
        let attempt: @Sendable () async throws -> Int = {
            _ = try await Self.inner(clock: clock).execute(idempotency: .notIdempotent) {
                sends.increment()
                return 200
            }
            throw Rejected()
        }
        let outer = try Self.retryEverything(deadline: workaround == "deadline" ? .seconds(60) : nil, clock: clock)
        let outcome: RetryOutcome<Int>
        switch workaround {
        case "declaredNotIdempotent": outcome = await outer.outcome(idempotency: .notIdempotent) { try await attempt() }
        case "attemptLimit": outcome = await outer.outcome(attemptTimeout: .seconds(60)) { try await attempt() }
        default: outcome = await outer.outcome { try await attempt() }
        }
        #expect(sends.value == 1, "\(workaround): sent \(sends.value) times")
        #expect(outcome.stopReason == .notIdempotent)
    }
}
