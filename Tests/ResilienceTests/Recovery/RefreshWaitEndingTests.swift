import Foundation
import Resilience
import ResilienceTesting
import Testing

/// How a call that waits on a shared refresh, between refresh retries, or for the network ends
/// when something other than the answer it waits for ends the wait: a library time limit around
/// the call, or a deadline the clock jumped past before the answer came.
///
/// Once a refresh has failed for now, the call's ending error is that refresh's error, whatever
/// ends the wait. An answer that comes after the deadline passed finds the wait over, as its
/// timer would have found it: the call stops at the deadline, schedules no retry and retries no
/// refresh, and the observer and the statistics hear of none.
@Suite("A wait for a refresh or the network ended by a time limit or a passed deadline", .timeLimit(.minutes(5)))
struct RefreshWaitEndingTests {
    static let operation = RefreshedTokenAPI.operation

    static func policy(
        _ clock: some Clock<Duration>, backoff: Duration = .seconds(1), deadline: Duration? = nil,
        observer: (any RetryObserver)? = nil
    ) throws -> RetryPolicy {
        try RetryPolicy(
            name: "p", maximumAttempts: 3, backoff: .constant(backoff), jitter: .none, deadline: deadline,
            observer: observer, clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
    }

    /// A library time limit of ten seconds around a recovering call.
    enum Limit: String, CaseIterable, Sendable {
        /// A `Timeout` strategy.
        case timeout
        /// An enclosing policy's `attemptTimeout`.
        case attemptTimeout
    }

    /// Runs a recovering call under `limit`; returns the error it ended with.
    static func timedCall(
        _ policy: RetryPolicy, _ recovery: CredentialRecovery<String>, clock: TestClock, limit: Limit = .timeout
    ) throws -> Task<(any Error)?, Never> {
        let timeout = try Timeout(.seconds(10), clock: clock)
        let outer = try RetryPolicy(name: "outer", maximumAttempts: 1, clock: clock)
        return Task {
            do {
                switch limit {
                case .timeout:
                    _ = try await timeout.execute {
                        try await policy.execute(recovering: recovery, operation: Self.operation)
                    }
                case .attemptTimeout:
                    _ = try await outer.execute(attemptTimeout: .seconds(10)) {
                        try await policy.execute(recovering: recovery, operation: Self.operation)
                    }
                }
                return nil
            } catch {
                return error
            }
        }
    }

    /// The error a time limit's error keeps: the `Timeout`'s or the per-attempt limit's.
    static func keptError(_ error: (any Error)?) -> (any Error)? {
        (error as? TimeoutError)?.operationError ?? (error as? AttemptTimeoutError)?.operationError
    }

    static func status(_ error: (any Error)?) -> Int? {
        (error as? HTTPResponseError)?.statusCode
    }

    // MARK: - A time limit around the call, once a refresh failed for now

    /// The limit fires while the call waits for the retried refresh, which hangs: the limit keeps
    /// the refresh's error, as it does when it fires between refresh retries (below), and as the
    /// policy's own deadline ends the call.
    @Test(arguments: Limit.allCases)
    func aTimeLimitWhileWaitingForTheRetriedRefreshKeepsTheRefreshsError(limit: Limit) async throws {
        let clock = TestClock()
        let (recovery, gate, retried) = WaitDeadlineCancellationTests.recoveryFailingOnceThenHanging(clock: clock)
        let watcher = WaitDeadlineCancellationTests.RetryWatcher()
        let policy = try Self.policy(clock, observer: watcher)
        let call = try Self.timedCall(policy, recovery, clock: clock, limit: limit)
        await watcher.next()  // the first refresh failed with a 503
        await clock.waitForSleepers(count: 2)  // the time limit, and the backoff before the refresh retry
        clock.advance(by: .seconds(1))
        for await _ in retried { break }  // the retried refresh started, and hangs
        clock.advance(by: .seconds(9))  // the time limit
        let error = await call.value
        gate.open()
        let kept = try #require(
            Self.keptError(error), "a time-out keeping the call's error: \(String(describing: error))")
        #expect(Self.status(kept) == 503, "the refresh's error: \(kept)")
    }

