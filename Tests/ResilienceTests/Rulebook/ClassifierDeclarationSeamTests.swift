import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A policy whose classifier knows its calls are `POST`s keeps every call nested in
/// them from sending the request twice, as a declared call does.
@Suite("A classifier's 'not idempotent' reaches the calls nested in the policy's calls")
struct ClassifierDeclarationSeamTests {
    /// How the outer policy, whose classifier says `POST`, is called.
    enum OuterEntry: String, CaseIterable, Sendable {
        case execute, outcome, attemptTimeout, pipeline
    }

    /// What sits inside the outer call and might send the request again.
    enum InnerLayer: String, CaseIterable, Sendable {
        case policyExecute, policyOutcome, policyBehindBreaker, hedging
    }

    static func postPolicy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
    }

    static func plainPolicy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    /// Sends the request through `layer`: one send, which times out (it may have reached the server).
    static func send(through layer: InnerLayer, clock: TestClock, sends: Counter) async throws -> Int {
        let request: @Sendable () async throws -> Int = {
            sends.increment()
            throw URLError(.timedOut)
        }
        switch layer {
        case .policyExecute:
            return try await Self.plainPolicy(clock: clock).execute { try await request() }
        case .policyOutcome:
            return try await Self.plainPolicy(clock: clock).outcome { try await request() }.get()
        case .policyBehindBreaker:
            let breaker = try CircuitBreaker(name: "orders", tripRule: .consecutiveFailures(10), clock: clock)
            let inner = try Self.plainPolicy(clock: clock)
            return try await breaker.execute { try await inner.execute { try await request() } }
        case .hedging:
            // A hedge would start after a second and fail at once; with a `POST` none may start.
            let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: clock)
            return try await hedging.execute {
                if sends.increment() == 1 { try await clock.sleep(for: .seconds(5)) }
                throw URLError(.timedOut)
            }
        }
    }

    @Test(arguments: OuterEntry.allCases, InnerLayer.allCases)
    func aNestedLayerDoesNotSendThePOSTAgain(_ entry: OuterEntry, _ layer: InnerLayer) async throws {
        let clock = TestClock()
        let sends = Counter()
        let outer = try Self.postPolicy(clock: clock)
        let call = Task { () -> RetryStopReason? in
            switch entry {
            case .execute:
                _ = try? await outer.execute { try await Self.send(through: layer, clock: clock, sends: sends) }
                return nil
            case .outcome:
                return await outer.outcome { try await Self.send(through: layer, clock: clock, sends: sends) }
                    .stopReason
            case .attemptTimeout:
                return await outer.outcome(attemptTimeout: .seconds(60)) {
                    try await Self.send(through: layer, clock: clock, sends: sends)
                }.stopReason
            case .pipeline:
                let pipeline = ResiliencePipeline { outer }
                _ = try? await pipeline.execute { try await Self.send(through: layer, clock: clock, sends: sends) }
                return nil
            }
        }
        if layer == .hedging {
            await clock.waitForSleepers(count: entry == .attemptTimeout ? 2 : 1)
            clock.advance(by: .seconds(5))
        }
        let stopReason = await call.value
        #expect(sends.value == 1, "\(entry) around \(layer): the POST was sent \(sends.value) times")
        if let stopReason { #expect(stopReason == .notIdempotent) }
    }

    @Test func aClassifiersIdempotentIsNotHandedDownOverAnInnerPOST() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "PUT"), clock: clock)
        let inner = try Self.postPolicy(clock: clock)
        let sends = Counter()
        let outcome = await outer.outcome {
            try await inner.execute { () throws -> Int in
                sends.increment()
                throw URLError(.timedOut)
            }
        }
        #expect(sends.value == 1, "the inner policy's own POST must hold inside an outer PUT")
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// The inner policy knows its request; the outer one only what it was told about the
    /// whole operation. Once the inner one stops because its `POST` may have reached the
    /// server, no layer above sends it again, whatever it was told.
    @Test(arguments: [Idempotency.idempotent, nil])
    func anOuterPolicyDoesNotResendWhatAnInnerOneStoppedAsNotIdempotent(_ outerDeclaration: Idempotency?) async throws {
        let clock = TestClock()
        let outermost = try Self.plainPolicy(clock: clock)
        let outer = try Self.plainPolicy(clock: clock)
        let inner = try Self.plainPolicy(clock: clock)
        let sends = Counter()
        let operation = {
            try await outer.execute {
                try await inner.execute(idempotency: .notIdempotent) { () throws -> Int in
                    sends.increment()
                    throw URLError(.networkConnectionLost)
                }
            }
        }
        let outcome =
            if let outerDeclaration {
                await outermost.outcome(idempotency: outerDeclaration) { try await operation() }
            } else {
                await outermost.outcome { try await operation() }
            }
        #expect(sends.value == 1, "the POST was sent \(sends.value) times")
        #expect(outcome.stopReason == .notIdempotent)
        #expect(outcome.attempts == 1)
    }

    @Test func aStopForAnotherReasonLeavesTheOuterPolicyFreeToRetry() async throws {
        let clock = TestClock()
        let outer = try Self.plainPolicy(clock: clock)
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: .closure { _, _ in .doNotRetry }, clock: clock)
        let sends = Counter()
        let outcome = await outer.outcome {
            try await inner.execute { () throws -> Int in
                sends.increment()
                throw URLError(.networkConnectionLost)
            }
        }
        // The inner classifier's "final" is its own judgement, not a fact about the request.
        #expect(sends.value == 3)
        #expect(outcome.stopReason == .exhausted)
    }

    @Test func theCallersDeclarationStillWinsOverTheClassifiers() async throws {
        let clock = TestClock()
        let outer = try Self.postPolicy(clock: clock)
        let inner = try Self.plainPolicy(clock: clock)
        let sends = Counter()
        let outcome = await outer.outcome(idempotency: .idempotent) {
            try await inner.execute { () throws -> Int in
                sends.increment()
                throw URLError(.timedOut)
            }
        }
        // The caller said the whole call may run twice (say, the POST carries an
        // idempotency key): the inner policy retries 3 times, each time the outer one
        // sees exhaustion by an inner policy and does not multiply it.
        #expect(sends.value == 3)
        #expect(outcome.stopReason == .retriedByInnerPolicy)
    }

    @Test func anEnclosingDeclarationIsNotReplacedByANestedPolicysClassifier() async throws {
        let clock = TestClock()
        let outermost = try Self.plainPolicy(clock: clock)
        let middle = try Self.postPolicy(clock: clock)
        let innermost = try Self.plainPolicy(clock: clock)
        let sends = Counter()
        _ = await outermost.outcome(idempotency: .idempotent) {
            try await middle.execute {
                try await innermost.execute { () throws -> Int in
                    sends.increment()
                    throw URLError(.timedOut)
                }
            }
        }
        // The caller's declaration is what every call under it is judged by; the middle
        // policy's classifier does not narrow it for the innermost one.
        #expect(sends.value == 3)
    }

    @Test func aPOSTPolicysFirstAttemptSuccessStillReturnsItsValue() async throws {
        let policy = try Self.postPolicy(clock: TestClock())
        let value = try await policy.execute { 42 }
        #expect(value == 42)
    }
}
