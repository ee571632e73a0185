import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A network that comes back only to drop again as each attempt goes out: the waits for it
/// take no attempt, but a call makes only so many of them (``ConnectivityWait/maximumWaits``),
/// after which an offline failure counts as any other, so the call ends.
@Suite(.timeLimit(.minutes(5)))
struct FlappingNetworkTests {
    /// An operation on a network that drops as each request goes out.
    final class FlappingService: Sendable {
        let network: TestConnectivityMonitor
        let attempts = Counter()

        init(network: TestConnectivityMonitor) {
            self.network = network
        }

        func fetch() throws -> String {
            _ = self.attempts.increment()
            self.network.set(.offline)
            throw URLError(.notConnectedToInternet)
        }
    }

    static let limit = Duration.seconds(600)
    static let backoff = Duration.seconds(1)

    /// Drives the call: brings the network back each time it waits for it, and lets each
    /// backoff pass. Returns the kinds of wait in order (`true` for a network wait); stops
    /// early, cancelling the call, at a network wait past `expectedNetworkWaits`.
    static func drive(
        _ call: Task<RetryOutcome<String>, Never>, clock: TestClock, network: TestConnectivityMonitor,
        expectedNetworkWaits: Int, backoffs: Int
    ) async -> [Bool] {
        var kinds: [Bool] = []
        for step in 1...(expectedNetworkWaits + backoffs) {
            await clock.waitForSleepRequests(count: step)
            guard let request = clock.sleepRequests.dropFirst(step - 1).first else {
                call.cancel()  // cancelled by the time limit before the call slept again
                return kinds
            }
            let isNetworkWait = request == Self.limit
            kinds.append(isNetworkWait)
            if isNetworkWait {
                if kinds.filter({ $0 }).count > expectedNetworkWaits {
                    call.cancel()  // one wait too many: the network would keep the call forever
                    return kinds
                }
                network.set(.online)
            } else {
                clock.advance(by: request)
            }
        }
        return kinds
    }

    @Test func aFlappingNetworkCostsAtMostTheWaitsAndTheAttempts() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = FlappingService(network: network)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(Self.backoff), jitter: .none, clock: clock)
        let wait = try ConnectivityWait(monitor: network, limit: Self.limit, maximumWaits: 2)

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        let kinds = await Self.drive(call, clock: clock, network: network, expectedNetworkWaits: 2, backoffs: 2)
        let outcome = await call.value

        #expect(kinds == [true, true, false, false])
        #expect(outcome.stopReason == .exhausted)
        #expect(outcome.attempts == 5)  // two offline attempts that waited, then the policy's three
        #expect(service.attempts.value == 5)
        #expect(throws: URLError.self) { try outcome.get() }
    }

    @Test func theDefaultCapBoundsACallWithoutADeadline() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = FlappingService(network: network)
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(Self.backoff), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: Self.limit)
        #expect(wait.maximumWaits == ConnectivityWait.defaultMaximumWaits)
        let waits = wait.maximumWaits

        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        let kinds = await Self.drive(call, clock: clock, network: network, expectedNetworkWaits: waits, backoffs: 1)
        let outcome = await call.value

        #expect(kinds == Array(repeating: true, count: waits) + [false])
        #expect(outcome.stopReason == .exhausted)
        #expect(outcome.attempts == waits + 2)
    }

    /// A call that waits once and then succeeds is untouched by the cap.
    @Test func oneOutageStillCostsNoAttempt() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let attempts = Counter()
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let wait = try ConnectivityWait(monitor: network, limit: Self.limit, maximumWaits: 1)
        let call = Task {
            await policy.outcome(waitingFor: wait) { () throws -> String in
                _ = attempts.increment()
                guard network.connectivity.isOnline else { throw URLError(.notConnectedToInternet) }
                return "ok"
            }
        }
        await network.waitForObservers(count: 1)
        network.set(.online)
        let outcome = await call.value
        #expect(try outcome.get() == "ok")
        #expect(outcome.attempts == 2)
    }

    @Test(arguments: [0, -1, 101, Int.max])
    func anInvalidCapIsRefusedNamingTheSetting(maximumWaits: Int) {
        #expect {
            try ConnectivityWait(monitor: TestConnectivityMonitor(), limit: .seconds(60), maximumWaits: maximumWaits)
        } throws: { error in
            (error as? ConfigurationError)?.setting == "maximumWaits"
        }
    }

    @Test(arguments: [1, 5, 100])
    func aSensibleCapIsKept(maximumWaits: Int) throws {
        let wait = try ConnectivityWait(
            monitor: TestConnectivityMonitor(), limit: .seconds(60), maximumWaits: maximumWaits)
        #expect(wait.maximumWaits == maximumWaits)
    }

    /// At the largest cap (``ConnectivityWait/maximumWaitsLimit``) a call still sends at most
    /// `maximumWaits` plus `maximumAttempts` times, however the network flaps.
    @Test func theLargestCapStillBoundsAFlappingCall() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = FlappingService(network: network)
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let wait = try ConnectivityWait(
            monitor: network, limit: Self.limit, maximumWaits: ConnectivityWait.maximumWaitsLimit)
        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        for waitNumber in 1...ConnectivityWait.maximumWaitsLimit {
            await network.waitForUpdateRequests(count: waitNumber)
            network.set(.online)
        }
        let outcome = await call.value
        #expect(outcome.stopReason == .exhausted)
        #expect(outcome.attempts == ConnectivityWait.maximumWaitsLimit + 1)
        #expect(service.attempts.value == ConnectivityWait.maximumWaitsLimit + 1)
        #expect(network.updateRequestCount == ConnectivityWait.maximumWaitsLimit)
    }

    /// With a deadline, the waits count against it: the sixth wait is cut to what is left and ends
    /// the call with `deadlineExceeded`, however many waits the cap still allows.
    @Test func aDeadlineEndsTheWaitsBeforeTheCap() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let service = FlappingService(network: network)
        let policy = try RetryPolicy(maximumAttempts: 1, deadline: .milliseconds(5_500), clock: clock)
        let wait = try ConnectivityWait(monitor: network, limit: Self.limit, maximumWaits: 100)
        let call = Task { await policy.outcome(waitingFor: wait) { try service.fetch() } }
        for waitNumber in 1...5 {
            await network.waitForUpdateRequests(count: waitNumber)
            await clock.waitForSleepRequests(count: waitNumber)
            clock.advance(by: .seconds(1))
            network.set(.online)
        }
        await clock.waitForSleepRequests(count: 6)
        #expect(clock.sleepRequests.last == .milliseconds(500))
        clock.advance(by: .milliseconds(500))
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(outcome.attempts == 6)
        #expect(throws: URLError.self) { try outcome.get() }
    }
}
