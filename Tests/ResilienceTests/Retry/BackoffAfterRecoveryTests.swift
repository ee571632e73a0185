import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(5)))
/// An attempt that spends none of ``RetryPolicy/maximumAttempts`` (the one after a wait for the
/// network, or after a recovered credential) moves the backoff schedule on no more than it
/// spends an attempt: the first retry that does spend one waits the schedule's first delay.
struct BackoffAfterRecoveryTests {
    static func makePolicy(_ clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .exponential(initial: .seconds(1), maximum: .seconds(60)), jitter: .none,
            clock: clock)
    }

    /// A call whose request is refused with a 401 until it carries `"new"`, and whose first
    /// attempt with it fails for now.
    static func callFailingOnceWithTheNewToken(
        _ recovery: CredentialRecovery<String>, clock: TestClock
    ) async throws -> RetryOutcome<String> {
        let attempts = Counter()
        let policy = try Self.makePolicy(clock)
        return await advancingThroughEachWait(clock) {
            await policy.outcome(recovering: recovery) { token -> String in
                guard token == "new" else { throw HTTPResponseError(statusCode: 401) }
                if attempts.increment() == 1 { throw TransientError() }
                return "profile"
            }
        }
    }

    @Test func theFirstBackoffAfterAWaitForTheNetworkIsTheSchedulesFirstDelay() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let attempts = Counter()
        let policy = try Self.makePolicy(clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in
                switch attempts.increment() {
                case 1: throw URLError(.notConnectedToInternet)
                case 2: throw TransientError()
                default: return "ok"
                }
            }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 1)
        network.set(.online)
        // The wait for the network's own limit, then the backoff before the third attempt.
        await clock.waitForSleepRequests(count: 2)
        let requests = clock.sleepRequests
        clock.advance(by: .seconds(60))
        let outcome = await call.value
        #expect(try outcome.get() == "ok")
        #expect(requests == [.seconds(600), .seconds(1)])
    }

    @Test func theFirstBackoffAfterARecoveredCredentialIsTheSchedulesFirstDelay() async throws {
        let clock = TestClock()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ in "new" }
        let outcome = try await Self.callFailingOnceWithTheNewToken(recovery, clock: clock)
        #expect(try outcome.get() == "profile")
        #expect(clock.sleepRequests == [.seconds(1)], "the refused attempt spent no attempt")
    }

    @Test func eachRefreshRetryMovesTheScheduleOnOneStep() async throws {
        let clock = TestClock()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            if refreshes.increment() == 1 { throw HTTPResponseError(statusCode: 503) }
            return "new"
        }
        let outcome = try await Self.callFailingOnceWithTheNewToken(recovery, clock: clock)
        #expect(try outcome.get() == "profile")
        // The refresh retry took the first step and an attempt; the operation's retry the second.
        #expect(clock.sleepRequests == [.seconds(1), .seconds(2)])
    }
}
