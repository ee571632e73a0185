import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A call declared not idempotent by one of the library's entry points, nested in a retry
/// policy's attempt: the policy runs outside the declaration, so the call must tell it,
/// whichever entry point made the declaration and however the operation wrapped its error.
@Suite("A call declared not idempotent stops the policies around it", .timeLimit(.minutes(5)))
struct NotIdempotentDeclarationTests {
    /// The entry point that declares the inner call.
    enum Declarer: String, CaseIterable, Sendable {
        /// `RetryPolicy.execute(idempotency:)`: the control, a policy inside a policy.
        case policy
        /// `Hedging.execute(idempotency:)`.
        case hedging
        /// `Timeout.execute(idempotency:)`.
        case timeout
        /// `ResiliencePipeline.execute(idempotency:)`, as the URLSession helpers call it.
        case pipeline
    }

    static func policy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    /// Runs `send` once through `declarer`, declared `idempotency`.
    static func declaredCall(
        _ declarer: Declarer, _ idempotency: Idempotency, clock: TestClock,
        _ send: @escaping @Sendable () async throws -> Int
    ) async throws -> Int {
        switch declarer {
        case .policy:
            return try await Self.policy(clock: clock).execute(idempotency: idempotency) { try await send() }
        case .hedging:
            let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
            return try await hedging.execute(idempotency: idempotency) { try await send() }
        case .timeout:
            let timeout = try Timeout(.seconds(60), clock: clock)
            return try await timeout.execute(idempotency: idempotency) { try await send() }
        case .pipeline:
            let pipeline = ResiliencePipeline { try! CircuitBreaker(name: "orders", clock: clock) }
            return try await pipeline.execute(idempotency: idempotency) { try await send() }
        }
    }

    /// A failure that may have reached the server, in every shape an operation may throw it:
    /// the policy around sends the request once, as it does around a policy declared so.
    @Test(arguments: Declarer.allCases, LibraryErrorShape.allCases)
    func aPolicyAroundACallDeclaredNotIdempotentSendsItOnce(
        declarer: Declarer, shape: LibraryErrorShape
    ) async throws {
        let clock = TestClock()
        let outer = try Self.policy(clock: clock)
        let sends = Counter()
        let outcome = await outer.outcome {
            try await Self.declaredCall(declarer, .notIdempotent, clock: clock) {
                sends.increment()
                throw shape.wrap(TransientError())
            }
        }
        #expect(sends.value == 1, "sent \(sends.value) times")
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// A failure that proves the request never left may still be sent again: the declared
    /// call leaves no word, and the policy around retries it (around a policy, the inner one
    /// retries it to exhaustion, and the outer stops on that).
    @Test(arguments: Declarer.allCases, LibraryErrorShape.allCases)
    func aFailureThatProvesTheRequestNeverLeftIsStillRetried(
        declarer: Declarer, shape: LibraryErrorShape
    ) async throws {
        let clock = TestClock()
        let outer = try Self.policy(clock: clock)
        let sends = Counter()
        let outerAttempts = Counter()
        _ = await outer.outcome {
            outerAttempts.increment()
            return try await Self.declaredCall(declarer, .notIdempotent, clock: clock) {
                sends.increment()
                throw shape.wrap(LimiterRejectionError(limiterName: "uploads", reason: .queueFull, queued: 0))
            }
        }
        #expect(sends.value == 3, "sent \(sends.value) times")
        #expect(outerAttempts.value == (declarer == .policy ? 1 : 3))
    }

    /// A `POST` with an `Idempotency-Key` is declared safe to repeat: nothing stops the policy around it.
    @Test(arguments: Declarer.allCases)
    func aPolicyAroundAPOSTWithAnIdempotencyKeyStillRetriesIt(declarer: Declarer) async throws {
        let clock = TestClock()
        let outer = try Self.policy(clock: clock)
        let outerAttempts = Counter()
        let keyed = Idempotency.http(method: "POST", headers: ["Idempotency-Key": "order-7"])
        let outcome = await outer.outcome {
            outerAttempts.increment()
            return try await Self.declaredCall(declarer, keyed, clock: clock) { throw TransientError() }
        }
        #expect(outerAttempts.value == (declarer == .policy ? 1 : 3))
        #expect(outcome.stopReason == (declarer == .policy ? .retriedByInnerPolicy : .exhausted))
    }
}
