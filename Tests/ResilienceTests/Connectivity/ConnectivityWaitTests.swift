import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Waiting for the network on the test clock: no real time passes.
@Suite(.timeLimit(.minutes(5)))
struct ConnectivityWaitTests {
    /// An operation that fails offline while `network` is offline, and succeeds once it is online.
    final class Service: Sendable {
        let network: TestConnectivityMonitor
        let attempts = Counter()
        let offlineError: any Error

        init(network: TestConnectivityMonitor, offlineError: any Error = URLError(.notConnectedToInternet)) {
            self.network = network
            self.offlineError = offlineError
        }

        func fetch() throws -> String {
            self.attempts.increment()
            guard self.network.connectivity.isOnline else { throw self.offlineError }
            return "ok"
        }
    }

    private func makePolicy(clock: TestClock, maximumAttempts: Int = 3, deadline: Duration? = nil) throws -> RetryPolicy
    {
        try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none, deadline: deadline,
            clock: clock)
    }

    @Test func offlineForFiveMinutesThenOnlineSucceedsOnTheSecondAttemptAfterTheSignal() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let policy = try self.makePolicy(clock: clock, maximumAttempts: 3)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(300))
        #expect(service.attempts.value == 1)  // five minutes offline spent no attempt
        #expect(network.observerCount == 1)

        network.set(.online)
        let outcome = await call.value

        #expect(try outcome.get() == "ok")
        #expect(outcome.attempts == 2)
        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.elapsed == .seconds(300))
        #expect(clock.sleepRequests == [.seconds(600)])  // the wait's limit, no backoff
    }

    @Test func withoutAWaitTheSameOutageBurnsEveryAttemptOnBackoff() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let policy = try self.makePolicy(clock: clock, maximumAttempts: 3)

        let call = Task { await policy.outcome { try service.fetch() } }
        await advanceThroughSleeps(clock, count: 2)
        let outcome = await call.value

        #expect(outcome.stopReason == .exhausted)
        #expect(service.attempts.value == 3)
    }

    @Test func offlinePastTheLimitEndsWithTheOfflineReason() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(600))
        let outcome = await call.value

        #expect(outcome.stopReason == .offline)
        #expect(outcome.attempts == 1)
        #expect(throws: URLError.self) { try outcome.get() }
        #expect(network.observerCount == 0)  // the wait let go of its stream
    }

    @Test func cancellationDuringTheWaitEndsTheCallAtOnce() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        call.cancel()
        let outcome = await call.value

        #expect(outcome.stopReason == .cancelled)
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(outcome.elapsed == .zero)
        #expect(service.attempts.value == 1)
    }

    @Test func theWaitCountsAgainstTheDeadline() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let policy = try self.makePolicy(clock: clock, deadline: .seconds(120))
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(120)])
        clock.advance(by: .seconds(120))
        let outcome = await call.value

        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(outcome.attempts == 1)
    }

    /// The deadline of a call around the waiting one bounds the wait too: an inner policy
    /// with no deadline of its own waits no longer than the outer call has left.
    @Test func theWaitEndsAtAnEnclosingCallsDeadline() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let outer = try RetryPolicy(maximumAttempts: 1, deadline: .seconds(60), clock: clock)
        let inner = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(300))

        let call = Task {
            await outer.outcome { try await inner.execute(waitingFor: wait) { try service.fetch() } }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(60)])
        // Past the wait's own limit, so that a wait that ignored the outer deadline ends too.
        clock.advance(by: .seconds(300))
        let outcome = await call.value

        #expect(outcome.stopReason != .succeeded)
        #expect(service.attempts.value == 1)
    }

    @Test func repeatedOutagesDoNotSpendTheAttempts() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let attempts = Counter()
        let policy = try self.makePolicy(clock: clock, maximumAttempts: 1)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in
                // Every attempt finds the network gone again, until the fourth.
                if attempts.increment() < 4 {
                    network.set(.offline)
                    throw URLError(.notConnectedToInternet)
                }
                return "ok"
            }
        }
        for outage in 1...3 {
            await network.waitForUpdateRequests(count: outage)
            network.set(.online)
        }
        let outcome = await call.value

        #expect(try outcome.get() == "ok")
        #expect(outcome.attempts == 4)
    }

    @Test func aCloudKitNetworkUnavailableErrorWaitsForTheNetworkToo() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network, offlineError: NSError(domain: "CKErrorDomain", code: 3))
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        await network.waitForObservers(count: 1)
        network.set(.online)
        let outcome = await call.value

        #expect(try outcome.get() == "ok")
        #expect(outcome.attempts == 2)
    }

    @Test func anOfflineErrorWhileTheMonitorSaysOnlineIsRetriedWithTheBackoff() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.online)
        let attempts = Counter()
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))

        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in
                if attempts.increment() == 1 { throw URLError(.notConnectedToInternet) }
                return "ok"
            }
        }
        await advanceThroughSleeps(clock, count: 1)
        let outcome = await call.value

        #expect(try outcome.get() == "ok")
        #expect(clock.sleepRequests == [.seconds(1)])
        #expect(network.updateRequestCount == 0)
    }

    @Test func aZeroLimitStopsAnOfflineCallAtOnce() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = Service(network: network)
        let policy = try self.makePolicy(clock: clock)

        let outcome = await policy.outcome(waitingFor: ConnectivityWait(monitor: network, limit: .seconds(-1))) {
            try service.fetch()
        }

        #expect(outcome.stopReason == .offline)
        #expect(outcome.attempts == 1)
    }

    /// A batch of A and B in which B was saved and A failed offline (its per-item error): waiting for the
    /// network and sending the batch again would send B twice. The call stops as a partial failure, at once.
    @Test func aPartialFailureWithAnOfflineItemIsNotSentAgainWhole() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try RetryPolicy(maximumAttempts: 3, classifier: CloudKitRetryClassifier(), clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let sends = Counter()

        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> Int in
                guard sends.increment() == 1 else { return 2 }
                let offline = NSError(
                    domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkUnavailable.rawValue)
                throw NSError(
                    domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                    userInfo: [CloudKitErrorCode.partialErrorsKey: ["A": offline]])
            }
        }
        // Should the call wait for the network, bring it back, so that a whole re-send shows.
        let restore = Task {
            await network.waitForObservers(count: 1)
            if !Task.isCancelled { network.set(.online) }
        }
        let outcome = await call.value
        restore.cancel()

        #expect(outcome.stopReason == .partialFailure)
        #expect(sends.value == 1)
        #expect(network.updateRequestCount == 0)
    }
}
