import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The batch helper waits for the network after an offline failure, as CloudKit asks for
/// `networkUnavailable`, instead of spending its attempts on backoff. No real time passes.
@Suite(.timeLimit(.minutes(5)))
struct CloudKitBatchConnectivityTests {
    private func cloudKitError(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    private func partialFailure(_ items: [String: NSError]) -> NSError {
        self.cloudKitError(.partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: items])
    }

    /// One attempt allowed: the attempt that failed offline and the wait take none of it.
    private func makePolicy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 1, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
    }

    @Test func anItemThatFailedOfflineIsSentAgainOnceTheNetworkIsBack() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let sent = Recorder<[String]>()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b", "c"], waitingFor: wait) { ids in
                sent.record(ids)
                guard sent.values.count == 1 else { return }
                throw self.partialFailure(["a": self.cloudKitError(.networkUnavailable)])
            }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(120))
        #expect(sent.values.count == 1, "two minutes offline sent nothing")

        network.set(.online)
        let result = try await call.value
        #expect(sent.values == [["a", "b", "c"], ["a"]], "b and c were saved and are not sent again")
        #expect(result.stopReason == .succeeded)
        #expect(result.sentItems == ["a", "b", "c"])
        #expect(result.attempts == 2)
        #expect(clock.sleepRequests == [.seconds(600)], "the wait's limit, and no backoff")
    }

    @Test func aWholeBatchThatFailedOfflineIsSentAgainOnceTheNetworkIsBack() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let sent = Recorder<[String]>()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b"], waitingFor: wait, idempotency: .notIdempotent) { ids in
                sent.record(ids)
                guard network.connectivity.isOnline else { throw self.cloudKitError(.networkUnavailable) }
            }
        }
        await network.waitForObservers(count: 1)
        network.set(.online)
        let result = try await call.value
        #expect(sent.values == [["a", "b"], ["a", "b"]], "nothing left the device, so a save may go again")
        #expect(result.stopReason == .succeeded)
        #expect(result.sentItems == ["a", "b"])
    }

    @Test func aWaitThatReachesItsLimitReturnsTheItemsStillToSend() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try self.makePolicy(clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(300))
        let sends = Counter()
        let call = Task {
            try await policy.retryingFailedItems(["a", "b"], waitingFor: wait) { _ in
                sends.increment()
                throw self.partialFailure(["a": self.cloudKitError(.networkUnavailable)])
            }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(300))
        let result = try await call.value
        #expect(sends.value == 1)
        #expect(result.stopReason == .offline)
        #expect(result.sentItems == ["b"])
        #expect(CloudKitErrorCode(try #require(result.failedItems["a"])) == .networkUnavailable)
    }
}
