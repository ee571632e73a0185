import Resilience

/// `retry.success`: a call through a shared ``RetryPolicy`` whose first attempt succeeds.
///
/// The policy has the package defaults (3 attempts, exponential backoff with full
/// jitter, the default classifier, no budget, no observer, no deadline), which is
/// what `try RetryPolicy()` gives a user.
struct RetrySuccess: OverheadSubject {
    let policy: RetryPolicy

    func call(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }
}
