import ResilienceTesting
import Testing

@testable import Resilience

/// A caller that gives up stays the cause of the call's end, even when the cancelled
/// operation takes a while to wind down (closing a file, flushing a log) and the
/// timeout's deadline passes meanwhile: the call ends with the operation's own error,
/// never a ``TimeoutError``, so no breaker counts it and no fallback answers for it.
///
/// Each test waits for the shared watcher through a marker registered just after the
/// timeout's deadline: the watcher handles due deadlines in order, so once the marker has
/// run, the timeout's expiry has run too. The tests check that it ran (the watcher holds
/// no registration any more while the operation still winds down), so none passes because
/// the deadline was never handled.
@Suite("Timeout and the caller's cancellation")
struct TimeoutCallerCancellationTests {
    @Test func aBreakerAroundTheTimeoutIgnoresACancellationThatWindsDownPastTheDeadline() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let operation = WindingDownOperation(clock: clock)
        let call = Task {
            try await breaker.execute { try await timeout.execute { try await operation.run() } }
        }
        await clock.waitForSleepers(count: 2)  // the operation and the watcher
        call.cancel()  // the caller gives up at t = 0
        try await operation.passTheDeadlineWhileItWindsDown(timeout)
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().state == .closed)  // the caller's cancellation is no failure
        #expect(try !#require(operation.signal).hasFired)
    }

    @Test func aFallbackAroundTheTimeoutDoesNotAnswerACallerThatCancelled() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(2), clock: clock)
        let fallback = Fallback<Int>.value(-1)
        let operation = WindingDownOperation(clock: clock)
        let call = Task {
            try await fallback.execute { try await timeout.execute { try await operation.run() } }
        }
        await clock.waitForSleepers(count: 2)
        call.cancel()
        try await operation.passTheDeadlineWhileItWindsDown(timeout)
        await #expect(throws: CancellationError.self) { try await call.value }  // not -1
    }

    @Test func aBreakerInsideATimeoutStageIgnoresACancellationThatWindsDownPastTheDeadline() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let pipeline = ResiliencePipeline {
            timeout
            breaker
        }
        let operation = WindingDownOperation(clock: clock)
        let call = Task { try await pipeline.execute { try await operation.run() } }
        await clock.waitForSleepers(count: 2)
        call.cancel()
        try await operation.passTheDeadlineWhileItWindsDown(timeout)
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().state == .closed)  // the signal it reads did not fire
    }

    @Test func aCallerCancelledBeforeTheOperationStartsIsNotTimedOutWhileItWindsDown() async throws {
        // The cancellation handler runs at once and the attempt starts cancelled; the
        // deadline, registered as it starts, passes while the operation cleans up.
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let operation = WindingDownOperation(clock: clock)
        let entered = Gate()
        let call = Task {
            try await breaker.execute {
                await entered.wait()  // the caller is cancelled here, before the timeout starts
                return try await timeout.execute { try await operation.run() }
            }
        }
        await entered.waitForWaiters(count: 1)
        call.cancel()
        entered.open()
        await operation.cleanup.waitForWaiters(count: 1)
        await clock.waitForSleepers(count: 1)  // the watcher, until the deadline
        try await operation.passTheDeadlineWhileItWindsDown(timeout)
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().state == .closed)
        #expect(try !#require(operation.signal).hasFired)
    }

    @Test func aDeadlineThatPassedBeforeTheCallerCancelledStaysATimeOut() async throws {
        // The other side of the race: the limit claimed the call first, and a caller that
        // gives up while the operation winds down does not take the time-out back.
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let operation = WindingDownOperation(clock: clock)
        let call = Task {
            try await breaker.execute { try await timeout.execute { try await operation.run() } }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))  // the limit cancels the operation, which starts its cleanup
        await operation.cleanup.waitForWaiters(count: 1)
        call.cancel()
        operation.cleanup.open()
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(breaker.snapshot().state == .open)
        #expect(try #require(operation.signal).hasFired)
    }

    // MARK: - The deadline passed, the watcher has not woken yet, and the caller cancels

    // On a test clock, `advance` only resumes the watcher's sleep: the caller's cancellation
    // that follows at once comes before the watcher looks, so it is the cancellation handler
    // that finds the deadline passed. On the system's clocks the same happens when the caller
    // cancels within the watcher's wake-up delay.

    @Test func aCancellationAfterTheDeadlinePassedIsATimeOutThoughTheWatcherHasNotWoken() async throws {
        for _ in 0..<5 {
            let clock = TestClock()
            let timeout = try Timeout(.seconds(1), clock: clock)
            let call = Task {
                try await timeout.execute { () async throws -> Int in
                    try await clock.sleep(for: .seconds(10))
                    return 1
                }
            }
            await clock.waitForSleepers(count: 2)  // the operation and the watcher
            clock.advance(by: .seconds(2))  // the deadline has passed
            call.cancel()  // and only now does the caller cancel
            let error = await #expect(throws: TimeoutError.self) { try await call.value }
            #expect(error?.operationError == nil, "the limit's own cancellation is not kept")
        }
    }

    @Test func aBreakerAroundTheTimeoutCountsACancellationAfterTheDeadlinePassed() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            try await breaker.execute { try await timeout.execute { try await clock.sleep(for: .seconds(10)) } }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))
        call.cancel()
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(breaker.snapshot().state == .open)
    }

    @Test func aBreakerInsideATimeoutStageCountsACancellationAfterTheDeadlinePassed() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let pipeline = ResiliencePipeline {
            timeout
            breaker
        }
        let call = Task { try await pipeline.execute { try await clock.sleep(for: .seconds(10)) } }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))
        call.cancel()
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(breaker.snapshot().state == .open)  // the signal it reads was claimed for the limit
    }

    @Test func aFallbackAnswersACancellationAfterTheDeadlinePassed() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let fallback = Fallback<Int>.value(-1)
        let call = Task {
            try await fallback.execute {
                try await timeout.execute { () async throws -> Int in
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

    @Test func standardHTTPsAttemptTimeoutStaysATimeOutWhenTheCallerCancelsAfterIt() async throws {
        let clock = TestClock()
        let pipeline = try ResiliencePipeline.standardHTTP(
            name: "api", totalTimeout: .seconds(30), attemptTimeout: .seconds(10), clock: clock)
        let call = Task {
            try await pipeline.execute { () async throws -> Int in
                try await clock.sleep(for: .seconds(100))
                return 1
            }
        }
        await clock.waitForSleepers(count: 3)  // the operation and the two timeouts' watchers
        clock.advance(by: .seconds(11))  // the attempt's limit has passed, the total one not
        call.cancel()
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(error?.timeoutName == "api.attempt-timeout")
    }

    @Test func aCancellationBeforeTheDeadlineStaysTheCallersThoughTheClockThenPassesIt() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "outer", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(1), clock: clock)
        let call = Task {
            try await breaker.execute { try await timeout.execute { try await clock.sleep(for: .seconds(10)) } }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(500))
        call.cancel()
        clock.advance(by: .seconds(2))
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().state == .closed)
    }
}

