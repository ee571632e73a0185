import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A policy's deadline against the caller's cancellation during the waits that are not a plain
/// backoff: for a shared refresh of the credential, between refresh retries, and for the network.
///
/// No such wait lasts past the deadline, so a cancellation during one is the caller's. A clock
/// that jumps (a device that wakes from sleep) can carry the time past the deadline before the
/// caller cancels: the deadline came first, and the call stops with `deadlineExceeded` and the
/// error it would have stopped with had the wait's timer woken first, whether it has woken or not
/// (on a `TestClock`, `advance` only resumes the timer's sleep; on a `LateWakingClock` it sleeps on).
@Suite("Waits for a refresh or the network: the deadline against the caller's cancellation", .timeLimit(.minutes(5)))
struct WaitDeadlineCancellationTests {
    static let rounds = 20
    static let operation = RefreshedTokenAPI.operation

    /// Reports each scheduled retry, and cancels the call's task there when asked: the moment
    /// between a wait's end and the call's next attempt, which no test could reach from outside.
    final class RetryWatcher: RetryObserver {
        let scheduled = AsyncStream<Void>.makeStream()
        let cancelsTheCall: Bool

        init(cancelsTheCall: Bool = false) {
            self.cancelsTheCall = cancelsTheCall
        }

        func retryScheduled(_ event: RetryScheduledEvent) {
            if self.cancelsTheCall { withUnsafeCurrentTask { $0?.cancel() } }
            self.scheduled.continuation.yield()
        }

        /// Waits for the next scheduled retry.
        func next() async {
            for await _ in self.scheduled.stream { return }
        }
    }

    static func policy(
        _ clock: some Clock<Duration>, deadline: Duration? = .seconds(10), observer: (any RetryObserver)? = nil
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, deadline: deadline,
            observer: observer, clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
    }

    static func status(_ outcome: RetryOutcome<String>) -> Int? {
        (outcome.result.failureValue as? HTTPResponseError)?.statusCode
    }

    // MARK: - Waiting for a shared refresh

