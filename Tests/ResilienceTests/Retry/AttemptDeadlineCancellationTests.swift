import Resilience
import ResilienceTesting
import Testing

/// A policy's per-attempt limit, and the deadline that bounds it, against the caller's
/// cancellation: a limit that passed before the caller cancelled stays a time-out, even
/// when the caller cancels before the limit's timer has woken (on a test clock, `advance`
/// only resumes the timer's sleep, so the cancellation that follows at once always comes
/// first); a caller that cancels before the limit passed stays the cause of the call's end.
@Suite("Retry policy attempt limit and deadline against the caller's cancellation", .timeLimit(.minutes(5)))
struct AttemptDeadlineCancellationTests {
    static func policy(
        _ clock: TestClock, attempts: Int = 1, deadline: Duration? = nil
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none, deadline: deadline,
            clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
    }

    /// Starts a call through `policy` whose attempts sleep for 10 s, moves the clock by
    /// `advance` once the attempt and its timer sleep, then cancels the caller.
    static func cancelledCall(
        _ policy: RetryPolicy, _ clock: TestClock, attemptTimeout: Duration = .seconds(1), advance: Duration
    ) async -> RetryOutcome<Int> {
        let call = Task {
            await policy.outcome(attemptTimeout: attemptTimeout) { () async throws -> Int in
                try await clock.sleep(for: .seconds(10))
                return 1
            }
        }
        await clock.waitForSleepers(count: 2)  // the attempt and the limit's watcher
        clock.advance(by: advance)
        call.cancel()
        return await call.value
    }

    @Test func aCancellationAfterTheAttemptLimitPassedIsATimeOut() async throws {
        for _ in 0..<5 {
            let clock = TestClock()
            let outcome = await Self.cancelledCall(try Self.policy(clock), clock, advance: .seconds(2))
            #expect(outcome.result.failureValue is AttemptTimeoutError, "\(String(describing: outcome.result))")
            #expect(outcome.stopReason == .exhausted, "its only attempt timed out")
        }
    }

    /// With attempts left, the time-out is still what ends the call; the caller's cancellation
    /// is why it is not retried.
    @Test func withAttemptsLeftTheTimeOutEndsTheCallAndTheCancellationStopsTheRetry() async throws {
        let clock = TestClock()
        let outcome = await Self.cancelledCall(try Self.policy(clock, attempts: 3), clock, advance: .seconds(2))
        #expect(outcome.result.failureValue is AttemptTimeoutError)
        #expect(outcome.stopReason == .cancelled)
        #expect(outcome.attempts == 1)
    }

    /// The attempt's limit is the time left before the policy's deadline: once that passed
    /// before the caller cancelled, the call stops at the deadline.
    @Test func aCancellationAfterTheDeadlinePassedStopsAtTheDeadline() async throws {
        let clock = TestClock()
        let policy = try Self.policy(clock, attempts: 3, deadline: .seconds(1))
        let outcome = await Self.cancelledCall(policy, clock, attemptTimeout: .seconds(5), advance: .seconds(2))
        let error = try #require(outcome.result.failureValue as? AttemptTimeoutError)
        #expect(error.timeout == .seconds(1))
        #expect(outcome.stopReason == .deadlineExceeded)
    }

