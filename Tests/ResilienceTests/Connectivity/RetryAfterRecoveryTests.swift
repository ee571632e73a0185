import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The retry after the network returns, or after a credential refresh, still honours the retry-after
/// hint the failure carried: it waits the rest of it, and a hint over `maximumRetryAfter` stops the call.
@Suite(.timeLimit(.minutes(5)))
struct RetryAfterRecoveryTests {
    static func networkUnavailable(retryAfter seconds: Int) -> NSError {
        NSError(
            domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.networkUnavailable.rawValue,
            userInfo: [ErrorHints.cloudKitRetryAfterKey: seconds])
    }

    /// Starts a call through a policy that waits for `network`; its first attempt fails
    /// offline with a 10 s `CKRetryAfter`, the next succeeds. Each attempt's time goes to `attempts`.
    static func startCallFailingOnceOffline(
        clock: TestClock, network: TestConnectivityMonitor, attempts: Recorder<Duration>
    ) throws -> Task<RetryOutcome<String>, Never> {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        return Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in
                attempts.record(clock.now.offset)
                guard attempts.values.count > 1 else { throw Self.networkUnavailable(retryAfter: 10) }
                return "ok"
            }
        }
    }

    @Test func theRetryAfterTheNetworkReturnsWaitsTheRestOfCKRetryAfter() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let attempts = Recorder<Duration>()
        let call = try Self.startCallFailingOnceOffline(clock: clock, network: network, attempts: attempts)
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)  // the wait's limit runs from the start of the wait
        clock.advance(by: .seconds(1))
        network.set(.online)  // back after 1 s; CloudKit asked for 10
        // The wait's own limit was the first sleep; the rest of the hint is the second.
        await clock.waitForSleepRequests(count: 2)
        #expect(clock.sleepRequests == [.seconds(600), .seconds(9)])
        #expect(attempts.values == [.zero], "no retry before the hint has passed")
        clock.advance(by: .seconds(9))
        let outcome = await call.value
        #expect(throws: Never.self) { try outcome.get() }
        #expect(attempts.values == [.zero, .seconds(10)])
        #expect(outcome.attempts == 2)
        #expect(outcome.retryAfter == .seconds(10))
    }

    @Test func aHintThatPassedDuringTheOutageAddsNoWait() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let attempts = Recorder<Duration>()
        let call = try Self.startCallFailingOnceOffline(clock: clock, network: network, attempts: attempts)
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)  // the wait's limit runs from the start of the wait
        clock.advance(by: .seconds(20))
        network.set(.online)
        let outcome = await call.value
        #expect(throws: Never.self) { try outcome.get() }
        #expect(attempts.values == [.zero, .seconds(20)])
        #expect(clock.sleepRequests == [.seconds(600)])
    }

    @Test func aHintOverMaximumRetryAfterEndsTheCallWithoutWaitingForTheNetwork() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try RetryPolicy(maximumAttempts: 3, maximumRetryAfter: .seconds(5), clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let outcome = await policy.outcome(waitingFor: wait) { () throws -> String in
            throw Self.networkUnavailable(retryAfter: 10)
        }
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(outcome.attempts == 1)
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func theRestOfTheHintMustFitTheDeadline() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, deadline: .seconds(8), clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in
                throw Self.networkUnavailable(retryAfter: 10)
            }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)  // the wait's limit runs from the start of the wait
        clock.advance(by: .seconds(1))
        network.set(.online)
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(outcome.attempts == 1)
    }

    @Test(arguments: [
        NSError(
            domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.notAuthenticated.rawValue,
            userInfo: [ErrorHints.cloudKitRetryAfterKey: 5]) as any Error & Sendable,
        HTTPResponseError(statusCode: 401, headers: ["Retry-After": "5"]),
    ])
    func theRetryAfterACredentialRefreshWaitsTheRestOfTheHint(refusal: any Error & Sendable) async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in
            try await clock.sleep(for: .seconds(2))  // the auth server takes 2 s
            return "new"
        }
        let sent = Recorder<Duration>()
        let call = Task {
            await policy.outcome(recovering: recovery) { token in
                sent.record(clock.now.offset)
                guard token == "new" else { throw refusal }
                return "ok"
            }
        }
        await clock.waitForSleepRequests(count: 1)
        clock.advance(by: .seconds(2))  // the refresh ends
        await clock.waitForSleepRequests(count: 2)
        #expect(clock.sleepRequests == [.seconds(2), .seconds(3)], "\(refusal)")
        clock.advance(by: .seconds(3))
        let outcome = await call.value
        #expect(throws: Never.self, "\(refusal)") { try outcome.get() }
        #expect(sent.values == [.zero, .seconds(5)], "\(refusal)")
    }

    @Test func aCredentialFailureWithAHintOverMaximumRetryAfterStopsBeforeAnyRefresh() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, maximumRetryAfter: .seconds(5), clock: clock)
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in
            refreshes.increment()
            return "new"
        }
        let outcome = await policy.outcome(recovering: recovery) { (token: String) throws -> String in
            guard token == "new" else { throw HTTPResponseError(statusCode: 401, headers: ["Retry-After": "60"]) }
            return "ok"
        }
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(refreshes.value == 0)
    }
}
