import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A hedged attempt the race superseded counts as superseded for the calls inside it only while
/// the attempt runs: a call nested deeper (in a hedged call inside the attempt) reads it through
/// the signals around its own, and a task the attempt started that outlived it (`Task { }`, which
/// takes the attempt's task-local scope) does not, so its owner's cancellation reads as a caller's.
@Suite("Hedging: a superseded attempt counts only while it runs", .timeLimit(.minutes(5)))
struct HedgingSupersededScopeTests {
    static func policy(on clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(10)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
    }

    /// A policy in a hedged call nested in the first attempt of another waits to retry when a
    /// hedge of the outer call wins: the outer attempt is superseded, and the inner call's own
    /// attempt is cancelled as its caller's. The policy reads the supersession around it and ends
    /// with its last failure, as a race's loser does, not with a bare cancellation.
    @Test func aPolicyNestedDeeperInASupersededAttemptReadsTheSupersession() async throws {
        let clock = TestClock()
        let outer = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let inner = try Hedging(delay: .fixed(.seconds(100)), maximumHedges: 1, clock: clock)
        let policy = try Self.policy(on: clock)
        let nested = Slot<RetryOutcome<Int>>()
        let attempts = Counter()
        let call = Task {
            try await outer.execute { () async throws -> Int in
                guard attempts.increment() == 1 else { return 2 }  // the hedge wins at once
                return try await inner.execute { () async throws -> Int in
                    let outcome = await policy.outcome { () async throws -> Int in throw TransientError() }
                    nested.set(outcome)
                    return try outcome.result.get()
                }
            }
        }
        // The outer hedge's timer, the inner one's, and the policy's backoff.
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .seconds(1))  // the outer hedge wins; the first attempt is superseded
        #expect(try await call.value == 2)
        let outcome = try #require(nested.get)
        #expect(outcome.result.failureValue is TransientError, "\(outcome.result)")
    }

    /// A policy in a task the first attempt started, waiting to retry when a hedge wins and the
    /// first attempt ends superseded: the task outlived the attempt, and the supersession is not
    /// its own. Its owner then cancels it: the policy ends with the caller's cancellation.
    @Test func aPolicyInATaskOutlivingASupersededAttemptReadsItsOwnersCancellation() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let policy = try Self.policy(on: clock)
        let sends = Counter()
        let background = Slot<Task<RetryOutcome<Int>, Never>>()
        let attempts = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                guard attempts.increment() == 1 else { return 2 }  // the hedge wins at once
                background.set(
                    Task {
                        await policy.outcome { () async throws -> Int in
                            sends.increment()
                            throw TransientError()
                        }
                    })
                try await clock.sleep(for: .seconds(60))
                return 1
            }
        }
        // The hedge's timer, the first attempt's sleep, and the background policy's backoff.
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .seconds(1))  // the hedge wins; the first attempt is superseded, and ends
        #expect(try await call.value == 2)
        let task = try #require(background.get)
        task.cancel()  // its owner gives up on it
        let outcome = await task.value
        #expect(sends.value == 1)
        #expect(outcome.result.failureValue is CancellationError, "\(outcome.result)")
        #expect(outcome.stopReason == .cancelled, "\(outcome.stopReason as Any)")
    }
}
