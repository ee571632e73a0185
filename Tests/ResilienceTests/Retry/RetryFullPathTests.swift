import ResilienceTesting
import Testing

@testable import Resilience

/// The full path of a ``RetryPolicy``: a policy whose settings (a deadline, an observer, a
/// throttle, a classifier that declares its calls not idempotent) or whose call (a declared
/// idempotency, an outcome) keep even a first attempt that succeeds in the retry loop.
///
/// The executor tests run the caller on ``FullPathCaller``, whose jobs run only when the
/// test runs them, so a hop off the caller's executor and back shows as a job left over.
@Suite("RetryPolicy full path", .serialized)
struct RetryFullPathTests {
    /// A call that takes the full path, and how it is made.
    enum Path: String, CaseIterable, CustomTestStringConvertible {
        case plain, deadline, notIdempotentClassifier, observer, throttle, declaredNotIdempotent, outcome
        case pipelineWithDeadline

        var testDescription: String { self.rawValue }

        func policy(clock: TestClock) throws -> RetryPolicy {
            switch self {
            case .plain, .declaredNotIdempotent, .outcome:
                return try RetryPolicy(clock: clock)
            case .deadline, .pipelineWithDeadline:
                return try RetryPolicy(deadline: .seconds(30), clock: clock)
            case .notIdempotentClassifier:
                return try RetryPolicy(classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
            case .observer:
                return try RetryPolicy(observer: FinishedCalls(), clock: clock)
            case .throttle:
                return try RetryPolicy(throttle: AdaptiveThrottle(clock: clock), clock: clock)
            }
        }
    }

    @Test(arguments: Path.allCases)
    func aCallerOnAnActorGetsAFirstAttemptsSuccessWithoutAHop(path: Path) async throws {
        let policy = try path.policy(clock: TestClock())
        // The policies of the other paths take the fast path; their calls still go through the loop.
        #expect(policy.canTakeFastPath == [.plain, .declaredNotIdempotent, .outcome].contains(path))
        let returned = Counter()
        let call = Task { @FullPathCaller in
            let value = try await Self.call(path, policy)
            _ = returned.increment()
            return value
        }
        await FullPathCaller.executor.runOne()  // the caller's task: the whole call, with no job left
        #expect(returned.value == 1)
        #expect(FullPathCaller.executor.pending == 0)
        await FullPathCaller.executor.run { returned.value > 0 }
        #expect(try await call.value == 42)
    }

    @MainActor
    @Test(arguments: Path.allCases)
    func aMainActorCallersOperationRunsOnTheMainActor(path: Path) async throws {
        let policy = try path.policy(clock: TestClock())
        let model = ProfileViewModel()
        let name = try await Self.callFromMainActor(path, policy, model)
        #expect(name == "Ada")
        #expect(model.loads == 1)
    }

    /// Calls `policy` as `path` does from ``FullPathCaller``; the operation checks that it runs there.
    @FullPathCaller
    static func call(_ path: Path, _ policy: RetryPolicy) async throws -> Int {
        switch path {
        case .plain, .deadline, .notIdempotentClassifier, .observer, .throttle:
            return try await policy.execute {
                FullPathCaller.shared.assertIsolated()
                return 42
            }
        case .declaredNotIdempotent:
            return try await policy.execute(idempotency: .notIdempotent) {
                FullPathCaller.shared.assertIsolated()
                return 42
            }
        case .outcome:
            return try await policy.outcome {
                FullPathCaller.shared.assertIsolated()
                return 42
            }.get()
        case .pipelineWithDeadline:
            return try await ResiliencePipeline { policy }.execute { @FullPathCaller in
                FullPathCaller.shared.assertIsolated()
                return 42
            }
        }
    }

    /// Calls `policy` as `path` does from the main actor, with an operation that changes `model`.
    @MainActor
    static func callFromMainActor(_ path: Path, _ policy: RetryPolicy, _ model: ProfileViewModel) async throws
        -> String
    {
        switch path {
        case .plain, .deadline, .notIdempotentClassifier, .observer, .throttle:
            return try await policy.execute {
                MainActor.preconditionIsolated()
                model.loads += 1
                return "Ada"
            }
        case .declaredNotIdempotent:
            return try await policy.execute(idempotency: .notIdempotent) {
                MainActor.preconditionIsolated()
                model.loads += 1
                return "Ada"
            }
        case .outcome:
            return try await policy.outcome {
                MainActor.preconditionIsolated()
                model.loads += 1
                return "Ada"
            }.get()
        case .pipelineWithDeadline:
            return try await ResiliencePipeline { policy }.execute { @MainActor in
                MainActor.preconditionIsolated()
                model.loads += 1
                return "Ada"
            }
        }
    }

    @Test func anOutcomeReportsTheTimeAFirstAttemptTook() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(clock: clock)
        let outcome = await policy.outcome(idempotency: .notIdempotent) {
            clock.advance(by: .seconds(2))
            return 1
        }
        #expect(try outcome.get() == 1)
        #expect(outcome.elapsed == .seconds(2))
        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.attempts == 1)
    }

    @Test func anObserverHearsTheTimeAFirstAttemptTook() async throws {
        let clock = TestClock()
        let observer = FinishedCalls()
        let policy = try RetryPolicy(observer: observer, clock: clock)
        let value = try await policy.execute {
            clock.advance(by: .seconds(3))
            return 1
        }
        #expect(value == 1)
        #expect(observer.finished == [.init(attempts: 1, reason: .succeeded, elapsed: .seconds(3))])
    }

    @Test func aSuccessAfterRetriesIsCountedInTheStatistics() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(30), clock: clock)
        let driver = Task.detached { await advanceThroughSleeps(clock, count: 1) }
        let calls = Counter()
        let value = try await policy.execute {
            if calls.increment() == 1 { throw TransientError() }
            return 7
        }
        await driver.value
        #expect(value == 7)
        let statistics = await policy.statistics
        #expect(statistics.failedAttempts == 1)
        #expect(statistics.retries == 1)
        #expect(statistics.stopReasons[.succeeded] == 1)
    }

    @Test func aFirstAttemptsSuccessLeavesTheStatisticsAlone() async throws {
        let policy = try RetryPolicy(deadline: .seconds(30), clock: TestClock())
        #expect(try await policy.execute { 1 } == 1)
        let statistics = await policy.statistics
        #expect(statistics.failedAttempts == 0)
        #expect(statistics.stopReasons.isEmpty)
    }
}

/// An observer that keeps what each finished call reported.
final class FinishedCalls: RetryObserver {
    struct Finish: Equatable {
        var attempts: Int
        var reason: RetryStopReason
        var elapsed: Duration
    }

    private let log = Lock<[Finish]>([])

    /// The finished calls, in order.
    var finished: [Finish] { self.log.withLock { $0 } }

    func callFinished(_ event: RetryCallFinishedEvent) {
        self.log.withLock {
            $0.append(Finish(attempts: event.attempts, reason: event.stopReason, elapsed: event.elapsed))
        }
    }
}

/// A global actor whose jobs run only when a test runs them, counted as they wait.
@globalActor
private actor FullPathCaller {
    static let shared = FullPathCaller()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
