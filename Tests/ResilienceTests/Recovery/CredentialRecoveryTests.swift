import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A service that accepts only the token it issued last, and issues a new one on refresh.
final class TokenService: Sendable {
    struct RefreshRefused: Error, Equatable {}

    private let state = Lock<(token: String, refreshes: Int)>(("fresh-1", 0))
    private let refusesRefresh: Bool

    init(refusesRefresh: Bool = false) {
        self.refusesRefresh = refusesRefresh
    }

    var refreshes: Int { self.state.withLock { $0.refreshes } }

    /// Answers like a protected endpoint: the token is accepted, or the call fails with 401.
    func fetch(with token: String) throws -> String {
        let valid = self.state.withLock { $0.token }
        guard token == valid else { throw StatusError(status: 401) }
        return "data for \(token)"
    }

    /// Issues a new token, or refuses as a service does when the refresh token was revoked.
    func refresh() throws -> String {
        try self.state.withLock { state in
            state.refreshes += 1
            if self.refusesRefresh { throw RefreshRefused() }
            state.token = "fresh-\(state.refreshes + 1)"
            return state.token
        }
    }
}

@Suite(.timeLimit(.minutes(5)))
struct CredentialRecoveryTests {
    private func makePolicy(maximumAttempts: Int = 3) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    @Test func concurrentCredentialFailuresShareOneRefreshAndEachRetriesOnceWithTheNewToken() async throws {
        let service = TokenService()
        let recovery = CredentialRecovery(credential: "expired") { _ in try service.refresh() }
        let policy = try self.makePolicy()

        let outcomes = await withTaskGroup(of: RetryOutcome<String>.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        #expect(service.refreshes == 1)
        #expect(outcomes.allSatisfy { $0.stopReason == .succeeded && $0.attempts == 2 })
        #expect(outcomes.allSatisfy { (try? $0.result.get()) == "data for fresh-2" })
        #expect(recovery.current.generation == 1)
    }

    @Test func aFailedRefreshEndsEveryWaitingCallWithTheReauthenticationReasonAndTheRefreshError() async throws {
        let service = TokenService(refusesRefresh: true)
        let recovery = CredentialRecovery(credential: "expired") { _ in try service.refresh() }
        let policy = try self.makePolicy()

        let outcomes = await withTaskGroup(of: RetryOutcome<String>.self) { group in
            for _ in 0..<200 {
                group.addTask {
                    await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }

        #expect(service.refreshes == 1)
        #expect(outcomes.allSatisfy { $0.stopReason == .authenticationRequired && $0.attempts == 1 })
        #expect(
            outcomes.allSatisfy { outcome in
                guard case .failure(let error) = outcome.result else { return false }
                return error is TokenService.RefreshRefused
            })
    }

    @Test func aCallThatCarriedAnOlderCredentialRetriesWithTheNewOneWithoutRefreshing() async throws {
        let service = TokenService()
        let recovery = CredentialRecovery(credential: "expired") { _ in try service.refresh() }
        let stale = recovery.current
        let policy = try self.makePolicy()
        let carried = Recorder<String>()

        let outcome = await policy.outcome(recovering: recovery) { token in
            carried.record(token)
            if token == stale.credential {
                // While this request was out, another call found the token refused and recovered.
                _ = try await recovery.recover(after: stale)
            }
            return try service.fetch(with: token)
        }

        #expect(outcome.stopReason == .succeeded)
        #expect(carried.values == ["expired", "fresh-2"])
        #expect(service.refreshes == 1)
    }

    @Test func aCallRecoversAtMostOnceThenStopsForReauthentication() async throws {
        let recovery = CredentialRecovery(credential: 0) { stale in stale + 1 }
        let policy = try self.makePolicy()
        let tokens = Recorder<Int>()

        let outcome = await policy.outcome(recovering: recovery) { token -> String in
            tokens.record(token)
            throw StatusError(status: 401)
        }

        #expect(outcome.stopReason == .authenticationRequired)
        #expect(outcome.attempts == 2)
        #expect(tokens.values == [0, 1])
        #expect(throws: StatusError(status: 401)) { try outcome.get() }
    }

    @Test func theRecoveryAttemptDoesNotCountAgainstMaximumAttempts() async throws {
        let service = TokenService()
        let recovery = CredentialRecovery(credential: "expired") { _ in try service.refresh() }
        let policy = try self.makePolicy(maximumAttempts: 1)

        let outcome = await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) }

        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.attempts == 2)
    }

    @Test func aRequestThatIsNotIdempotentIsResentAfterTheServerRefusedItsCredential() async throws {
        // A 401 comes before the server acts on a request, so even a POST may go again.
        let service = TokenService()
        let recovery = CredentialRecovery(credential: "expired") { _ in try service.refresh() }
        let policy = try self.makePolicy()

        let outcome = await policy.outcome(recovering: recovery, idempotency: .notIdempotent) { token in
            try service.fetch(with: token)
        }

        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.attempts == 2)
        #expect(service.refreshes == 1)
    }

    @Test func aRequestThatIsNotIdempotentIsNotResentAfterTheServerMayHaveActedOnIt() async throws {
        let recovery = CredentialRecovery(credential: "token") { _ in
            Issue.record("a timeout must not refresh the credential")
            return "other"
        }
        let policy = try self.makePolicy()
        let counter = Counter()
        let outcome = await policy.outcome(recovering: recovery, idempotency: .notIdempotent) { _ in
            counter.increment()
            throw URLError(.timedOut)
        }
        #expect(outcome.stopReason == .notIdempotent)
        #expect(counter.value == 1)
    }

    /// A batch of A and B in which B was saved and A was refused its credential (its per-item error):
    /// refreshing and sending the batch again would send B twice. The call stops as a partial failure.
    @Test func aPartialFailureWithAnItemRefusedItsCredentialIsNotSentAgainWhole() async throws {
        let recovery = CredentialRecovery(credential: "old") { _ in
            Issue.record("one item's credential failure must not refresh for the whole batch")
            return "new"
        }
        let policy = try RetryPolicy(
            maximumAttempts: 3, classifier: CloudKitRetryClassifier(), clock: TestClock())
        let sent = Recorder<String>()

        let outcome = await policy.outcome(recovering: recovery) { token -> Int in
            sent.record(token)
            guard sent.values.count == 1 else { return 2 }
            let refused = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.notAuthenticated.rawValue)
            throw NSError(
                domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                userInfo: [CloudKitErrorCode.partialErrorsKey: ["A": refused]])
        }

        #expect(outcome.stopReason == .partialFailure)
        #expect(sent.values == ["old"])
    }

    @Test func failuresThatDoNotAskForCredentialsAreLeftToTheClassifier() async throws {
        let recovery = CredentialRecovery(credential: "token") { _ in
            Issue.record("a 503 must not refresh the credential")
            return "other"
        }
        let policy = try self.makePolicy(maximumAttempts: 2)

        let outcome = await policy.outcome(recovering: recovery) { _ -> String in throw StatusError(status: 503) }

        #expect(outcome.stopReason == .exhausted)
        #expect(outcome.attempts == 2)
    }

    @Test func aCustomRuleRecognizesTheAppsOwnCredentialErrors() async throws {
        struct SessionExpired: Error {}
        let recovery = CredentialRecovery(
            credential: 1, isCredentialFailure: { error, _ in error is SessionExpired }, refresh: { $0 + 1 })
        let policy = try self.makePolicy()

        let outcome = await policy.outcome(recovering: recovery) { token in
            guard token == 2 else { throw SessionExpired() }
            return token
        }

        #expect(try outcome.get() == 2)
        #expect(outcome.stopReason == .succeeded)
    }

    @Test func cancellingOneWaiterEndsItAtOnceAndLeavesTheSharedRefreshRunning() async throws {
        let service = TokenService()
        let gate = Gate()
        let refreshWasCancelled = Recorder<Bool>()
        let recovery = CredentialRecovery(credential: "expired") { _ in
            await gate.wait()
            refreshWasCancelled.record(Task.isCancelled)
            return try service.refresh()
        }
        let policy = try self.makePolicy()

        let first = Task { await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) } }
        let second = Task { await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) } }
        await recovery.waitForWaitingCalls(count: 2)

        first.cancel()
        let cancelled = await first.value  // ends while the refresh is still held at the gate
        #expect(cancelled.stopReason == .cancelled)
        #expect(throws: CancellationError.self) { try cancelled.get() }
        #expect(recovery.waitingCallCount == 1)

        gate.open()
        let survivor = await second.value
        #expect(try survivor.get() == "data for fresh-2")
        #expect(refreshWasCancelled.values == [false])
        #expect(service.refreshes == 1)
    }

    @Test func replacingTheCredentialAfterSigningInClearsAFailedRefresh() async throws {
        let service = TokenService(refusesRefresh: true)
        let recovery = CredentialRecovery(credential: "expired") { _ in try service.refresh() }
        let policy = try self.makePolicy()

        let refused = await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) }
        #expect(refused.stopReason == .authenticationRequired)

        recovery.replace(with: "fresh-1")  // the person signed in again
        let accepted = await policy.outcome(recovering: recovery) { token in try service.fetch(with: token) }
        #expect(try accepted.get() == "data for fresh-1")
        #expect(accepted.attempts == 1)
        #expect(service.refreshes == 1)
    }
}

/// What stands for a 401 (CloudKit's `notAuthenticated`, `URLError.userAuthenticationRequired`)
/// is refreshed and sent once more like the 401, even when the call is not idempotent.
@Suite(.timeLimit(.minutes(5)))
struct StandInRefusalRecoveryTests {
    static let refusals: [any Error & Sendable] = [
        StatusError(status: 401),
        NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.notAuthenticated.rawValue),
        URLError(.userAuthenticationRequired),
    ]

    @Test(arguments: 0..<refusals.count)
    func aRefusedCredentialOfACallThatIsNotIdempotentIsRefreshedAndSentOnceMore(index: Int) async throws {
        let refusal = Self.refusals[index]
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let recovery = CredentialRecovery(credential: "old", clock: TestClock()) { _ in "new" }
        let outcome = await policy.outcome(recovering: recovery, idempotency: .notIdempotent) { token -> String in
            guard token == "new" else { throw refusal }
            return token
        }
        #expect(outcome.stopReason == .succeeded, "\(refusal)")
        #expect(outcome.attempts == 2, "\(refusal)")
    }
}
