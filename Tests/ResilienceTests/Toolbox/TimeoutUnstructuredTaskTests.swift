import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// A task the timed operation starts and does not await (`Task { }`) takes the operation's
/// task-local scope, the limit's signal with it, but not its cancellation: a limit that fired
/// and whose operation has returned ends nothing for a policy running in such a task.
@Suite("An unstructured task outliving a time limit", .timeLimit(.minutes(5)))
struct TimeoutUnstructuredTaskTests {
    /// Holds one value handed across tasks.
    private final class Slot<T: Sendable>: Sendable {
        private let value = Mutex<T?>(nil)
        func set(_ new: T) { self.value.withLock { $0 = new } }
        var get: T? { self.value.withLock { $0 } }
    }

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
}