    /// The limit fires during the backoff before the refresh retry: it keeps the refresh's error.
    @Test func aTimeLimitBetweenRefreshRetriesKeepsTheRefreshsError() async throws {
        let clock = TestClock()
        let (recovery, refreshes) = RefreshRetryTests.recovery(
            failingWith: Array(repeating: HTTPResponseError(statusCode: 503), count: 10), clock: clock)
        let watcher = WaitDeadlineCancellationTests.RetryWatcher()
        let policy = try Self.policy(clock, backoff: .seconds(30), observer: watcher)
        let call = try Self.timedCall(policy, recovery, clock: clock)
        await watcher.next()
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        let error = await call.value
        let limit = try #require(error as? TimeoutError, "\(String(describing: error))")
        #expect(
            Self.status(limit.operationError) == 503, "the refresh's error: \(String(describing: limit.operationError))"
        )
        #expect(refreshes.value == 1)
    }

    /// The refresh's retry-after hint, kept by the limit, runs from the refresh's failure: an
    /// outer policy reads the 30 s hint less the 10 s the call waited on it.
    @Test func aTimeLimitBetweenRefreshRetriesCountsTheRefreshsHintFromItsFailure() async throws {
        let clock = TestClock()
        let (recovery, _) = RefreshRetryTests.recovery(
            failingWith: Array(repeating: StatusError(status: 503, hint: .seconds(30)), count: 10), clock: clock)
        let watcher = WaitDeadlineCancellationTests.RetryWatcher()
        let policy = try Self.policy(clock, observer: watcher)
        let call = try Self.timedCall(policy, recovery, clock: clock)
        await watcher.next()
        await clock.waitForSleepers(count: 2)  // the time limit, and the 30 s the refresh asked for
        clock.advance(by: .seconds(10))
        let error = try #require(await call.value)
        let limit = try #require(error as? TimeoutError, "\(error)")
        #expect(limit.operationError.map { $0 as? StatusError } == StatusError(status: 503, hint: .seconds(30)))
        #expect(FailureAnalysis(error).retryAfter == .seconds(20))
    }

    // MARK: - An answer after a jump past the deadline

    /// A refresh that fails for good after the clock jumped past the deadline, the wait's timer
    /// not yet woken: the deadline came first, so the call stops there with the refusal it was
    /// refreshing for, not with the sign-in stop the late answer would have given.
    @Test func aRefreshFailureAfterAJumpPastTheDeadlineStopsAtTheDeadline() async throws {
        let clock = TestClock()
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            await gate.wait()
            throw HTTPResponseError(statusCode: 400)
        }
        let log = RetryEventLog()
        let policy = try Self.policy(LateWakingClock(clock: clock), deadline: .seconds(10), observer: log)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        guard await RefreshDeadlineTests.aTimerWatches(clock, releasing: gate) else { return }
        clock.advance(by: .seconds(60))  // past the deadline; the timer sleeps on
        gate.open()  // the refresh fails for good, after the deadline
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome.result.failureValue) == 401, "\(outcome.result)")
        #expect(log.lines.values == ["p failed 1", "p deadlineExceeded after 1"])
    }

    /// A transient refresh failure after the jump, once one refresh failed for now: the call
    /// stops at the deadline with the error it had then, the first refresh's, and retries nothing.
    @Test func aRetriedRefreshFailureAfterAJumpPastTheDeadlineStopsAtTheDeadline() async throws {
        let clock = TestClock()
        let gate = Gate()
        let refreshes = Counter()
        let (started, continuation) = AsyncStream<Void>.makeStream()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            guard refreshes.increment() > 1 else { throw HTTPResponseError(statusCode: 503) }
            continuation.yield()
            await gate.wait()
            throw HTTPResponseError(statusCode: 429)
        }
        let watcher = WaitDeadlineCancellationTests.RetryWatcher()
        let late = LateWakingClock(clock: clock, lag: .seconds(2))
        let policy = try Self.policy(late, deadline: .seconds(10), observer: watcher)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await watcher.next()
        await clock.waitForSleepers(count: 1)  // the backoff, waking at three seconds
        clock.advance(by: .seconds(3))
        for await _ in started { break }
        await clock.waitForSleepers(count: 1)  // the deadline's timer, waking at twelve
        clock.advance(by: .seconds(8))  // past the deadline; the timer sleeps on
        gate.open()  // the retried refresh answers 429, after the deadline
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome.result.failureValue) == 503, "the first refresh's error: \(outcome.result)")
        #expect(refreshes.value == 2)
    }

    /// A refresh that succeeds after the jump: the call stops at the deadline at once, with no
    /// retry scheduled, as the network back after the jump stops it (below); the statistics
    /// count no retry.
    @Test func aRefreshAnsweredAfterAJumpPastTheDeadlineSchedulesNoRetry() async throws {
        let clock = TestClock()
        let (recovery, gate) = RefreshDeadlineTests.recoveryWithAHungRefresh(clock: clock)
        let log = RetryEventLog()
        let policy = try Self.policy(LateWakingClock(clock: clock), deadline: .seconds(10), observer: log)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        guard await RefreshDeadlineTests.aTimerWatches(clock, releasing: gate) else { return }
        clock.advance(by: .seconds(60))
        gate.open()
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome.result.failureValue) == 401, "\(outcome.result)")
        #expect(outcome.attempts == 1)
        #expect(log.lines.values == ["p failed 1", "p deadlineExceeded after 1"])
        let statistics = await policy.statistics
        #expect(statistics.retries == 0)
        #expect(statistics.failedAttempts == 1)
        #expect(statistics.stopReasons == [.deadlineExceeded: 1])
    }

    /// The same once a refresh failed for now: the call ends with that refresh's error, as every
    /// other end at the deadline after it does.
    @Test func aRetriedRefreshAnsweredAfterAJumpPastTheDeadlineEndsWithTheFailedRefreshsError() async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock, lag: .seconds(2))
        let (call, gate) = try await WaitDeadlineCancellationTests.callWaitingForTheRetriedRefresh(
            clock, policyClock: late, wake: .seconds(3))
        clock.advance(by: .seconds(8))  // past the deadline of ten seconds; the timer sleeps on
        gate.open()  // the retried refresh succeeds, after the deadline
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome.result.failureValue) == 503, "the refresh's error: \(outcome.result)")
        #expect(outcome.attempts == 1)
    }

    /// The network back after the jump: the call stops at the deadline at once, with the offline
    /// failure; the observer hears of no retry and the statistics count none.
    @Test func theNetworkBackAfterAJumpPastTheDeadlineSchedulesNoRetry() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let sent = Counter()
        let log = RetryEventLog()
        let policy = try Self.policy(LateWakingClock(clock: clock), deadline: .seconds(10), observer: log)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let operation = WaitDeadlineCancellationTests.offlineOperation(network, sent: sent)
        let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))
        network.set(.online)
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(WaitDeadlineCancellationTests.isOffline(outcome), "\(outcome.result)")
        #expect(sent.value == 1)
        #expect(log.lines.values == ["p failed 1", "p deadlineExceeded after 1"])
        let statistics = await policy.statistics
        #expect(statistics.retries == 0)
        #expect(statistics.failedAttempts == 1)
        #expect(statistics.stopReasons == [.deadlineExceeded: 1])
    }

    /// A refresh that answers, succeeding or failing for now, after the clock jumped past the
    /// deadline of a `Timeout` around the call, the limit's timer asleep: the call stops as when
    /// the limit cancelled it, with no retry scheduled; the observer hears of none and the
    /// statistics count none.
    @Test(arguments: [true, false])
    func aRefreshAnsweredAfterAJumpPastAnEnclosingLimitsDeadlineSchedulesNoRetry(refreshFails: Bool) async throws {
        let clock = TestClock()
        let gate = Gate()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            refreshes.increment()
            await gate.wait()
            if refreshFails { throw HTTPResponseError(statusCode: 503) }
            return "new"
        }
        let log = RetryEventLog()
        let policy = try Self.policy(clock, observer: log)
        let timeout = try Timeout(.seconds(10), name: "limit", clock: LateWakingClock(clock: clock))
        let sends = Counter()
        let call = Task {
            try await timeout.execute {
                await policy.outcome(recovering: recovery) { (token: String) async throws -> String in
                    sends.increment()
                    guard token == "new" else { throw HTTPResponseError(statusCode: 401) }
                    return "profile"
                }
            }
        }
        await recovery.waitForWaitingCalls(count: 1)
        await clock.waitForSleepers(count: 1)  // the limit's timer
        clock.advance(by: .seconds(60))  // past the limit's deadline; its timer sleeps on
        gate.open()
        let result = await call.result
        let context = "\(result) \(log.lines.values)"
        #expect(sends.value == 1, "\(context)")
        #expect(refreshes.value == 1, "\(context)")
        #expect(log.lines.values == ["p failed 1", "p cancelled after 1"], "\(context)")
        let statistics = await policy.statistics
        #expect(statistics.retries == 0, "\(context)")
    }

    /// The network back after a jump past the deadline of a `Timeout` around the call, the
    /// limit's timer asleep: the call stops as when the limit cancelled it, with no retry
    /// scheduled.
    @Test func theNetworkBackAfterAJumpPastAnEnclosingLimitsDeadlineSchedulesNoRetry() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let sent = Counter()
        let log = RetryEventLog()
        let policy = try Self.policy(clock, observer: log)
        let timeout = try Timeout(.seconds(10), name: "limit", clock: LateWakingClock(clock: clock))
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let operation = WaitDeadlineCancellationTests.offlineOperation(network, sent: sent)
        let call = Task {
            try await timeout.execute {
                await policy.outcome(waitingFor: wait) { try operation() }
            }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 2)  // the limit's timer and the wait's
        clock.advance(by: .seconds(60))  // past the limit's deadline; its timer sleeps on
        network.set(.online)
        let result = await call.result
        let context = "\(result) \(log.lines.values)"
        #expect(sent.value == 1, "\(context)")
        #expect(log.lines.values == ["p failed 1", "p cancelled after 1"], "\(context)")
        let statistics = await policy.statistics
        #expect(statistics.retries == 0, "\(context)")
    }
}
