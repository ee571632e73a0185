import Resilience
import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(5)))
/// A call's deadline bounds its wait for a shared refresh, as it bounds every other wait.
struct RefreshDeadlineTests {
    static let operation = RefreshedTokenAPI.operation

    @Test func aCallStopsAtItsDeadlineWhileTheRefreshHangs() async throws {
        let clock = TestClock()
        let (recovery, gate) = Self.recoveryWithAHungRefresh(clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(10),
            clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        guard await Self.aTimerWatches(clock, releasing: gate) else { return }
        clock.advance(by: .seconds(10))
        let outcome = await call.value
        #expect(outcome.stopReason == .deadlineExceeded, "the hung refresh is not waited for past the deadline")
        #expect(outcome.attempts == 1)
        #expect(recovery.current.credential == "old", "the refresh is still running")
        gate.open()
        // The refresh goes on for the calls that come later; a fresh call gets its credential.
        let later = try await policy.execute(recovering: recovery, operation: Self.operation)
        #expect(later == "profile")
    }

    @Test func anEnclosingCallsDeadlineBoundsTheWaitToo() async throws {
        let clock = TestClock()
        let (recovery, gate) = Self.recoveryWithAHungRefresh(clock: clock)
        let outer = try RetryPolicy(
            maximumAttempts: 1, deadline: .seconds(5), clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 2))
        let call = Task {
            await outer.outcome {
                try await inner.execute(recovering: recovery, operation: Self.operation)
            }
        }
        await recovery.waitForWaitingCalls(count: 1)
        guard await Self.aTimerWatches(clock, releasing: gate) else { return }
        clock.advance(by: .seconds(5))
        let outcome = await call.value
        #expect(outcome.attempts == 1)
        #expect((try? outcome.get()) == nil, "the inner call gave up at the outer deadline")
        gate.open()
    }

    /// A recovery whose refresh answers `"new"` once the gate opens.
    static func recoveryWithAHungRefresh(clock: TestClock) -> (CredentialRecovery<String>, Gate) {
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            await gate.wait()
            return "new"
        }
        return (recovery, gate)
    }

    /// Whether a timer sleeps on the clock while the call waits for the refresh. Without one the
    /// call would wait for the hung refresh for ever: the test's time limit ends the wait, and
    /// the refresh is let go so that the call ends too.
    static func aTimerWatches(_ clock: TestClock, releasing gate: Gate) async -> Bool {
        await clock.waitForSleepers(count: 1)
        guard clock.sleeperCount >= 1 else {
            Issue.record("nothing bounds the wait for the refresh")
            gate.open()
            return false
        }
        return true
    }

    @Test func aCallWithoutADeadlineWaitsForTheRefresh() async throws {
        let clock = TestClock()
        let (recovery, gate) = Self.recoveryWithAHungRefresh(clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let call = Task { await policy.outcome(recovering: recovery, operation: Self.operation) }
        await recovery.waitForWaitingCalls(count: 1)
        clock.advance(by: .seconds(3600))
        gate.open()
        let outcome = await call.value
        #expect(try outcome.get() == "profile")
        #expect(clock.sleepRequests.isEmpty, "no timer was started for a call without a deadline")
    }
}