/// An operation that sleeps for an hour and, once cancelled, waits at ``cleanup`` before
/// it rethrows; it records the time-limit signal it runs under.
private final class WindingDownOperation: Sendable {
    let clock: TestClock
    /// Where the cancelled operation waits, as it would for its cleanup.
    let cleanup = Gate()
    private let seen = Recorder<TimeLimitSignal?>()

    init(clock: TestClock) {
        self.clock = clock
    }

    /// The signal of the innermost time limit the operation ran under.
    var signal: TimeLimitSignal? { self.seen.values.first ?? nil }

    func run() async throws -> Int {
        self.seen.record(CallScope.current.timeLimits)
        do {
            try await self.clock.sleep(for: .seconds(3_600))
        } catch {
            await self.cleanup.wait()
            throw error
        }
        return 0
    }

    /// With the operation cancelled and waiting for its cleanup, moves the clock past the
    /// deadline of `timeout` (measured from the clock's start), returns once the watcher has
    /// handled it, and lets the operation finish.
    func passTheDeadlineWhileItWindsDown(_ timeout: Timeout) async throws {
        await self.cleanup.waitForWaiters(count: 1)
        let watcher = timeout.watcher
        let handled = Gate()
        _ = watcher.register(timeout.duration + .nanoseconds(1), OpenGate(gate: handled))
        // The call's registration is still in place: the operation has not returned.
        try #require(watcher.registrations == 2)
        self.clock.advance(by: timeout.duration + .seconds(1))
        await handled.wait()
        // The watcher ran the call's expiry (it removes a registration it fires), while
        // the operation still waited for its cleanup.
        try #require(watcher.registrations == 0)
        try #require(self.cleanup.waiting == 1)
        self.cleanup.open()
    }
}

/// A deadline expiry that opens a gate.
private struct OpenGate: DeadlineExpiry {
    let gate: Gate

    func deadlineReached() {
        self.gate.open()
    }
}