    /// On a `TestClock` the jump resumes the timer, which usually ends the wait before the
    /// cancellation reaches it; whichever of the two the call sees first, it ends the same way.
    /// The late-waking clock below keeps the timer asleep, the case the cancellation must settle.
    @Test func aCancellationAfterAJumpPastTheDeadlineWhileWaitingForARefreshStopsAtTheDeadline() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let (recovery, gate) = RefreshDeadlineTests.recoveryWithAHungRefresh(clock: clock)
            let policy = try Self.policy(clock)
            let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
            await recovery.waitForWaitingCalls(count: 1)
            guard await RefreshDeadlineTests.aTimerWatches(clock, releasing: gate) else { return }
            clock.advance(by: .seconds(60))  // past the deadline: the timer is resumed, not yet run
            call.cancel()
            let outcome = await call.value
            gate.open()
            #expect(outcome.stopReason == .deadlineExceeded, "round \(round)")
            #expect(Self.status(outcome) == 401, "round \(round): the call's last error, \(outcome.result)")
            #expect(outcome.attempts == 1)
        }
    }

    @Test func aCancellationAfterAJumpPastTheDeadlineStopsAtTheDeadlineBeforeTheRefreshTimerWakes() async throws {
        let clock = TestClock()
        let (recovery, gate) = RefreshDeadlineTests.recoveryWithAHungRefresh(clock: clock)
        let policy = try Self.policy(LateWakingClock(clock: clock))
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        guard await RefreshDeadlineTests.aTimerWatches(clock, releasing: gate) else { return }
        clock.advance(by: .seconds(60))  // past the deadline; the timer sleeps on
        call.cancel()
        let outcome = await call.value
        gate.open()
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome) == 401, "\(outcome.result)")
    }

    /// A refresh that answers after the jump passed the deadline: the call stops at the deadline
    /// without scheduling a retry, so a cancellation as it would schedule one cannot come first.
    @Test func aRefreshThatAnswersAfterAJumpPastTheDeadlineLeavesTheDeadlinesStop() async throws {
        let clock = TestClock()
        let (recovery, gate) = RefreshDeadlineTests.recoveryWithAHungRefresh(clock: clock)
        let policy = try Self.policy(LateWakingClock(clock: clock), observer: RetryWatcher(cancelsTheCall: true))
        let sent = Counter()
        let call = Task {
            await policy.outcome(recovering: recovery) { token in
                sent.increment()
                return try await Self.operation(token)
            }
        }
        await recovery.waitForWaitingCalls(count: 1)
        guard await RefreshDeadlineTests.aTimerWatches(clock, releasing: gate) else { return }
        clock.advance(by: .seconds(60))
        gate.open()  // the refresh answers; the call would be cancelled as it scheduled a retry
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome) == 401, "\(outcome.result)")
        #expect(sent.value == 1, "no attempt past the deadline")
    }

    @Test func aCancellationWhileWaitingForARefreshBeforeTheDeadlineStaysTheCallers() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let (recovery, gate) = RefreshDeadlineTests.recoveryWithAHungRefresh(clock: clock)
            let policy = try Self.policy(clock)
            let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
            await recovery.waitForWaitingCalls(count: 1)
            guard await RefreshDeadlineTests.aTimerWatches(clock, releasing: gate) else { return }
            call.cancel()
            let outcome = await call.value
            gate.open()
            #expect(outcome.stopReason == .cancelled, "round \(round)")
            #expect(outcome.result.failureValue is CancellationError, "round \(round): \(outcome.result)")
        }
    }

    // MARK: - Waiting between refresh retries

    /// Starts a call whose refreshes all fail with a 503, and returns once the call waits
    /// before its first refresh retry.
    static func callWaitingToRetryTheRefresh(
        _ clock: TestClock, lateWaking: Bool = false
    ) async throws -> (Task<RetryOutcome<String>, Never>, Counter) {
        let (recovery, refreshes) = RefreshRetryTests.recovery(
            failingWith: Array(repeating: HTTPResponseError(statusCode: 503), count: 10), clock: clock)
        let watcher = RetryWatcher()
        let policy =
            lateWaking
            ? try Self.policy(LateWakingClock(clock: clock), observer: watcher)
            : try Self.policy(clock, observer: watcher)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await watcher.next()  // the refresh failed; the wait for it, and its timer, are over
        await clock.waitForSleepers(count: 1)  // the wait before the refresh retry
        return (call, refreshes)
    }

    @Test func aCancellationAfterAJumpPastTheDeadlineBetweenRefreshRetriesStopsAtTheDeadline() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let (call, refreshes) = try await Self.callWaitingToRetryTheRefresh(clock)
            clock.advance(by: .seconds(60))  // past the wait's end and the deadline
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .deadlineExceeded, "round \(round)")
            #expect(Self.status(outcome) == 503, "round \(round): the refresh's error, \(outcome.result)")
            #expect(refreshes.value == 1, "round \(round): no refresh past the deadline")
        }
    }

    @Test func aCancellationAfterAJumpPastTheDeadlineBetweenRefreshRetriesBeforeTheWaitWakes() async throws {
        let clock = TestClock()
        let (call, refreshes) = try await Self.callWaitingToRetryTheRefresh(clock, lateWaking: true)
        clock.advance(by: .seconds(60))  // past the wait's end and the deadline; the wait sleeps on
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome) == 503, "the refresh's error: \(outcome.result)")
        #expect(refreshes.value == 1)
    }

    @Test func aCancellationBetweenRefreshRetriesBeforeTheDeadlineStaysTheCallers() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let (call, refreshes) = try await Self.callWaitingToRetryTheRefresh(clock)
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .cancelled, "round \(round)")
            #expect(outcome.result.failureValue is CancellationError, "round \(round): \(outcome.result)")
            #expect(refreshes.value == 1)
        }
    }

    // MARK: - At the deadline, once a refresh failed for now

    // A call whose refresh failed for now ends at the deadline with that refresh's error, however
    // the deadline ends it: a wait before the retry that would pass it, a clock that jumps past it
    // during that wait, or the deadline reached while the call waits for the retried refresh.
    // The refresh's error tells the app the auth server failed, not the session.

    @Test func aJumpPastTheDeadlineBetweenRefreshRetriesEndsWithTheRefreshsError() async throws {
        let clock = TestClock()
        let (call, refreshes) = try await Self.callWaitingToRetryTheRefresh(clock)
        clock.advance(by: .seconds(60))  // past the wait's end and the deadline: the wait's timer wakes
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome) == 503, "the refresh's error: \(outcome.result)")
        #expect(refreshes.value == 1, "no refresh past the deadline")
    }

    /// A recovery whose first refresh fails with a 503, and whose later ones answer `"new"` once
    /// the gate opens; the stream tells when a later one started.
    static func recoveryFailingOnceThenHanging(
        clock: TestClock
    ) -> (CredentialRecovery<String>, Gate, AsyncStream<Void>) {
        let gate = Gate()
        let (started, continuation) = AsyncStream<Void>.makeStream()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            guard refreshes.increment() > 1 else { throw HTTPResponseError(statusCode: 503) }
            continuation.yield()
            await gate.wait()
            return "new"
        }
        return (recovery, gate, started)
    }

    /// Starts a call whose first refresh fails with a 503, lets the backoff of one second pass
    /// (`wake` on the test clock), and returns once the call waits for the retried refresh, which hangs.
    static func callWaitingForTheRetriedRefresh(
        _ clock: TestClock, policyClock: some Clock<Duration>, wake: Duration
    ) async throws -> (Task<RetryOutcome<String>, Never>, Gate) {
        let (recovery, gate, retried) = Self.recoveryFailingOnceThenHanging(clock: clock)
        let watcher = RetryWatcher()
        let policy = try Self.policy(policyClock, observer: watcher)
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await watcher.next()  // the refresh failed; the wait for it, and its timer, are over
        await clock.waitForSleepers(count: 1)  // the backoff before the refresh retry
        clock.advance(by: wake)
        for await _ in retried { break }  // the retried refresh started
        await clock.waitForSleepers(count: 1)  // the deadline's timer on the wait for it
        return (call, gate)
    }

    @Test func theDeadlineReachedWhileWaitingForTheRetriedRefreshEndsWithTheRefreshsError() async throws {
        let clock = TestClock()
        let (call, gate) = try await Self.callWaitingForTheRetriedRefresh(clock, policyClock: clock, wake: .seconds(1))
        clock.advance(by: .seconds(9))  // the deadline: the timer ends the wait
        let outcome = await call.value
        gate.open()
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome) == 503, "the refresh's error: \(outcome.result)")
        #expect(outcome.attempts == 1)
    }

    @Test func aCancellationAfterAJumpPastTheDeadlineWhileWaitingForTheRetriedRefreshEndsWithTheRefreshsError()
        async throws
    {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock, lag: .seconds(2))
        // The backoff wakes at three seconds; the timer for the retried refresh at twelve.
        let (call, gate) = try await Self.callWaitingForTheRetriedRefresh(clock, policyClock: late, wake: .seconds(3))
        clock.advance(by: .seconds(8))  // past the deadline of ten seconds; the timer sleeps on
        call.cancel()
        let outcome = await call.value
        gate.open()
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.status(outcome) == 503, "the refresh's error: \(outcome.result)")
    }

    // MARK: - Waiting for the network

    /// An operation that fails offline while `network` is offline.
    static func offlineOperation(_ network: TestConnectivityMonitor, sent: Counter) -> @Sendable () throws -> String {
        {
            sent.increment()
            guard network.connectivity.isOnline else { throw URLError(.notConnectedToInternet) }
            return "ok"
        }
    }

    static func isOffline(_ outcome: RetryOutcome<String>) -> Bool {
        (outcome.result.failureValue as? URLError)?.code == .notConnectedToInternet
    }

    @Test func aCancellationAfterAJumpPastTheDeadlineWhileWaitingForTheNetworkStopsAtTheDeadline() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let network = TestConnectivityMonitor(.offline)
            let sent = Counter()
            let policy = try Self.policy(clock)
            let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
            let operation = Self.offlineOperation(network, sent: sent)
            let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
            await network.waitForObservers(count: 1)
            await clock.waitForSleepers(count: 1)  // the wait, bounded by the deadline
            clock.advance(by: .seconds(60))
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .deadlineExceeded, "round \(round)")
            #expect(Self.isOffline(outcome), "round \(round): the offline error, \(outcome.result)")
            #expect(sent.value == 1)
        }
    }

    @Test func aCancellationAfterAJumpPastTheDeadlineStopsAtTheDeadlineBeforeTheNetworkWaitWakes() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try Self.policy(LateWakingClock(clock: clock))
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let operation = Self.offlineOperation(network, sent: Counter())
        let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))  // past the deadline; the wait's timer sleeps on
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.isOffline(outcome), "\(outcome.result)")
    }

    /// A wait whose own limit is shorter than the time left: a jump past the deadline passed that
    /// limit first, so the call ends as the limit ends it, offline.
    @Test func aCancellationAfterAJumpPastAShorterLimitAndTheDeadlineEndsOffline() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try Self.policy(LateWakingClock(clock: clock))
        let wait = ConnectivityWait(monitor: network, limit: .seconds(5))
        let operation = Self.offlineOperation(network, sent: Counter())
        let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .offline)
        #expect(Self.isOffline(outcome), "\(outcome.result)")
    }

    // MARK: - The wait's own limit, before the deadline or without one

    /// Starts a call that fails offline and waits for `network`, at most `limit`, and returns once
    /// the wait's timer sleeps.
    static func callWaitingForTheNetwork(
        on clock: some Clock<Duration>, testClock: TestClock, limit: Duration, deadline: Duration?,
        network: TestConnectivityMonitor, sent: Counter
    ) async throws -> Task<RetryOutcome<String>, Never> {
        let policy = try Self.policy(clock, deadline: deadline)
        let wait = ConnectivityWait(monitor: network, limit: limit)
        let operation = Self.offlineOperation(network, sent: sent)
        let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
        await network.waitForObservers(count: 1)
        await testClock.waitForSleepers(count: 1)
        return call
    }

    /// A jump past the wait's limit, not the deadline, then the caller's cancellation: the limit
    /// passed first, so the call ends as the limit ends it, offline, also before the timer wakes.
    @Test(arguments: [Duration?.none, .seconds(10)])
    func aCancellationAfterAJumpPastTheLimitOnlyEndsOfflineBeforeTheTimerWakes(deadline: Duration?) async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let sent = Counter()
        let call = try await Self.callWaitingForTheNetwork(
            on: LateWakingClock(clock: clock), testClock: clock, limit: .seconds(5), deadline: deadline,
            network: network, sent: sent)
        clock.advance(by: .seconds(6))  // past the limit, not the deadline; the timer sleeps on
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .offline)
        #expect(Self.isOffline(outcome), "\(outcome.result)")
        #expect(sent.value == 1)
    }

    /// The same on a `TestClock`, whose jump resumes the timer: whichever of the two the call sees
    /// first, it ends offline.
    @Test(arguments: [Duration?.none, .seconds(10)])
    func aCancellationAfterAJumpPastTheLimitOnlyEndsOffline(deadline: Duration?) async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let network = TestConnectivityMonitor(.offline)
            let call = try await Self.callWaitingForTheNetwork(
                on: clock, testClock: clock, limit: .seconds(5), deadline: deadline, network: network,
                sent: Counter())
            clock.advance(by: .seconds(6))
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .offline, "round \(round)")
            #expect(Self.isOffline(outcome), "round \(round): \(outcome.result)")
        }
    }

    /// The network that comes back only after a jump past the wait's limit finds the wait over,
    /// as its timer would have found it: the call ends offline and sends nothing more.
    @Test(arguments: [Duration?.none, .seconds(10)])
    func theNetworkBackAfterAJumpPastTheLimitEndsOffline(deadline: Duration?) async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let sent = Counter()
        let call = try await Self.callWaitingForTheNetwork(
            on: LateWakingClock(clock: clock), testClock: clock, limit: .seconds(5), deadline: deadline,
            network: network, sent: sent)
        clock.advance(by: .seconds(6))
        network.set(.online)
        let outcome = await call.value
        #expect(outcome.stopReason == .offline)
        #expect(Self.isOffline(outcome), "\(outcome.result)")
        #expect(sent.value == 1, "no attempt after the wait's limit")
    }

    /// Before the limit, without a deadline, a cancellation is the caller's.
    @Test func aCancellationBeforeTheLimitWithoutADeadlineStaysTheCallers() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let network = TestConnectivityMonitor(.offline)
            let call = try await Self.callWaitingForTheNetwork(
                on: LateWakingClock(clock: clock), testClock: clock, limit: .seconds(5), deadline: nil,
                network: network, sent: Counter())
            clock.advance(by: .seconds(4))
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .cancelled, "round \(round)")
            #expect(outcome.result.failureValue is CancellationError, "round \(round): \(outcome.result)")
        }
    }

    /// The network that comes back after the jump passed the deadline: the call stops at the
    /// deadline without scheduling a retry, so a cancellation as it would schedule one cannot come first.
    @Test func theNetworkBackAfterAJumpPastTheDeadlineLeavesTheDeadlinesStop() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let sent = Counter()
        let policy = try Self.policy(LateWakingClock(clock: clock), observer: RetryWatcher(cancelsTheCall: true))
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let operation = Self.offlineOperation(network, sent: sent)
        let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))
        network.set(.online)  // the wait ends; the call would be cancelled as it scheduled a retry
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(Self.isOffline(outcome), "\(outcome.result)")
        #expect(sent.value == 1, "no attempt past the deadline")
    }

    @Test func aCancellationWhileWaitingForTheNetworkBeforeTheDeadlineStaysTheCallers() async throws {
        for round in 0..<Self.rounds {
            let clock = TestClock()
            let network = TestConnectivityMonitor(.offline)
            let policy = try Self.policy(clock)
            let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
            let operation = Self.offlineOperation(network, sent: Counter())
            let call = Task { await policy.outcome(waitingFor: wait) { try operation() } }
            await network.waitForObservers(count: 1)
            await clock.waitForSleepers(count: 1)
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .cancelled, "round \(round)")
            #expect(outcome.result.failureValue is CancellationError, "round \(round): \(outcome.result)")
        }
    }
}
