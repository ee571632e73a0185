import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// Holds a task another task cancels.
final class CancellableTaskHolder: Sendable {
    private let task = Lock<Task<Int, any Error>?>(nil)
    func set(_ task: Task<Int, any Error>) { self.task.withLock { $0 = task } }
    func cancel() { self.task.withLock { $0 }?.cancel() }
}

/// A failure that asks for quiet.
struct BusyWithHint: Error, RetryAfterProviding { var retryAfter: Duration? }

/// Seams between this package's own rules: nested declarations, stored errors, a
/// cancellation racing a deadline, hedging around a policy that knows its request.
@Suite("The rules hold between nested declarations, stored errors and racing deadlines")
struct NestedDeclarationSeamTests {
    static func plain(_ clock: TestClock, _ nested: NestedRetries = .innermostLayer) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, nestedRetries: nested, clock: clock)
    }

    // An outer POST classifier must not override an inner policy whose own classifier knows its request is a GET.
    @Test func anInnerGETClassifierStillRetriesInsideAPOSTClassifierPolicy() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
        let tokenFetch = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "GET"), clock: clock)
        let gets = Counter()
        _ = await outer.outcome {
            // refresh a token (a GET that knows it is a GET) before the POST is sent
            try await tokenFetch.execute { () throws -> Int in
                gets.increment()
                throw URLError(.timedOut)
            }
        }
        #expect(gets.value == 3, "the GET was tried \(gets.value) times")
    }

    // A caller cancelled after the watcher took the deadline as due, before the expiry ran,
    // must still have its attempt cancelled.
    @Test func aCallerCancelledWhileItsDeadlineIsBeingHandledStillCancelsTheOperation() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let holder = CancellableTaskHolder()
        let a = Task {
            try await timeout.execute { () async throws -> Int in
                try await withTaskCancellationHandler {
                    try await clock.sleep(for: .seconds(3600))
                } onCancel: {
                    holder.cancel()  // runs on the watcher's thread, between the two expiries
                }
                return 0
            }
        }
        await clock.waitForSleepers(count: 2)  // A's operation and the watcher (until t = 1 s)
        clock.advance(by: .milliseconds(500))
        let b = Task {
            try await timeout.execute { () async throws -> Int in
                try await clock.sleep(for: .seconds(3600))
                return 42
            }
        }
        holder.set(b)
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .seconds(1))  // t = 1.5 s: both deadlines due in one look; A's expiry runs first
        await #expect(throws: TimeoutError.self) { try await a.value }
        // B's operation must stop sleeping: its caller was cancelled past its deadline.
        try await yieldUntil("B's operation stopped sleeping") { clock.sleeperCount == 0 }
        clock.advance(by: .seconds(3600))
        let result = await b.result
        #expect(throws: (any Error).self, "a cancelled call whose deadline passed returned a value") {
            try result.get()
        }
    }

    // A hedged call waiting out a retry-after hint ends with CancellationError when the caller cancels.
    @Test func aHedgedCallCancelledWhileWaitingOutAHintEndsWithCancellationError() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                attempts.increment()
                throw BusyWithHint(retryAfter: .milliseconds(500))
            }
        }
        await clock.waitForSleepers(count: 1)  // the watcher, for the hint's end
        call.cancel()
        let result = await call.result
        #expect(throws: CancellationError.self) { try result.get() }
    }

    // A POST-classifier policy inside a hedged attempt: Hedging's default `.idempotent` must
    // not mask the classifier's hand-down, or the attempt is not marked and a copy starts.
    @Test(arguments: ["POST", "GET"])
    func noHedgeCopiesAnAttemptHoldingAPOSTPolicy(_ method: String) async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: method), clock: clock)
        let sends = Counter()
        let call = Task {
            try await hedging.execute {
                try await policy.execute { () async throws -> Int in
                    sends.increment()
                    try await clock.sleep(for: .seconds(5))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the first send and the hedge timer
        clock.advance(by: .seconds(1))
        for _ in 0..<5000 where sends.value < 2 { await Task.yield() }
        let seen = sends.value
        clock.advance(by: .seconds(10))
        _ = await call.result
        // A GET may be hedged: it is the control that shows a copy would have started.
        #expect(seen == (method == "POST" ? 1 : 2), "\(method) sent \(seen) times")
    }
}
