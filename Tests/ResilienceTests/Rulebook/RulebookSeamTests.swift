import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The places where one part's promise used to break inside another part.
@Suite("The rules hold at the seams between parts")
struct RulebookSeamTests {
    /// A dependency that never answers: it sleeps on the test clock until cancelled.
    static func hang(on clock: TestClock) async throws -> Int {
        try await clock.sleep(for: .seconds(3_600))
        return 0
    }

    // MARK: - Time limits and the breaker

    @Test func aPolicyTimeoutCountsAsAFailureOfTheBreakerInsideIt() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "hung", tripRule: .consecutiveFailures(2), openDuration: .fixed(.seconds(30)), clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) {
                try await breaker.execute { try await Self.hang(on: clock) }
            }
        }
        for _ in 0..<2 {
            await clock.waitForSleepers(count: 2)  // the hung operation and the attempt's timer
            clock.advance(by: .seconds(1))
        }
        let outcome = await call.value
        #expect(outcome.attempts == 2)
        #expect(outcome.result.error is AttemptTimeoutError)
        #expect(breaker.state == .open, "two timed-out attempts are two failures")
    }

    @Test func aTimedOutHalfOpenProbeReopensTheBreaker() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "probe", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(5)), clock: clock)
        await #expect(throws: ServiceFailure.self) {
            try await breaker.execute { () throws -> Int in throw ServiceFailure() }
        }
        clock.advance(by: .seconds(5))
        #expect(breaker.state == .halfOpen)
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let probe = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) {
                try await breaker.execute { try await Self.hang(on: clock) }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        _ = await probe.value
        #expect(breaker.state == .open, "a probe the library timed out failed; the breaker must not stay half-open")
    }

    @Test func aCallerCancellationIsNotABreakerFailure() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "cancel", tripRule: .consecutiveFailures(1), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(10)) {
                try await breaker.execute { try await Self.hang(on: clock) }
            }
        }
        await clock.waitForSleepers(count: 2)
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .cancelled)
        #expect(breaker.state == .closed, "the caller gave up; the dependency did nothing wrong")
    }

    // MARK: - Idempotency

    @Test func aPOSTIsNotSentAgainAfterThePolicysOwnTimeout() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
        let counter = Counter()
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) {
                counter.increment()
                return try await Self.hang(on: clock)
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        let outcome = await call.value
        #expect(counter.value == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect((outcome.result.error as? AttemptTimeoutError)?.requestIdempotency == .http(method: "POST"))
    }

    @Test func aDeclaredCallPassesItsIdempotencyToPoliciesNestedInIt() async throws {
        let outer = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let counter = Counter()
        let outcome = await outer.outcome(idempotency: .notIdempotent) {
            try await inner.execute { () throws -> Int in
                counter.increment()
                throw URLError(.timedOut)
            }
        }
        #expect(counter.value == 1, "the inner policy must not repeat what the outer call declared unsafe")
        #expect(outcome.stopReason == .notIdempotent)
    }

    @Test func aRequestNeverSentMayBeSentAgainWhateverItsIdempotency() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let counter = Counter()
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () throws -> Int in
            counter.increment()
            throw URLError(.cannotConnectToHost)
        }
        #expect(counter.value == 3)
        #expect(outcome.stopReason == .exhausted)
    }

    @Test func theRequestsOwnReportWinsOverTheClassifiersMethod() async throws {
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "GET"), clock: TestClock())
        let counter = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            counter.increment()
            throw HTTPResponseError(statusCode: 502, requestIdempotency: .http(method: "POST"))
        }
        #expect(counter.value == 1)
        #expect(outcome.stopReason == .notIdempotent)
    }

    @Test func anIdempotencyKeyMakesAPOSTSafeToRepeat() async throws {
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let keyed = Idempotency.http(method: "POST", headers: ["Idempotency-Key": "order-42"])
        #expect(keyed.isIdempotent)
        #expect(!Idempotency.http(method: "POST", headers: ["Idempotency-Key": ""]).isIdempotent)
        let counter = Counter()
        _ = await policy.outcome { () throws -> Int in
            counter.increment()
            throw HTTPResponseError(statusCode: 503, requestIdempotency: keyed)
        }
        #expect(counter.value == 2)
    }

    // MARK: - Server hints

    @Test func aHintFromACallAdmittedBeforeATripStillHoldsTheBreakerOpen() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "late", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(1)), clock: clock)
        let gate = StartingGate()
        let arrived = Countdown()
        let slow = Task {
            try await breaker.execute { () throws -> Int in
                arrived.increment()
                await gate.wait()
                throw HTTPResponseError(statusCode: 429, headers: ["Retry-After": "60"])
            }
        }
        await arrived.wait(untilReaching: 1)
        await #expect(throws: ServiceFailure.self) {
            try await breaker.execute { () throws -> Int in throw ServiceFailure() }
        }
        #expect(breaker.state == .open)
        gate.open()
        _ = await slow.result
        clock.advance(by: .seconds(2))
        #expect(breaker.state == .open, "the server asked for 60 seconds; the breaker must not half-open after 2")
        #expect(breaker.snapshot().remainingOpenTime == .seconds(58))
        #expect(breaker.snapshot().consecutiveTrips == 1)
    }

    @Test func aPushbackOpeningDoesNotLengthenTheNextTrip() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(
            name: "grow", tripRule: .consecutiveFailures(1),
            openDuration: .growing(initial: .seconds(10), multiplier: 2, maximum: .seconds(1_000)), clock: clock)
        await #expect(throws: HTTPResponseError.self) {
            try await breaker.execute { () throws -> Int in
                throw HTTPResponseError(statusCode: 429, headers: ["Retry-After": "5"])
            }
        }
        #expect(breaker.snapshot().consecutiveTrips == 1, "the 429 also met the trip rule")
        clock.advance(by: .seconds(10))
        _ = try await breaker.execute { 1 }  // the probe closes it
        #expect(breaker.state == .closed)

        let pushbackOnly = try CircuitBreaker(
            name: "hint", tripRule: .consecutiveFailures(5),
            openDuration: .growing(initial: .seconds(10), multiplier: 2, maximum: .seconds(1_000)), clock: clock)
        await #expect(throws: HTTPResponseError.self) {
            try await pushbackOnly.execute { () throws -> Int in
                throw HTTPResponseError(statusCode: 429, headers: ["Retry-After": "5"])
            }
        }
        #expect(pushbackOnly.state == .open)
        #expect(pushbackOnly.snapshot().consecutiveTrips == 0)
        clock.advance(by: .seconds(5))
        for _ in 0..<5 {
            await #expect(throws: (any Error).self) {
                try await pushbackOnly.execute { () throws -> Int in throw ServiceFailure() }
            }
        }
        let snapshot = pushbackOnly.snapshot()
        #expect(snapshot.state == .open)
        #expect(snapshot.remainingOpenTime == .seconds(10), "the first real trip opens for the initial duration")
    }

    @Test func anNSErrorsRetryAfterEntryIsAHint() {
        let seconds = NSError(domain: "SDK", code: 1, userInfo: ["Retry-After": 12])
        #expect(ErrorHints.retryAfter(of: seconds) == .seconds(12))
        let header = NSError(domain: "SDK", code: 1, userInfo: ["Retry-After": "30"])
        #expect(ErrorHints.retryAfter(of: header) == .seconds(30))
        let garbage = NSError(domain: "SDK", code: 1, userInfo: ["Retry-After": "soon"])
        #expect(ErrorHints.retryAfter(of: garbage) == nil)
    }

    // MARK: - Deadlines

    @Test func theDeadlineCutsARunningTimeLimitedAttemptShort() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, deadline: .seconds(3), clock: clock)
        let call = Task { await policy.outcome(attemptTimeout: .seconds(10)) { try await Self.hang(on: clock) } }
        await clock.waitForSleepers(count: 2)
        #expect(clock.sleepRequests.contains(.seconds(3)), "the attempt's limit is the time left, not the timeout")
        clock.advance(by: .seconds(3))
        let outcome = await call.value
        #expect(outcome.elapsed == .seconds(3))
        #expect(outcome.stopReason == .deadlineExceeded)
    }
}

extension Result {
    /// The failure, if any.
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
