import Foundation
import Resilience
import ResilienceTesting
import Testing

/// What a breaker's observer is told, against what the breaker did.
@Suite(.timeLimit(.minutes(5)))
struct CircuitBreakerObserverEventTests {
    /// A gate an operation waits at until the test opens it.
    private final class Gate: Sendable {
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        let entered = Counter()
        init() { (self.stream, self.continuation) = AsyncStream<Void>.makeStream() }
        func pass() async {
            self.entered.increment()
            for await _ in self.stream { return }
        }
        func open() { self.continuation.yield() }
    }

    /// A call the breaker's own throttle refuses is a rejected call: the observer hears of each
    /// one, with the refusal the caller receives, as a `RetryPolicy`'s observer hears of its
    /// throttle's.
    @Test(arguments: [UInt64(1), 2, 3])
    func aBreakersOwnThrottleRefusalIsObserved(seed: UInt64) async throws {
        let clock = TestClock()
        let log = BreakerObserverLog()
        let throttle = try AdaptiveThrottle(
            multiplier: 1, clock: clock, generator: SeededRandomNumberGenerator(seed: seed))
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .consecutiveFailures(1_000), observer: log, throttle: throttle, clock: clock)
        let (ran, throttled) = await sendFailingCalls(40, through: breaker)
        #expect(ran + throttled == 40 && throttled > 0, "seed \(seed): \(throttled) refused")
        let heard = log.rejections.withLock { $0 }
        #expect(
            heard.count == throttled,
            "seed \(seed): the breaker refused \(throttled) calls, its observer heard of \(heard.count)")
        #expect(
            heard.allSatisfy { $0.throttleRejection != nil && $0.state == .closed && $0.retryAfter == nil },
            "seed \(seed): \(heard.map { "\($0.state) \(String(describing: $0.throttleRejection))" })")
    }

    /// The same through a pipeline, whose breaker stage asks the throttle itself.
    @Test(arguments: [UInt64(1), 2, 3])
    func aBreakersOwnThrottleRefusalInAPipelineIsObserved(seed: UInt64) async throws {
        let clock = TestClock()
        let log = BreakerObserverLog()
        let throttle = try AdaptiveThrottle(
            multiplier: 1, clock: clock, generator: SeededRandomNumberGenerator(seed: seed))
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .consecutiveFailures(1_000), observer: log, throttle: throttle, clock: clock)
        let pipeline = ResiliencePipeline { breaker }
        var throttled = 0
        for _ in 0..<40 {
            do {
                _ = try await pipeline.execute { () async throws -> Int in throw StatusError(status: 503) }
            } catch is AdaptiveThrottleRejection {
                throttled += 1
            } catch {}
        }
        #expect(throttled > 0, "seed \(seed)")
        let heard = log.rejections.withLock { $0 }
        #expect(
            heard.count == throttled && heard.allSatisfy { $0.throttleRejection != nil },
            "seed \(seed): the pipeline's breaker refused \(throttled) calls, its observer heard of \(heard.count)")
    }

    /// A breaker open for `openDuration` after a 503 trips it, and a call admitted before the
    /// trip whose 429 with a `hint` arrives after it.
    static func lateHint(
        _ hint: Duration, afterATripOpenFor openDuration: Duration
    ) async throws -> (CircuitBreaker, BreakerObserverLog, TestClock) {
        let clock = TestClock()
        let log = BreakerObserverLog()
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .consecutiveFailures(1), openDuration: .fixed(openDuration), observer: log,
            clock: clock)
        let gate = Gate()
        let late = Task {
            try await breaker.execute { () async throws -> Int in
                await gate.pass()
                throw StatusError(status: 429, hint: hint)
            }
        }
        try await yieldUntil("the late call runs") { gate.entered.value == 1 }
        _ = try? await breaker.execute { () async throws -> Int in throw StatusError(status: 503) }
        gate.open()
        _ = try? await late.value
        return (breaker, log, clock)
    }

    /// A 429 that arrives late, from a call admitted before the breaker tripped, keeps the open
    /// breaker open for its hint: the observer hears of it, an open-to-open change for the
    /// pushback in a later generation, with the new open time.
    @Test func aLatePushbackThatKeepsTheBreakerOpenLongerIsReported() async throws {
        let (breaker, log, clock) = try await Self.lateHint(.seconds(60), afterATripOpenFor: .seconds(5))
        let remaining = breaker.snapshot().remainingOpenTime
        #expect(remaining == .seconds(60))
        let changes = log.changes.withLock { $0 }
        let told = changes.last.flatMap { $0.to == .open ? $0.openDuration : nil }
        #expect(
            told == remaining,
            "the observer's last word: open for \(String(describing: told)); the breaker: open for \(String(describing: remaining)) (\(changes.count) events)"
        )
        #expect(changes.map(\.to) == [.open, .open])
        #expect(changes.last.map { $0.from == .open && $0.reason == .pushback } == true)
        let byGeneration = changes.sorted { $0.generation < $1.generation }
        #expect(byGeneration.last?.openDuration == .seconds(60), "ordered by generation, the extension is last")
        // The breaker lets a probe through only when the hint has run out.
        clock.advance(by: .seconds(59))
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(1))
        #expect(breaker.state == .halfOpen)
    }

    /// A late hint shorter than the open time left changes nothing, and tells nothing.
    @Test func aLatePushbackWithinTheOpenTimeIsNotReported() async throws {
        let (breaker, log, _) = try await Self.lateHint(.seconds(10), afterATripOpenFor: .seconds(30))
        #expect(breaker.snapshot().remainingOpenTime == .seconds(30))
        #expect(log.changes.withLock { $0 }.map(\.to) == [.open])
    }

    /// Under a failure-rate rule the success that brings the window up to `minimumCalls` trips
    /// the breaker when the rate already meets the threshold: a success while closed that the
    /// observer hears of, as `CircuitBreakerObserver` says.
    @Test func aSuccessThatReachesTheMinimumCallsTripsAndIsReported() async throws {
        let log = BreakerObserverLog()
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .count(10)), observer: log,
            clock: TestClock())
        for _ in 0..<3 {
            _ = try? await breaker.execute { () async throws -> Int in throw StatusError(status: 503) }
        }
        #expect(log.changes.withLock { $0 }.isEmpty, "three failures, under minimumCalls")
        let value = try await breaker.execute { 1 }  // a success, the breaker closed as it starts
        #expect(value == 1)
        let changes = log.changes.withLock { $0 }
        #expect(changes.map { "\($0.from)->\($0.to) (\($0.reason))" } == ["closed->open (tripped)"])
    }

    /// A half-open breaker with every probe slot taken gives its error the time until a lease
    /// runs out, and its rejection event the same figure, as documented.
    @Test func aHalfOpenRejectionEventCarriesTheErrorsFigure() async throws {
        let clock = TestClock()
        let log = BreakerObserverLog()
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(5)), maximumProbes: 1,
            probeLease: .seconds(60), observer: log, clock: clock)
        _ = try? await breaker.execute { () async throws -> Int in throw StatusError(status: 503) }
        clock.advance(by: .seconds(5))
        let gate = Gate()
        let probe = Task { try await breaker.execute { await gate.pass() } }
        try await yieldUntil("the probe runs") { gate.entered.value == 1 }
        var thrown: CircuitBreakerOpenError?
        do {
            try await breaker.execute {}
        } catch let error as CircuitBreakerOpenError {
            thrown = error
        }
        gate.open()
        _ = try? await probe.value
        let rejection = try #require(log.rejections.withLock { $0 }.last)
        #expect(thrown?.state == .halfOpen && rejection.state == .halfOpen)
        #expect(rejection.retryAfter == .seconds(60) && rejection.retryAfter == thrown?.retryAfter)
        #expect(rejection.throttleRejection == nil)
    }
}
