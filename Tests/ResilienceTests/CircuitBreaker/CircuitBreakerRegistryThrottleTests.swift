import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite("A registry's breakers with an adaptive throttle")
struct CircuitBreakerRegistryThrottleTests {
    /// A throttle on `clock`; `floor` lets a test's few failures through without any rejection.
    private static func throttle(
        clock: TestClock, multiplier: Double = 2, floor: Int = 0, seed: UInt64 = 7
    ) -> AdaptiveThrottle? {
        try? AdaptiveThrottle(
            multiplier: multiplier, window: .seconds(120), floor: floor, clock: clock,
            generator: SeededRandomNumberGenerator(seed: seed))
    }

    /// Breakers that count every call in a window of 100 and open only at a 90% failure rate
    /// over 100 calls: a test can read how many calls reached the breaker from its snapshot.
    private static func countingBreakers() throws -> CircuitBreakerConfiguration {
        try CircuitBreakerConfiguration(tripRule: .failureRate(threshold: 0.9, minimumCalls: 100, window: .count(100)))
    }

    /// Records every key the registry asked a throttle for, and whether its lock was held then.
    private final class ThrottleMaker: Sendable {
        private let asked = Lock<[String]>([])
        private let underLock = Lock(0)

        func record(_ key: String, lockHeld: Bool) {
            self.asked.withLock { $0.append(key) }
            if lockHeld { self.underLock.withLock { $0 += 1 } }
        }

        var keys: [String] { self.asked.withLock { $0 } }
        var callsUnderTheLock: Int { self.underLock.withLock { $0 } }
    }

    @Test func aRegistryBreakerAsksItsThrottleAndCountsWhatRuns() async throws {
        let clock = TestClock()
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts", makeThrottle: { _ in Self.throttle(clock: clock, floor: 10) }, clock: clock)
        let breaker = registry.breaker(for: "api.example")
        let throttle = try #require(breaker.throttle)
        for _ in 0..<3 { _ = try await breaker.execute { 1 } }
        _ = try? await breaker.execute { () async throws -> Int in throw HTTPResponseError(statusCode: 502) }
        #expect(throttle.counts == (4, 3))
        #expect(registry.breaker(for: "api.example").throttle === throttle)
    }

