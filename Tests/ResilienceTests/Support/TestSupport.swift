import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A thread-safe counter tests share with operations under test.
final class Counter: Sendable {
    private let storage = Lock(0)

    /// The current count.
    var value: Int { self.storage.withLock { $0 } }

    /// Adds one and returns the new count.
    @discardableResult
    func increment() -> Int {
        self.storage.withLock { count in
            count += 1
            return count
        }
    }
}

/// A thread-safe log of values, for recording events in order.
final class Recorder<Element: Sendable>: Sendable {
    private let storage = Lock<[Element]>([])

    /// Everything recorded so far, in order.
    var values: [Element] { self.storage.withLock { $0 } }

    /// Appends `element`.
    func record(_ element: Element) {
        self.storage.withLock { $0.append(element) }
    }
}

/// A failure that classifiers treat as transient.
struct TransientError: Error, Equatable {
    var id = 0
}

/// A failure that says it is permanent.
struct PermanentError: RetryableError, Equatable {
    var isRetryable: Bool { false }
}

/// An HTTP-shaped failure with an optional retry-after hint.
struct StatusError: HTTPStatusReporting, RetryAfterProviding, Equatable {
    var status: Int
    var hint: Duration?

    var httpStatusCode: Int? { self.status }
    var retryAfter: Duration? { self.hint }
}

/// Yields until `condition` holds, for a test that waits on other tasks' progress that neither a
/// clock nor an event marks.
///
/// Once the test is cancelled (its time limit has passed) it records an issue and throws
/// `CancellationError`: Swift Testing waits for a timed-out test to return, so a loop that only
/// yields would keep the test, and with it the whole run, from ever ending.
func yieldUntil(
    _ what: String = "its condition held", sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    while !condition() {
        if Task.isCancelled {
            Issue.record("cancelled before \(what)", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        await Task.yield()
    }
}

/// Advances `clock` through `count` consecutive sleeps, waiting for each one to be requested first.
func advanceThroughSleeps(_ clock: TestClock, count: Int) async {
    for _ in 0..<count {
        await clock.waitForSleepers(count: 1)
        let pending = clock.sleepRequests.last ?? .zero
        clock.advance(by: pending)
    }
}

/// Runs `body` while moving `clock` to the deadline of each sleep `body` parks on it, as soon as it
/// parks (``TestClock/advanceToNextDeadline(within:)``), so that every wait `body` makes passes and
/// the driver never polls; then lets a stray sleeper go by advancing a second.
///
/// Only sleeps due at most `horizon` after now are moved to: a longer one (a time limit watching
/// the call, say) stays asleep while the call runs, rather than coming due under it. When the
/// test is cancelled (its time limit), `body`'s task is cancelled too.
func driveThroughEveryWait<T: Sendable>(
    _ clock: TestClock, within horizon: Duration = .seconds(30), _ body: @escaping @Sendable () async -> T
) async -> T {
    let task = Task { await body() }
    let driver = Task {
        while await clock.advanceToNextDeadline(within: horizon) != nil {}
    }
    let value = await withTaskCancellationHandler {
        await task.value
    } onCancel: {
        task.cancel()
    }
    driver.cancel()
    clock.advance(by: .seconds(1))
    return value
}

/// Runs `body` while advancing each of `clocks` by the full length of every sleep requested on it,
/// as soon as it is requested (at most `longest` at a time, so that a long time limit parked beside
/// the waits never comes due), so each wait passes exactly and `sleepRequests` reads as the schedule.
func advancingThroughEachWait<T: Sendable>(
    _ clocks: TestClock..., longest: Duration = .seconds(3_600), _ body: @escaping @Sendable () async -> T
) async -> T {
    // Counted before `body` starts, so that no request is missed however late a driver starts.
    let starts = clocks.map { $0.sleepRequests.count }
    let task = Task { await body() }
    let drivers = zip(clocks, starts).map { clock, start in
        Task.detached {
            var advanced = start
            while !Task.isCancelled {
                await clock.waitForSleepRequests(count: advanced + 1)
                let requests = clock.sleepRequests
                while advanced < requests.count {
                    clock.advance(by: Swift.max(.zero, Swift.min(requests[advanced], longest)))
                    advanced += 1
                }
            }
        }
    }
    let value = await withTaskCancellationHandler {
        await task.value
    } onCancel: {
        task.cancel()
    }
    for driver in drivers { driver.cancel() }
    return value
}

/// Runs `body` on `count` threads of its own, all released together, and returns when every one has finished.
func onSeparateThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for index in 0..<count {
        ready.enter()
        done.enter()
        let thread = Thread {
            ready.leave()
            start.wait()
            body(index)
            done.leave()
        }
        thread.start()
    }
    ready.wait()
    for _ in 0..<count {
        start.signal()
    }
    done.wait()
}

/// Runs `body` on `count` threads of its own, all released together, and suspends until every
/// one has finished, blocking no thread of the cooperative pool (a thread of its own waits for them).
func onSeparateThreadsWithoutBlocking(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread {
            onSeparateThreads(count, body)
            continuation.resume()
        }.start()
    }
}

/// Counts the runs of a key's `hash(into:)` and `==`, and those that found a lock the test
/// watches held: a registry's own, to show that no user code runs under it.
final class LockProbe: Sendable {
    private struct State {
        var isLockHeld: (@Sendable () -> Bool)?
        var runs = 0
        var runsUnderTheLock = 0
    }

    private let state = Lock(State())

    /// Watches the lock that `isLockHeld` reports on.
    func watch(_ isLockHeld: @escaping @Sendable () -> Bool) {
        self.state.withLock { $0.isLockHeld = isLockHeld }
    }

    /// Counts one run, and whether the watched lock was held during it.
    func check() {
        let isLockHeld = self.state.withLock { $0.isLockHeld }
        let held = isLockHeld?() ?? false
        self.state.withLock {
            $0.runs += 1
            if held { $0.runsUnderTheLock += 1 }
        }
    }

    var runs: Int { self.state.withLock { $0.runs } }
    var runsUnderTheLock: Int { self.state.withLock { $0.runsUnderTheLock } }
}

extension RetryOutcome {
    /// The error the call ended with, if it failed.
    var error: (any Error)? {
        if case .failure(let error) = self.result { return error }
        return nil
    }
}

extension Result where Failure == any Error {
    /// The result of an async throwing closure.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// Sends `calls` calls through `breaker`, each failing with a 503 if it runs; returns how many
/// ran and how many the throttle rejected with ``AdaptiveThrottleRejection``.
func sendFailingCalls(_ calls: Int, through breaker: CircuitBreaker) async -> (
    ran: Int, throttled: Int
) {
    let ran = Counter()
    var throttled = 0
    for _ in 0..<calls {
        do {
            try await breaker.execute {
                _ = ran.increment()
                throw HTTPResponseError(statusCode: 503)
            }
        } catch is AdaptiveThrottleRejection {
            throttled += 1
        } catch {}
    }
    return (ran.value, throttled)
}

extension TestClock {
    /// The sleep requested `index`th (from zero), or a recorded issue instead of a crash when
    /// the code under test never asked for it: `waitForSleepRequests(count:)` also returns when
    /// a test's time limit cancels it, and an index out of range would end the whole test run.
    func sleepRequest(_ index: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> Duration {
        let requests = self.sleepRequests
        return try #require(
            requests.indices.contains(index) ? requests[index] : nil,
            "sleep request \(index) of \(requests.count)", sourceLocation: sourceLocation)
    }
}
