import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A wait with nothing left to wait (a backoff of zero, the rest of a hint the wait for the network
/// used up) does not sleep on the clock: a clock whose timers wake late would hold the retry for
/// the timer's lag, although its time has come.
@Suite("Waits of nothing do not sleep", .timeLimit(.minutes(5)))
struct ZeroWaitTests {
    static let operation = RefreshedTokenAPI.operation
    static let lag = LateWakingClock(clock: TestClock()).lag

    /// Awaits `call`, and tells whether it asked `clock` for a sleep past its first `requests`
    /// ones before it ended. Such a sleep, on a `LateWakingClock`, would hold the call for the
    /// clock's lag: the watch moves the clock past the lag after each, so the call ends either way.
    static func outcome(
        of call: Task<RetryOutcome<String>, Never>, sleepingAfter requests: Int, on clock: TestClock
    ) async -> (outcome: RetryOutcome<String>, slept: Bool) {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var seen = requests
                while true {
                    await clock.waitForSleepRequests(count: seen + 1)
                    // Returns early, cancelled, when the call ended without another sleep.
                    if Task.isCancelled { return seen > requests }
                    seen += 1
                    clock.advance(by: Self.lag)
                }
            }
            let outcome = await call.value
            group.cancelAll()
            let slept = await group.next() ?? false
            return (outcome, slept)
        }
    }

    static func policy(_ clock: TestClock, deadline: Duration?) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, deadline: deadline,
            clock: LateWakingClock(clock: clock), generator: SeededRandomNumberGenerator(seed: 1))
    }

    /// A backoff of zero between attempts: the retry goes out at once, without a timer.
    @Test(arguments: [Duration?.none, .seconds(10)])
    func aBackoffOfZeroRetriesWithoutSleeping(deadline: Duration?) async throws {
        let clock = TestClock()
        let policy = try Self.policy(clock, deadline: deadline)
        let sent = Counter()
        let call = Task {
            await policy.outcome { () throws -> String in
                guard sent.increment() > 2 else { throw HTTPResponseError(statusCode: 503) }
                return "ok"
            }
        }
        let (outcome, slept) = await Self.outcome(of: call, sleepingAfter: 0, on: clock)
        #expect(try outcome.get() == "ok")
        #expect(!slept, "the retries slept on the clock: \(clock.sleepRequests)")
        #expect(outcome.attempts == 3)
    }

    /// A refresh that fails for now, retried after a backoff of zero: the refresh goes again at once.
    @Test func aRefreshRetriedAfterABackoffOfZeroDoesNotSleep() async throws {
        let clock = TestClock()
        let (recovery, refreshes) = RefreshRetryTests.recovery(
            failingWith: [HTTPResponseError(statusCode: 503)], clock: clock)
        let policy = try Self.policy(clock, deadline: nil)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        let (outcome, slept) = await Self.outcome(of: call, sleepingAfter: 0, on: clock)
        #expect(try outcome.get() == "profile")
        #expect(!slept, "the refresh retry slept on the clock: \(clock.sleepRequests)")
        #expect(refreshes.value == 2)
    }

    /// A refresh that failed offline, and the network back: nothing is left to wait, so the
    /// refresh goes again at once, with or without a hint the wait for the network used up.
    @Test(arguments: [nil, 10])
    func aRefreshAfterTheNetworkCameBackDoesNotSleep(hintSeconds: Int?) async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let offline: any Error & Sendable =
            if let hintSeconds {
                RetryAfterRecoveryTests.networkUnavailable(retryAfter: hintSeconds)
            } else {
                URLError(.notConnectedToInternet)
            }
        let (recovery, refreshes) = RefreshRetryTests.recovery(failingWith: [offline], clock: clock)
        let policy = try Self.policy(clock, deadline: nil)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let call = Task { await policy.outcome(recovering: recovery, waitingFor: wait, operation: Self.operation) }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)  // the wait for the network
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(hintSeconds ?? 0))  // the hint's time passes during the wait
        network.set(.online)
        let (outcome, slept) = await Self.outcome(of: call, sleepingAfter: requests, on: clock)
        #expect(try outcome.get() == "profile")
        #expect(!slept, "the retry of the refresh slept on the clock: \(clock.sleepRequests)")
        #expect(refreshes.value == 2)
    }

    /// A wait for the network with a limit of zero ends offline at once, without a timer.
    @Test func aWaitForTheNetworkWithALimitOfZeroDoesNotSleep() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try Self.policy(clock, deadline: nil)
        let wait = ConnectivityWait(monitor: network, limit: .zero)
        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in throw URLError(.notConnectedToInternet) }
        }
        let (outcome, slept) = await Self.outcome(of: call, sleepingAfter: 0, on: clock)
        #expect(outcome.stopReason == .offline)
        #expect(!slept, "the wait slept on the clock: \(clock.sleepRequests)")
    }
}
