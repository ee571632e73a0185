import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A task an attempt started that outlived it (`Task { }`, which takes the attempt's task-local
/// scope) is not cancelled by a time limit or a hedging race around that attempt, however the two
/// are nested: a ``Timeout`` around a hedged call whose attempt the task outlived, or a hedged
/// attempt around a ``Timeout`` whose operation the task outlived. Its owner's cancellation reads
/// as a caller's, also while the limit or the race around the ended attempt has fired and the
/// code it cancelled is still running.
@Suite("A task outliving an attempt nested in a limit or a race of the other kind", .timeLimit(.minutes(5)))
struct TaskOutlivingNestedAttemptTests {
    static func policy(on clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(60)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
    }

    /// Work that does not end when its task is cancelled, sleeping `duration` on `clock`; counts
    /// the cancellation in `cancelled`, which the limit or the race fires its signal before.
    static func deafWork(for duration: Duration, on clock: TestClock, cancelled: Counter) async {
        await withTaskCancellationHandler {
            await Task { try? await clock.sleep(for: duration) }.value
        } onCancel: {
            cancelled.increment()
        }
    }

    /// `Timeout { Hedging { … } }` on `clock`, with a Timeout of 5 s: the first hedged attempt
    /// starts a task running `policy` around `work` and fails; the hedge starts at once and runs
    /// on, deaf to cancellation, for 100 s. Returns once the Timeout has fired and cancelled the
    /// hedge, so the Timeout's operation has not returned: the whole call, and the task the first
    /// attempt started, which outlived it inside the Timeout.
    static func timeoutFiredAroundADeafHedge(
        on clock: TestClock, policy: RetryPolicy, work: @escaping @Sendable () async throws -> Int
    ) async throws -> (call: Task<Int, any Error>, background: Task<RetryOutcome<Int>, Never>) {
        let timeout = try Timeout(.seconds(5), clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let attempts = Counter()
        let hedgeCancelled = Counter()
        let background = Slot<Task<RetryOutcome<Int>, Never>>()
        let call = Task {
            try await timeout.execute {
                try await hedging.execute { () async throws -> Int in
                    if attempts.increment() == 1 {
                        background.set(Task { await policy.outcome { try await work() } })
                        throw TransientError()  // the first attempt ends; the hedge starts at once
                    }
                    await Self.deafWork(for: .seconds(100), on: clock, cancelled: hedgeCancelled)
                    return 2
                }
            }
        }
        try await yieldUntil("the limit's timer, the background policy's backoff and the hedge's work sleep") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(5)) && requests.contains(.seconds(60))
                && requests.contains(.seconds(100))
        }
        clock.advance(by: .seconds(5))  // the Timeout fires, and cancels the hedge, which runs on
        try await yieldUntil("the Timeout cancelled the hedge") { hedgeCancelled.value == 1 }
        return (call, try #require(background.get))
    }

    /// `Timeout { Hedging { … } }`: the first hedged attempt starts a task and fails; the hedge
    /// runs on, deaf to cancellation, when the Timeout fires, so the Timeout's operation has not
    /// returned. The task outlived its attempt, inside the Timeout: the time-out is not its own,
    /// and its owner's cancellation ends the policy in it with `CancellationError`.
    @Test func aPolicyInATaskOutlivingAHedgedAttemptInAFiredTimeoutReadsItsOwnersCancellation() async throws {
        let clock = TestClock()
        let sends = Counter()
        let (call, task) = try await Self.timeoutFiredAroundADeafHedge(on: clock, policy: try Self.policy(on: clock)) {
            sends.increment()
            throw TransientError()
        }
        task.cancel()  // its owner gives up on it
        let outcome = await task.value
        #expect(sends.value == 1)
        #expect(outcome.result.failureValue is CancellationError, "\(outcome.result)")
        #expect(outcome.stopReason == .cancelled, "\(outcome.stopReason as Any)")
        clock.advance(by: .seconds(100))  // the hedge's work ends: its value, returned late, stays returned
        #expect(try await call.value == 2)
    }

    /// `Hedging { Timeout { … }; … }`: the first attempt's Timeout returns at once, its operation
    /// having started a task; the attempt runs on, deaf to cancellation, when a hedge wins and
    /// supersedes it. The task outlived the Timeout's operation, inside the superseded attempt:
    /// the supersession is not its own, and its owner's cancellation ends the policy in it with
    /// `CancellationError`.
    @Test func aPolicyInATaskOutlivingATimeoutInASupersededAttemptReadsItsOwnersCancellation() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let timeout = try Timeout(.seconds(30), clock: clock)
        let policy = try Self.policy(on: clock)
        let sends = Counter()
        let attempts = Counter()
        let firstCancelled = Counter()
        let background = Slot<Task<RetryOutcome<Int>, Never>>()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                guard attempts.increment() == 1 else { return 2 }  // the hedge wins at once
                try await timeout.execute {
                    background.set(
                        Task {
                            await policy.outcome { () async throws -> Int in
                                sends.increment()
                                throw TransientError()
                            }
                        })
                }
                await Self.deafWork(for: .seconds(100), on: clock, cancelled: firstCancelled)
                return 1
            }
        }
        try await yieldUntil("the hedge's timer, the background policy's backoff and the first attempt's work sleep") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(1)) && requests.contains(.seconds(60))
                && requests.contains(.seconds(100))
        }
        clock.advance(by: .seconds(1))  // the hedge wins; the first attempt is superseded, and runs on
        try await yieldUntil("the race superseded the first attempt") { firstCancelled.value == 1 }
        let task = try #require(background.get)
        task.cancel()  // its owner gives up on it
        let outcome = await task.value
        #expect(sends.value == 1)
        #expect(outcome.result.failureValue is CancellationError, "\(outcome.result)")
        #expect(outcome.stopReason == .cancelled, "\(outcome.stopReason as Any)")
        clock.advance(by: .seconds(100))  // the first attempt's work ends
        #expect(try await call.value == 2)
    }

    /// `Timeout { Hedging { … } }` as above; the policy in the task the first attempt started
    /// fails, and the Timeout fires while it waits to retry. Nothing cancelled the task: the fired
    /// Timeout around the hedged attempt it outlived does not end its policy, which retries, and
    /// succeeds.
    @Test func aPolicyInATaskOutlivingAHedgedAttemptInAFiredTimeoutStillRetries() async throws {
        let clock = TestClock()
        let sends = Counter()
        let (call, task) = try await Self.timeoutFiredAroundADeafHedge(on: clock, policy: try Self.policy(on: clock)) {
            if sends.increment() == 1 { throw TransientError() }
            return 42
        }
        clock.advance(by: .seconds(55))  // the background policy's backoff ends
        let outcome = await task.value
        #expect(!task.isCancelled)
        #expect(sends.value == 2, "\(outcome.stopReason as Any)")
        #expect((try? outcome.result.get()) == 42, "\(outcome.result), stop \(outcome.stopReason as Any)")
        clock.advance(by: .seconds(40))  // the hedge's work ends: its value, returned late, stays returned
        #expect(try await call.value == 2)
    }
}
