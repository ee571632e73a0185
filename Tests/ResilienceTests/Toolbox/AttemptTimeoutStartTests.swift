import ResilienceTesting
import Testing

@testable import Resilience

/// How a policy's per-attempt limit (``RetryPolicy/execute(attemptTimeout:idempotency:operation:)``)
/// starts each attempt: at once, in the caller's isolation, as a ``Timeout`` starts its operation.
///
/// A job queued on the caller's actor just before the call, or just before a retry, has not run
/// yet when the attempt reads the caller's state: a hop off the actor and back would let it run
/// first (an actor runs its jobs in order), and the attempt would see its write.
@Suite("Attempt time limit start", .timeLimit(.minutes(5)))
struct AttemptTimeoutStartTests {
    @MainActor final class Marker {
        var value = 0
        var attempts = 0
    }

    @DedicatedThread final class ThreadMarker {
        var value = 0
    }

    /// A marker at 1, with a main-actor job queued that sets it to 2.
    @MainActor static func armed() -> Marker {
        let marker = Marker()
        marker.value = 1
        Task { @MainActor in marker.value = 2 }
        return marker
    }

    /// Queues a main-actor job that sets `marker` to 2 each time a retry is scheduled, as the
    /// failure path's last step before the retry's attempt.
    struct ArmingObserver: RetryObserver {
        let marker: Marker

        func retryScheduled(_ event: RetryScheduledEvent) {
            let marker = self.marker
            Task { @MainActor in marker.value = 2 }
        }
    }

    @Test @MainActor func aMainActorCallersAttemptRunsBeforeAJobQueuedJustBeforeTheCall() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let first = Self.armed()
        #expect(
            try await policy.execute(attemptTimeout: .seconds(5)) { first.value } == 1,
            "execute(attemptTimeout:) hopped before the operation")
        let second = Self.armed()
        #expect(
            try await policy.outcome(attemptTimeout: .seconds(5), idempotency: .notIdempotent) { second.value }.get()
                == 1,
            "outcome(attemptTimeout:idempotency:) hopped before the operation")
    }

    /// A retry's attempt starts where the retry was decided, with no hop between: a job the
    /// observer queued as the retry was scheduled (a wait of zero, which does not sleep) has not
    /// run when the second attempt reads the marker.
    @Test @MainActor func aRetrysAttemptRunsBeforeAJobQueuedAsTheRetryWasScheduled() async throws {
        struct Refused: Error {}
        let marker = Marker()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, observer: ArmingObserver(marker: marker),
            clock: TestClock())
        let seen = try await policy.execute(attemptTimeout: .seconds(5)) { () throws -> Int in
            marker.attempts += 1
            if marker.attempts == 1 {
                marker.value = 1
                throw Refused()
            }
            return marker.value
        }
        #expect(marker.attempts == 2)
        #expect(seen == 1, "the retry's attempt started after a hop: the job queued before it ran first")
    }

    /// The same on a global actor of the test's own, whose jobs run on a thread of their own.
    @Test @DedicatedThread func aCustomGlobalActorCallersAttemptRunsBeforeAJobQueuedJustBeforeTheCall()
        async throws
    {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let marker = ThreadMarker()
        marker.value = 1
        Task { @DedicatedThread in marker.value = 2 }
        let seen = try await policy.execute(attemptTimeout: .seconds(5)) { () -> Int in
            #expect(DedicatedThread.executor.isCurrentThread, "the attempt ran off the actor's thread")
            return marker.value
        }
        #expect(seen == 1, "execute(attemptTimeout:) hopped before the operation on a custom global actor")
    }

    /// An attempt that returns before it first suspends ends the call within the caller's own job:
    /// no job is left on the caller's executor (a hop would leave one).
    @Test func anAttemptThatDoesNotSuspendEndsTheCallWithoutAHop() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let returned = Counter()
        let call = Task { @AttemptCounted in
            let value = try await policy.execute(attemptTimeout: .seconds(5)) {
                AttemptCounted.shared.assertIsolated()
                return 42
            }
            _ = returned.increment()
            return value
        }
        await AttemptCounted.executor.runOne()  // the caller's task: the whole call, with no job left
        #expect(returned.value == 1, "the call did not end within the caller's job")
        #expect(AttemptCounted.executor.pending == 0, "the call left \(AttemptCounted.executor.pending) jobs")
        try await AttemptCounted.executor.runJobs(until: "the call returned") { returned.value > 0 }
        #expect(try await call.value == 42)
    }

    /// A caller cancelled before the call starts its attempt cancelled, as a bare call would run it.
    @Test func aCallerAlreadyCancelledStartsItsAttemptCancelled() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await policy.execute(attemptTimeout: .seconds(5)) { Task.isCancelled }
        }
        #expect(try await call.value)
    }
}

/// A global actor whose jobs run only when a test runs them, counted as they wait.
@globalActor
private actor AttemptCounted {
    static let shared = AttemptCounted()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