    @Test func aThrottledRegistryBreakerRejectsWithoutRunningAndLeavesItsCountsAlone() async throws {
        let clock = TestClock()
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts", configuration: try Self.countingBreakers(),
            makeThrottle: { _ in Self.throttle(clock: clock, multiplier: 1) }, clock: clock)
        let breaker = registry.breaker(for: "down.example")
        let throttle = try #require(breaker.throttle)
        for _ in 0..<10_000 { throttle.recordRejected() }
        let (ran, throttled) = await sendFailingCalls(20, through: breaker)
        #expect(throttled >= 18)
        #expect(ran + throttled == 20)
        // Only the calls that ran reached the breaker: a throttled call is neither a call nor a failure.
        let snapshot = breaker.snapshot()
        #expect(snapshot.recentCalls == ran)
        #expect(snapshot.recentFailures == ran)
        #expect(snapshot.state == .closed)
        let rejection = await #expect(throws: AdaptiveThrottleRejection.self) {
            for _ in 0..<100 { try await breaker.execute {} }
        }
        #expect(rejection.map { FailureAnalysis($0).delivery } == .notSent)
    }

    @Test func eachKeyGetsAThrottleOfItsOwnMadeOutsideTheLockOnceForItsBreaker() async throws {
        let clock = TestClock()
        let maker = ThrottleMaker()
        let probe = Lock<CircuitBreakerRegistry<String>?>(nil)
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts", configuration: try Self.countingBreakers(),
            makeThrottle: { key in
                maker.record(key, lockHeld: probe.withLock { $0 }?.isLockHeld ?? false)
                return Self.throttle(clock: clock, multiplier: 1, seed: key == "down.example" ? 3 : 5)
            }, clock: clock)
        probe.withLock { $0 = registry }
        defer { probe.withLock { $0 = nil } }
        let down = registry.breaker(for: "down.example")
        let up = registry.breaker(for: "up.example")
        let downThrottle = try #require(down.throttle)
        let upThrottle = try #require(up.throttle)
        #expect(downThrottle !== upThrottle)

        // One host's outage shuts its own throttle; the other host's calls all run.
        for _ in 0..<10_000 { downThrottle.recordRejected() }
        let downCalls = await sendFailingCalls(20, through: down)
        #expect(downCalls.throttled >= 18)
        let ran = Counter()
        for _ in 0..<20 { _ = try await registry.breaker(for: "up.example").execute { ran.increment() } }
        #expect(ran.value == 20)
        #expect(upThrottle.counts == (20, 20))
        #expect(upThrottle.rejectionProbability == 0)

        #expect(maker.keys == ["down.example", "up.example"])
        #expect(maker.callsUnderTheLock == 0)
    }

    @Test func aSharedThrottleLearnsFromEveryKeyAndThrottlesThemAll() async throws {
        let clock = TestClock()
        let shared = try #require(Self.throttle(clock: clock, seed: 11))
        let registry = try CircuitBreakerRegistry<String>(
            name: "api", configuration: try Self.countingBreakers(), makeThrottle: { _ in shared }, clock: clock)
        let orders = registry.breaker(for: "/orders")
        let profile = registry.breaker(for: "/profile")
        #expect(orders !== profile)
        #expect(orders.throttle === shared && profile.throttle === shared)

        // One endpoint sees the server fail everything; the shared throttle learns it is down.
        let failing = await sendFailingCalls(200, through: orders)
        #expect(failing.ran > 0 && failing.ran < 50)
        #expect(shared.rejectionProbability > 0.9)
        // The other endpoint's calls are now mostly rejected locally, and its breaker counts none of them.
        let ran = Counter()
        var throttled = 0
        for _ in 0..<50 {
            do {
                _ = try await profile.execute { ran.increment() }
            } catch is AdaptiveThrottleRejection {
                throttled += 1
            }
        }
        #expect(throttled > 40)
        #expect(ran.value + throttled == 50)
        #expect(profile.snapshot().recentCalls == ran.value)
        #expect(shared.counts == (250, ran.value))
    }

    @Test func aKeyForWhichTheClosureReturnsNilHasNoThrottle() async throws {
        let clock = TestClock()
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts",
            makeThrottle: { key in key.hasSuffix(".internal") ? nil : Self.throttle(clock: clock) }, clock: clock)
        #expect(registry.breaker(for: "db.internal").throttle == nil)
        #expect(registry.breaker(for: "api.example").throttle != nil)
        let unthrottled = try CircuitBreakerRegistry<String>(name: "hosts", clock: clock)
        #expect(unthrottled.breaker(for: "api.example").throttle == nil)
    }

    @Test func aBreakerForgottenAtTheBoundTakesItsThrottleWithIt() async throws {
        let clock = TestClock()
        let maker = ThrottleMaker()
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts", maximumCount: 1,
            makeThrottle: { key in
                maker.record(key, lockHeld: false)
                return Self.throttle(clock: clock, floor: 10)
            }, clock: clock)
        let first = try #require(registry.breaker(for: "a").throttle)
        _ = try await registry.breaker(for: "a").execute { 1 }
        #expect(first.counts == (1, 1))
        _ = registry.breaker(for: "b")  // forgets "a", closed, and its throttle
        let again = try #require(registry.breaker(for: "a").throttle)
        #expect(again !== first)
        #expect(again.counts == (0, 0))
        #expect(maker.keys == ["a", "b", "a"])
    }

    @Test func aConfigurationDecodedFromAnOlderDocumentTakesItsThrottlesAtCreation() async throws {
        // A document written before throttles existed: the registry's settings are unchanged.
        let document = #"{"maximumCount": 2, "breaker": {"tripRule": {"kind": "consecutiveFailures", "count": 3}}}"#
        let settings = try JSONDecoder().decode(CircuitBreakerRegistryConfiguration.self, from: Data(document.utf8))
        #expect(settings.maximumCount == 2)
        let clock = TestClock()
        let registry = CircuitBreakerRegistry<String>(
            name: "hosts", configuration: settings, makeThrottle: { _ in Self.throttle(clock: clock, floor: 10) },
            clock: clock)
        let breaker = registry.breaker(for: "api.example")
        let throttle = try #require(breaker.throttle)
        _ = try await breaker.execute { 1 }
        #expect(throttle.counts == (1, 1))
        #expect(breaker.configuration.tripRule == .consecutiveFailures(3))
        // Encoding writes the same two settings, and nothing of the throttle.
        let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(settings)) as? [String: Any]
        #expect(encoded.map { Set($0.keys) } == ["maximumCount", "breaker"])
        #expect(
            CircuitBreakerRegistry<String>(name: "hosts", configuration: settings).breaker(for: "a").throttle == nil)
    }
}
