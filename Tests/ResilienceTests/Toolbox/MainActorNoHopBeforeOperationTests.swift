import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

/// A `@MainActor` caller's operation runs on the main actor with no hop before it starts: a
/// main-actor job queued just before the call has not run yet when the operation reads the
/// caller's state. A hop off the main actor and back would let it run first (the main actor
/// runs its jobs in order), and the operation would see its write.
@Suite(.timeLimit(.minutes(5)))
@MainActor
struct MainActorNoHopBeforeOperationTests {
    @MainActor final class Marker {
        var value = 0
    }

    /// A marker at 1, with a main-actor job queued that sets it to 2.
    static func armed() -> Marker {
        let marker = Marker()
        marker.value = 1
        Task { @MainActor in marker.value = 2 }
        return marker
    }

    @Test func retryPolicyEntryPoints() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let m1 = Self.armed()
        #expect(try await policy.execute { m1.value } == 1, "execute hopped before the operation")
        let m2 = Self.armed()
        #expect(try await policy.outcome { m2.value }.get() == 1, "outcome hopped")
        let m3 = Self.armed()
        #expect(try await policy.execute(idempotency: .notIdempotent) { m3.value } == 1, "execute(idempotency:) hopped")
        let m4 = Self.armed()
        #expect(
            try await policy.outcome(idempotency: .idempotent) { m4.value }.get() == 1, "outcome(idempotency:) hopped")
        let m5 = Self.armed()
        #expect(
            try await policy.execute(attemptTimeout: .seconds(5)) { m5.value } == 1, "execute(attemptTimeout:) hopped")
        let network = ConnectivityWait(monitor: TestConnectivityMonitor(), limit: .seconds(5))
        let m6 = Self.armed()
        #expect(try await policy.execute(waitingFor: network) { m6.value } == 1, "execute(waitingFor:) hopped")
        let recovery = CredentialRecovery(credential: "token", clock: TestClock()) { $0 + "!" }
        let m7 = Self.armed()
        #expect(try await policy.execute(recovering: recovery) { _ in m7.value } == 1, "execute(recovering:) hopped")
    }

    @Test func breakerThrottleFallbackLimiters() async throws {
        let breaker = try CircuitBreaker(name: "b", clock: TestClock())
        let m8 = Self.armed()
        #expect(try await breaker.execute { m8.value } == 1, "CircuitBreaker.execute hopped")
        let throttle = try AdaptiveThrottle(clock: TestClock(), generator: SeededRandomNumberGenerator(seed: 1))
        let m9 = Self.armed()
        #expect(try await throttle.execute { m9.value } == 1, "AdaptiveThrottle.execute hopped")
        let throttled = try CircuitBreaker(name: "t", throttle: throttle, clock: TestClock())
        let m10 = Self.armed()
        #expect(try await throttled.execute { m10.value } == 1, "throttled CircuitBreaker.execute hopped")
        let fallback = Fallback<Int>.value(7)
        let m11 = Self.armed()
        #expect(try await fallback.execute { m11.value } == 1, "Fallback.execute hopped")
        let bulkhead = try ConcurrencyLimiter(limit: 2, clock: TestClock())
        let m12 = Self.armed()
        #expect(try await bulkhead.execute { m12.value } == 1, "ConcurrencyLimiter.execute hopped")
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 5, tokensPerPeriod: 1, period: .seconds(1)), clock: TestClock())
        let m13 = Self.armed()
        #expect(try await limiter.execute { m13.value } == 1, "RateLimiter.execute hopped")
        let clock = TestClock()
        let registry = try RateLimiterRegistry<String> { _ in
            try! RateLimiter(.tokenBucket(capacity: 5, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        }
        let m14 = Self.armed()
        #expect(try await registry.limiter(for: "k").execute { m14.value } == 1, "registry limiter hopped")
    }

    @Test func sendableEntryPoints() async throws {
        let timeout = try Timeout(.seconds(5), clock: TestClock())
        let m15 = Self.armed()
        #expect(try await timeout.execute { m15.value } == 1, "Timeout.execute hopped")
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
        let m16 = Self.armed()
        #expect(try await hedging.execute { m16.value } == 1, "Hedging.execute hopped")
        let plain = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 2, clock: TestClock())
            try CircuitBreaker(name: "p", clock: TestClock())
        }
        let m17 = Self.armed()
        #expect(try await plain.execute { m17.value } == 1, "inline pipeline hopped")
        let timed = try ResiliencePipeline { try Timeout(.seconds(5), clock: TestClock()) }
        let m19 = Self.armed()
        #expect(try await timed.execute { m19.value } == 1, "timeout pipeline hopped")
        let m20 = Self.armed()
        #expect(
            try await hedging.execute(idempotency: .notIdempotent) { m20.value } == 1,
            "Hedging.execute(idempotency: .notIdempotent) hopped")
        let m21 = Self.armed()
        #expect(
            try await timeout.execute(idempotency: .notIdempotent) { m21.value } == 1,
            "Timeout.execute(idempotency:) hopped")
        let standard = try ResiliencePipeline.standardHTTP(clock: TestClock())
        let m22 = Self.armed()
        #expect(try await standard.execute { m22.value } == 1, "standardHTTP preset hopped")
    }

    /// The same pipeline, one call with a declaration and one without: only the declared one hops.
    @Test func anInlinePipelineDeclaredNotIdempotentHopsWhereThePlainCallDoesNot() async throws {
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 2, clock: TestClock())
            try CircuitBreaker(name: "p", clock: TestClock())
        }
        let m23 = Self.armed()
        let plain = try await pipeline.execute { m23.value }
        let m24 = Self.armed()
        let declared = try await pipeline.execute(idempotency: .idempotent) { m24.value }
        #expect(plain == 1, "the plain call hopped")
        #expect(declared == 1, "execute(idempotency:) left the main actor before the operation ran")
    }

    /// Which stage makes the declared call hop: each alone.
    @Test func aDeclaredCallThroughOneInlineStage() async throws {
        let retryOnly = try ResiliencePipeline { try RetryPolicy(maximumAttempts: 2, clock: TestClock()) }
        let breakerOnly = try ResiliencePipeline { try CircuitBreaker(name: "b", clock: TestClock()) }
        let a = Self.armed()
        let viaRetry = try await retryOnly.execute(idempotency: .idempotent) { a.value }
        let b = Self.armed()
        let viaBreaker = try await breakerOnly.execute(idempotency: .idempotent) { b.value }
        #expect(viaRetry == 1, "a pipeline of one retry policy, declared, hopped")
        #expect(viaBreaker == 1, "a pipeline of one breaker, declared, hopped")
    }

    @Test func integrationHelpers() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        // retryingFailedItems is documented to leave the caller's executor: not checked.
        let m26 = Self.armed()
        let value = try await policy.writeTransaction(executeSQL: { _ in }, operation: { m26.value })
        #expect(value == 1, "writeTransaction hopped")
    }
}
