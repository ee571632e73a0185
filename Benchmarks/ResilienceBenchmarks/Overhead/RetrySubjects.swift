import Resilience
import Synchronization

/// `retry.success`: a call through a shared ``RetryPolicy`` whose first attempt succeeds.
///
/// The policy has the package defaults (3 attempts, exponential backoff with full
/// jitter, the default classifier, no budget, no observer, no deadline), which is
/// what `RetryPolicy()` gives a user.
struct RetrySuccess: OverheadSubject {
    let policy: RetryPolicy

    func call(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }
}

/// The full-path rows: a policy whose first attempt succeeds, but that a setting keeps off
/// the fast path, so every call goes through the retry loop.
enum RetryFullPathFixtures {
    /// `retry.success.deadline`: the defaults and a one-hour deadline, which the call hands
    /// down to the calls nested in it.
    static func deadline() throws -> RetryPolicy { try RetryPolicy(deadline: .seconds(3_600)) }

    /// `retry.success.not-idempotent`: a classifier that declares its calls not idempotent
    /// (an HTTP `POST`), a declaration the call hands down.
    static func notIdempotent() throws -> RetryPolicy {
        try RetryPolicy(classifier: HTTPRetryClassifier(method: "POST"))
    }

    /// `retry.success.observer`: an observer that counts finished calls.
    static func observed() throws -> RetryPolicy { try RetryPolicy(observer: FinishedCallCounter()) }

    /// `pipeline.retry-deadline.success`: a pipeline of one stage, a policy with a deadline.
    static func deadlinePipeline() throws -> ResiliencePipeline<RetryPolicy> {
        try ResiliencePipeline { try deadline() }
    }
}

/// An observer that counts the calls that finished, the least an observer does per call.
final class FinishedCallCounter: RetryObserver {
    private let count = Atomic<Int>(0)

    func callFinished(_ event: RetryCallFinishedEvent) {
        self.count.add(1, ordering: .relaxed)
    }
}

/// `retry.success.deadline`, `retry.success.not-idempotent`, `retry.success.observer`: a
/// call through a shared ``RetryPolicy`` that takes the full path, first attempt succeeding.
struct RetryFullPathSuccess: OverheadSubject {
    let policy: RetryPolicy

    func call(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `retry.success.declared-not-idempotent`: the default policy, the call declared not
/// idempotent by its caller (`execute(idempotency: .notIdempotent)`), first attempt succeeding.
struct RetryDeclaredNotIdempotentSuccess: OverheadSubject {
    let policy: RetryPolicy

    func call(_ input: Int) async -> Int {
        (try? await self.policy.execute(idempotency: .notIdempotent) { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.policy.execute(idempotency: .notIdempotent) { try await Workload.operation(input) }) ?? input
    }
}

/// `pipeline.retry-deadline.success`: a pipeline whose one stage is a policy with a deadline.
struct RetryDeadlinePipelineSuccess: OverheadSubject {
    let pipeline: ResiliencePipeline<RetryPolicy>

    func call(_ input: Int) async -> Int {
        (try? await self.pipeline.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.pipeline.execute { try await Workload.operation(input) }) ?? input
    }
}
