import Resilience
import ResilienceTesting
import Testing

/// The word a call declared not idempotent leaves for the layers around it is for those layers
/// alone: one error value that reaches two unrelated calls (a shared task both awaited, a cached
/// failure) does not carry a `POST`'s declaration into a `GET`'s policy.
@Suite(.timeLimit(.minutes(5)))
struct DeclarationLeakTests {
    enum Declarer: String, CaseIterable, Sendable {
        case hedging, timeout, pipeline
        /// A policy declared so leaves the same word.
        case policy
    }

    static func declaredCall(
        _ declarer: Declarer, clock: TestClock, _ send: @escaping @Sendable () async throws -> Int
    ) async throws -> Int {
        switch declarer {
        case .hedging:
            return try await Hedging(delay: .fixed(.seconds(1)), clock: clock).execute(idempotency: .notIdempotent) {
                try await send()
            }
        case .timeout:
            return try await Timeout(.seconds(60), clock: clock).execute(idempotency: .notIdempotent) {
                try await send()
            }
        case .policy:
            return try await RetryPolicy(maximumAttempts: 1, clock: clock).execute(idempotency: .notIdempotent) {
                try await send()
            }
        case .pipeline:
            let pipeline = ResiliencePipeline { try! CircuitBreaker(name: "orders", clock: clock) }
            return try await pipeline.execute(idempotency: .notIdempotent) { try await send() }
        }
    }

    @Test(arguments: Declarer.allCases)
    func anUnrelatedIdempotentCallFailingWithTheSameErrorIsStillRetried(declarer: Declarer) async throws {
        let clock = TestClock()
        // One failure both calls hear of: the result of a shared upstream task.
        let shared: any Error = HTTPResponseError(statusCode: 503)
        let started = Gate()
        let release = Gate()
        let getPolicy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let getAttempts = Counter()
        let get = Task {
            await getPolicy.outcome(idempotency: .idempotent) { () async throws -> Int in
                if getAttempts.increment() == 1 {
                    started.open()
                    await release.wait()
                }
                throw shared
            }
        }
        await started.wait()
        // Meanwhile a POST, declared not idempotent, fails with the same error under a policy of its own.
        let postPolicy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 2))
        let post = await postPolicy.outcome { try await Self.declaredCall(declarer, clock: clock) { throw shared } }
        #expect(post.stopReason == .notIdempotent)
        release.open()
        let outcome = await get.value
        #expect(getAttempts.value == 3, "the GET was sent \(getAttempts.value) times")
        #expect(outcome.stopReason == .exhausted, "\(outcome.stopReason)")
    }
}