    /// A `Timeout`'s error the operation wraps before it reaches the policy (in an app's enum,
    /// under an `NSError`, bridged) is still the library's time-out: a caller that cancels once
    /// its deadline passed does not turn it into the caller's cancellation. With no attempt
    /// left, the call stops as it does for the time-out as thrown.
    @Test(arguments: LibraryErrorShape.allCases)
    func aWrappedTimeOutWhoseDeadlinePassedBeforeTheCancellationStaysATimeOut(_ shape: LibraryErrorShape)
        async throws
    {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let policy = try Self.policy(clock)
        let call = Task {
            await policy.outcome { () async throws -> Int in
                do {
                    return try await timeout.execute { () async throws -> Int in
                        try await clock.sleep(for: .seconds(10))
                        return 1
                    }
                } catch {
                    throw shape.wrap(error)
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the operation and the timeout's watcher
        clock.advance(by: .seconds(2))
        call.cancel()
        let outcome = await call.value
        #expect(FailureAnalysis(try #require(outcome.result.failureValue)).interruption == .timeLimit)
        #expect(outcome.stopReason == .exhausted, "\(shape): its only attempt timed out")
    }

    /// The same wrapped time-out with attempts left: the time-out ends the call, and the caller's
    /// cancellation is why it is not retried; a call that may not run twice stops for that.
    @Test(arguments: LibraryErrorShape.wrapped)
    func aWrappedTimeOutOfACallThatMayNotRunTwiceStopsAsNotIdempotent(_ shape: LibraryErrorShape) async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let policy = try Self.policy(clock, attempts: 3)
        let call = Task {
            await policy.outcome(idempotency: .notIdempotent) { () async throws -> Int in
                do {
                    return try await timeout.execute { () async throws -> Int in
                        try await clock.sleep(for: .seconds(10))
                        return 1
                    }
                } catch {
                    throw shape.wrap(error)
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .notIdempotent, "\(shape)")
        #expect(outcome.attempts == 1)
    }

    // MARK: - The caller cancels first

    /// The caller's cancellation, wrapped on its way out, stays the caller's: only the library's
    /// own time-out, found in the chain, is read as one.
    @Test(arguments: LibraryErrorShape.wrapped)
    func aWrappedCancellationBeforeTheTimeoutsDeadlineStaysTheCallers(_ shape: LibraryErrorShape) async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let policy = try Self.policy(clock)
        let call = Task {
            await policy.outcome { () async throws -> Int in
                do {
                    return try await timeout.execute { () async throws -> Int in
                        try await clock.sleep(for: .seconds(10))
                        return 1
                    }
                } catch {
                    throw shape.wrap(error)
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(500))
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .cancelled, "\(shape)")
    }

    @Test func aCancellationBeforeTheAttemptLimitStaysTheCallers() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let policy = try Self.policy(clock, attempts: 3)
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) { () async throws -> Int in
                try await breaker.execute {
                    try await clock.sleep(for: .seconds(10))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(500))
        call.cancel()
        let outcome = await call.value
        #expect(outcome.result.failureValue is CancellationError)
        #expect(outcome.stopReason == .cancelled)
        #expect(breaker.snapshot().state == .closed)
    }

    /// A caller that cancels before the limit gets the attempt's own error, however long the
    /// cancelled attempt takes to return: the limit's deadline, still watched while the attempt
    /// cleans up, must not end the call in its place.
    @Test func aCancellationBeforeTheLimitEndsWithTheAttemptsOwnErrorWhateverStopsFirst() async throws {
        struct OwnError: Error {}
        for round in 0..<20 {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
                generator: SeededRandomNumberGenerator(seed: 1))
            let cleanup = AsyncStream<Void>.makeStream()
            let cleaning = AsyncStream<Void>.makeStream()
            defer { cleanup.continuation.finish() }  // the test's time limit ends the cleanup too
            let call = Task {
                await policy.outcome(attemptTimeout: .seconds(1)) { () async throws -> Int in
                    do {
                        try await clock.sleep(for: .seconds(10))
                    } catch {
                        cleaning.continuation.yield()
                        // The cleanup, until the test ends it: on a task the caller's cancellation
                        // does not reach, since a stream iterated by this cancelled task ends at once.
                        await Task { for await _ in cleanup.stream {} }.value
                        throw OwnError()
                    }
                    return 1
                }
            }
            await clock.waitForSleepers(count: 2)
            call.cancel()  // before the limit
            for await _ in cleaning.stream { break }
            cleanup.continuation.finish()
            let outcome = await call.value
            #expect(outcome.result.failureValue is OwnError, "round \(round): \(outcome.result)")
            #expect(outcome.stopReason == .cancelled, "round \(round)")
        }
    }

    /// A limit that passes while the cancelled attempt winds down claims nothing.
    @Test func aLimitPassingWhileTheCancelledAttemptWindsDownClaimsNothing() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let policy = try Self.policy(clock)
        let cleanup = AsyncStream<Void>.makeStream()
        let cleaning = AsyncStream<Void>.makeStream()
        defer { cleanup.continuation.finish() }  // the test's time limit ends the cleanup too
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) { () async throws -> Int in
                try await breaker.execute {
                    do {
                        try await clock.sleep(for: .seconds(10))
                    } catch {
                        cleaning.continuation.yield()
                        // The cleanup, until the test ends it: on a task the caller's cancellation
                        // does not reach, since a stream iterated by this cancelled task ends at once.
                        await Task { for await _ in cleanup.stream {} }.value
                        throw error
                    }
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        call.cancel()  // before the limit
        for await _ in cleaning.stream { break }
        clock.advance(by: .seconds(2))  // the limit passes while the attempt cleans up
        cleanup.continuation.finish()
        let outcome = await call.value
        #expect(outcome.result.failureValue is CancellationError)
        #expect(outcome.stopReason == .cancelled)
        #expect(breaker.snapshot().state == .closed)
    }
}

/// A test clock whose sleepers wake `lag` after their deadline, as a system clock's timer
/// wakes a little late: moving it past a deadline leaves the sleeper waiting, so a caller
/// that cancels then finds the deadline passed and the limit's timer or watcher not woken.
struct LateWakingClock: Clock {
    let clock: TestClock
    var lag: Duration = .seconds(3_600)

    var now: TestClock.Instant { self.clock.now }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: TestClock.Instant, tolerance: Duration? = nil) async throws {
        try await self.clock.sleep(until: deadline.advanced(by: self.lag), tolerance: tolerance)
    }
}

/// The same races on a clock whose timers wake late: the limit's timer, and a timeout's
/// watcher, still sleep when the caller cancels after the deadline.
@Suite("Time limits whose timers wake late against the caller's cancellation", .timeLimit(.minutes(5)))
struct LateWakingDeadlineCancellationTests {
    @Test func aCancellationAfterTheAttemptLimitPassedIsATimeOutBeforeItsTimerWakes() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 1, clock: LateWakingClock(clock: clock), generator: SeededRandomNumberGenerator(seed: 1))
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) { () async throws -> Int in
                try await breaker.execute {
                    try await clock.sleep(for: .seconds(10))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the attempt and the limit's watcher
        clock.advance(by: .seconds(2))  // the limit passed; its timer sleeps on
        call.cancel()
        let outcome = await call.value
        #expect(outcome.result.failureValue is AttemptTimeoutError, "\(String(describing: outcome.result))")
        #expect(outcome.stopReason == .exhausted)
        #expect(breaker.snapshot().state == .open)
    }

    @Test func aFallbackAnswersACancellationAfterTheAttemptLimitPassedBeforeItsTimerWakes() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, clock: LateWakingClock(clock: clock), generator: SeededRandomNumberGenerator(seed: 1))
        let fallback = Fallback<Int>.value(-1)
        let call = Task {
            try await fallback.execute {
                try await policy.execute(attemptTimeout: .seconds(1)) { () async throws -> Int in
                    try await clock.sleep(for: .seconds(10))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))
        call.cancel()
        #expect(try await call.value == -1)
    }

    @Test func aCancellationBeforeTheAttemptLimitStaysTheCallersOnALateWakingClock() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 1, clock: LateWakingClock(clock: clock), generator: SeededRandomNumberGenerator(seed: 1))
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(1)) { () async throws -> Int in
                try await clock.sleep(for: .seconds(10))
                return 1
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(500))
        call.cancel()
        let outcome = await call.value
        #expect(outcome.result.failureValue is CancellationError)
        #expect(outcome.stopReason == .cancelled)
    }

    @Test func aCancellationAfterTheTimeoutPassedIsATimeOutBeforeItsWatcherWakes() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(1), clock: LateWakingClock(clock: clock))
        let call = Task {
            try await breaker.execute { try await timeout.execute { try await clock.sleep(for: .seconds(10)) } }
        }
        await clock.waitForSleepers(count: 2)  // the operation and the watcher
        clock.advance(by: .seconds(2))  // the deadline passed; the watcher sleeps on
        call.cancel()
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(breaker.snapshot().state == .open)
    }
}
