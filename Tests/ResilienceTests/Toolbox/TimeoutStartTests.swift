import ResilienceTesting
import Testing

@testable import Resilience

/// How a ``Timeout`` starts its operation: at once, on the caller's thread when the
/// caller already runs where the operation must, and with no deadline to watch when
/// the operation returns before it first suspends.
///
/// The executor tests run the caller on ``Counted``, whose jobs run only when the test
/// runs them, so a hop (a job enqueued on the caller's executor) shows as a job left over.
@Suite("Timeout start", .serialized)
struct TimeoutStartTests {
    @Test func anOperationThatReturnsWithoutSuspendingLeavesNoDeadlineBehind() async throws {
        let timeout = try Timeout(.seconds(5), clock: TestClock())
        #expect(try await timeout.execute { 42 } == 42)
        // Its deadline was watched while it ran (it could have worked on without
        // suspending), and withdrawn as it returned, before the caller went on.
        #expect(timeout.watcher.registrations == 0)
    }

    @Test func anOperationThatSuspendsIsWatchedUntilItReturns() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(5), clock: clock)
        let call = Task { try await timeout.execute { try await clock.sleep(for: .seconds(1)) } }
        await clock.waitForSleepers(count: 2)  // the operation and the watcher
        #expect(timeout.watcher.registrations == 1)
        clock.advance(by: .seconds(1))
        try await call.value
        #expect(timeout.watcher.registrations == 0)
    }

    @Test func aCallerAlreadyCancelledStartsItsOperationCancelled() async throws {
        let timeout = try Timeout(.seconds(5), clock: TestClock())
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await timeout.execute { Task.isCancelled }
        }
        #expect(try await call.value)
    }

    @Test func aCallerOnAnActorRunsAnOperationThatDoesNotSuspendWithoutAHop() async throws {
        let timeout = try Timeout(.seconds(5), clock: TestClock())
        let returned = Counter()
        let call = Task { @Counted in
            let value = try await timeout.execute {
                Counted.shared.assertIsolated()
                return 42
            }
            _ = returned.increment()
            return value
        }
        await Counted.executor.runOne()  // the caller's task: the whole call, with no job left
        #expect(returned.value == 1)
        #expect(Counted.executor.pending == 0)
        await Counted.executor.run { returned.value > 0 }
        #expect(try await call.value == 42)
    }

    @Test func thePipelinesStagesRunOnTheCallersActorWithoutAHop() async throws {
        let pipeline = try ResiliencePipeline.standardHTTP(clock: TestClock())
        let returned = Counter()
        let call = Task { @Counted in
            let value = try await pipeline.execute { @Counted in
                Counted.shared.assertIsolated()
                return 7
            }
            _ = returned.increment()
            return value
        }
        await Counted.executor.runOne()
        #expect(returned.value == 1)
        #expect(Counted.executor.pending == 0)
        await Counted.executor.run { returned.value > 0 }
        #expect(try await call.value == 7)
    }

    @Test func exactlyOneSideSettlesTheStart() {
        let handedOver = TimeLimitSignal()
        #expect(handedOver.handOverAtStart())
        #expect(!handedOver.closeStart())
        let closed = TimeLimitSignal()
        #expect(closed.closeStart())
        #expect(!closed.handOverAtStart())
    }
}

/// A global actor whose jobs run only when a test runs them, counted as they wait.
@globalActor
private actor Counted {
    static let shared = Counted()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
