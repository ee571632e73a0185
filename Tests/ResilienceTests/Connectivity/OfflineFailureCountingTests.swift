import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A request that never left an offline device says nothing of the dependency: no breaker counts
/// it, no throttle records it, and retrying it costs no budget token.
@Suite(.timeLimit(.minutes(5)))
struct OfflineFailureCountingTests {
    private func makeBreaker(
        clock: TestClock, classifier: any CircuitBreakerFailureClassifier = DefaultCircuitBreakerFailureClassifier()
    ) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "api", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)), classifier: classifier,
            clock: clock)
    }

    @Test func anOfflineAttemptDoesNotOpenABreakerInsideAConnectivityWaitSoTheRetryAfterTheOutageGoesThrough()
        async throws
    {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let breaker = try self.makeBreaker(clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, maximumRetryAfter: .seconds(1), clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let reached = Counter()
        let call = Task {
            await policy.outcome(waitingFor: wait) { () async throws -> String in
                try await breaker.execute {
                    guard network.connectivity.isOnline else { throw URLError(.notConnectedToInternet) }
                    reached.increment()
                    return "ok"
                }
            }
        }
        await network.waitForObservers(count: 1)  // the first attempt failed offline; the call waits
        #expect(breaker.state == .closed, "the dependency was never reached")
        network.set(.online)
        let outcome = await call.value
        #expect(reached.value == 1)
        #expect(throws: Never.self) { try outcome.get() }
        #expect(outcome.attempts == 2)
    }

    @Test(arguments: [
        URLError(.notConnectedToInternet) as any Error & Sendable,
        URLError(.dataNotAllowed),
        NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkUnavailable.rawValue),
        RESTServiceError(underlying: URLError(.notConnectedToInternet)),
    ])
    func noClassifierCanCountARequestThatNeverLeftAnOfflineDevice(error: any Error & Sendable) async throws {
        let clock = TestClock()
        let breaker = try self.makeBreaker(clock: clock, classifier: .closure { _ in true })
        await #expect(throws: (any Error).self) { try await breaker.execute { throw error } }
        #expect(breaker.state == .closed, "\(error)")
        #expect(Rulebook.countsAsFailure(FailureAnalysis(error)) == false, "\(error)")
    }

    @Test(arguments: [
        URLError(.cannotConnectToHost) as any Error & Sendable,
        URLError(.networkConnectionLost),
        URLError(.timedOut),
    ])
    func aServerThatCannotBeReachedWhileOnlineStillCounts(error: any Error & Sendable) async throws {
        let breaker = try self.makeBreaker(clock: TestClock())
        await #expect(throws: (any Error).self) { try await breaker.execute { throw error } }
        #expect(breaker.state == .open, "\(error): the dependency is down, not the device")
    }

    @Test func aHalfOpenProbeThatFailsOfflineFreesItsSlotForTheNextProbe() async throws {
        let clock = TestClock()
        let breaker = try self.makeBreaker(clock: clock)
        await #expect(throws: HTTPResponseError.self) {
            try await breaker.execute { throw HTTPResponseError(statusCode: 503) }
        }
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(30))
        await #expect(throws: URLError.self) { try await breaker.execute { throw URLError(.notConnectedToInternet) } }
        #expect(breaker.state == .halfOpen, "an offline probe neither opens nor closes the breaker")
        // The only probe slot is free again: the next call is let through as the probe, and closes it.
        let value = try await breaker.execute { "ok" }
        #expect(value == "ok")
        #expect(breaker.state == .closed)
    }

    @Test func anAdaptiveThrottleDoesNotRecordARequestThatNeverLeftAnOfflineDevice() throws {
        let throttle = try AdaptiveThrottle(clock: TestClock())
        throttle.record(URLError(.notConnectedToInternet))
        throttle.record(NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkUnavailable.rawValue))
        #expect(throttle.counts.requests == 0)
        throttle.record(URLError(.cannotConnectToHost))
        #expect(throttle.counts.requests == 1, "a refused connection did reach for the server")
        #expect(throttle.counts.accepts == 0)
    }

    @Test func retryingARequestThatNeverLeftAnOfflineDeviceCostsNoBudgetToken() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, budget: budget, clock: clock)
        let offline = await policy.outcome { () throws -> String in throw URLError(.notConnectedToInternet) }
        #expect(offline.stopReason == .exhausted)
        #expect(budget.tokens == 10)
        let refused = await policy.outcome { () throws -> String in throw URLError(.cannotConnectToHost) }
        #expect(refused.stopReason == .exhausted)
        #expect(budget.tokens == 7, "each refused connection takes a token")
    }
}
