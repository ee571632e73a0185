import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(5)))
/// A credential or a refresh error the recovery lets go of is released with its lock released:
/// a class's deinitializer is the app's code, and may call back into the recovery.
struct CredentialReleaseTests {
    /// A credential, or an error, that reports at its end whether the recovery's lock was held.
    final class Probed: Error, HTTPStatusReporting, Sendable {
        let name: String
        /// As an error, a 503: a refresh that failed for now.
        var httpStatusCode: Int? { 503 }
        let probe: LockProbe
        init(_ name: String, _ probe: LockProbe) {
            self.name = name
            self.probe = probe
        }
        deinit { self.probe.check() }
    }

    @Test func aReplacedCredentialIsReleasedWithTheLockReleased() async throws {
        let probe = LockProbe()
        let recovery = CredentialRecovery(credential: Probed("first", probe)) { _ in Probed("refreshed", probe) }
        probe.watch { [weak recovery] in recovery?.isLockHeld ?? false }
        _ = recovery.replace(with: Probed("signed in", probe))
        #expect(probe.runs == 1, "the first credential was released")
        #expect(probe.runsUnderTheLock == 0)
    }

    @Test func aRefreshedCredentialAndAForgottenFailureAreReleasedWithTheLockReleased() async throws {
        let clock = TestClock()
        let probe = LockProbe()
        let refreshes = Counter()
        let recovery = CredentialRecovery(credential: Probed("old", probe), clock: clock) { _ -> Probed in
            // The first refresh fails for now, with an error that is forgotten at the next.
            if refreshes.increment() == 1 { throw Probed("503", probe) }
            return Probed("new", probe)
        }
        probe.watch { [weak recovery] in recovery?.isLockHeld ?? false }
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome(recovering: recovery) { token -> String in
                guard token.name == "new" else { throw HTTPResponseError(statusCode: 401) }
                return "profile"
            }
        }
        withExtendedLifetime(outcome) {}
        #expect(refreshes.value == 2)
        #expect(probe.runs >= 2, "the old credential and the first refresh's error were released")
        #expect(probe.runsUnderTheLock == 0)
    }
}
