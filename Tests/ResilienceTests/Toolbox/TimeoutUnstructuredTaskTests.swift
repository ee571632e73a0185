import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A task the timed operation starts and does not await (`Task { }`) takes the operation's
/// task-local scope, the limit's signal with it, but not its cancellation: a limit that fired
/// and whose operation has returned ends nothing for a policy running in such a task.
@Suite("An unstructured task outliving a time limit", .timeLimit(.minutes(5)))
struct TimeoutUnstructuredTaskTests {
    private struct Transient: Error {}

    /// The limit fires and ends its own operation; the background attempt fails afterwards with
    /// a transient failure. Nothing cancelled its task: its policy retries, and succeeds.
    @Test func aPolicyInAnUnstructuredTaskOutlivingAFiredTimeoutStillRetries() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(2), name: "limit", clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let sends = Counter()
        let background = Slot<Task<RetryOutcome<Int>, Never>>()
        let call = Task {
            try await timeout.execute { () async throws -> Int in
                background.set(
                    Task {
                        await policy.outcome { () async throws -> Int in
                            if sends.increment() == 1 {
                                try await clock.sleep(for: .seconds(20))
                                throw Transient()
                            }
                            return 42
                        }
                    })
                try await clock.sleep(for: .seconds(10))
                return 1
            }
        }
        // The limit's timer, the timed operation's sleep, the background attempt's sleep.
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .seconds(3))  // the limit fires and cancels its own operation only
        let timed = await call.result
        #expect(timed.failureValue is TimeoutError, "\(timed)")
        clock.advance(by: .seconds(20))  // the background attempt fails, not cancelled
        let task = try #require(background.get)
        let outcome = await task.value
        #expect(!task.isCancelled)
        #expect(sends.value == 2, "\(outcome.stopReason as Any)")
        #expect((try? outcome.result.get()) == 42, "\(outcome.result), stop \(outcome.stopReason as Any)")
        #expect(outcome.stopReason != .cancelled, "reported cancelled, though nothing cancelled the task")
    }

    /// A task the operation of a nested limit started outlives that limit's attempt; the enclosing
    /// limit fires while the code after the nested limit runs on, deaf to cancellation, so its
    /// operation has not returned. The task's background attempt fails, and its policy waits to
    /// retry past the enclosing limit's deadline. Nothing cancelled the task: the enclosing limit
    /// does not end its policy, which retries, and succeeds.
    @Test func aPolicyInATaskOutlivingANestedTimeoutStillRetriesWhenTheEnclosingOneFires() async throws {
        let clock = TestClock()
        let outer = try Timeout(.seconds(5), name: "outer", clock: clock)
        let inner = try Timeout(.seconds(30), name: "inner", clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(60)), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let sends = Counter()
        let cancelled = Counter()
        let background = Slot<Task<RetryOutcome<Int>, Never>>()
        let call = Task {
            try await outer.execute { () async throws -> Int in
                try await inner.execute {
                    background.set(
                        Task {
                            await policy.outcome { () async throws -> Int in
                                if sends.increment() == 1 { throw Transient() }
                                return 42
                            }
                        })
                }
                // Work after the nested limit that does not end when the enclosing one cancels it.
                await withTaskCancellationHandler {
                    await Task { try? await clock.sleep(for: .seconds(100)) }.value
                } onCancel: {
                    cancelled.increment()
                }
                return 1
            }
        }
        try await yieldUntil("the outer limit's timer, the background policy's backoff and the work's sleep") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(5)) && requests.contains(.seconds(60))
                && requests.contains(.seconds(100))
        }
        clock.advance(by: .seconds(5))  // the outer limit fires, and cancels the work, which runs on
        try await yieldUntil("the outer limit cancelled the work") { cancelled.value == 1 }
        clock.advance(by: .seconds(55))  // the background policy's backoff ends
        let task = try #require(background.get)
        let outcome = await task.value
        #expect(!task.isCancelled)
        #expect(sends.value == 2, "\(outcome.stopReason as Any)")
        #expect((try? outcome.result.get()) == 42, "\(outcome.result), stop \(outcome.stopReason as Any)")
        clock.advance(by: .seconds(40))  // the work ends: its value, returned late, stays returned
        #expect(try await call.value == 1)
    }
}
