import Resilience
import Synchronization

/// A failure that carries whatever hints a reliability test needs.
struct ReliabilityFailure: Error, Equatable, HTTPStatusReporting, RetryAfterProviding, RetryableError {
    var id = 0
    var httpStatusCode: Int?
    var retryAfter: Duration?
    var isRetryable = true
}

/// A lock-free counter that tests read while the code under test runs.
final class ReliabilityCounter: Sendable {
    private let storage = Atomic<Int>(0)

    /// Adds one and returns the new value.
    @discardableResult
    func increment() -> Int {
        self.storage.add(1, ordering: .relaxed).newValue
    }

    var value: Int {
        self.storage.load(ordering: .relaxed)
    }
}

/// A retry observer that counts every event, by kind and stop reason.
final class ReliabilityEventCounter: RetryObserver {
    private struct Counts {
        var attemptsFailed = 0
        var retriesScheduled = 0
        var callsFinished: [RetryStopReason: Int] = [:]
        var recordedCallsFinished: [RetryStopReason: Int] = [:]
        var budgetViolations: [Double] = []
    }

    private let counts = Lock(Counts())
    private let budget: RetryBudget?

    /// Creates a counter that also checks `budget` stays within its bounds at every event.
    init(checking budget: RetryBudget? = nil) {
        self.budget = budget
    }

    func attemptFailed(_ event: RetryAttemptFailedEvent) {
        let violation = self.budgetViolation()
        self.counts.withLock { counts in
            counts.attemptsFailed += 1
            if let violation { counts.budgetViolations.append(violation) }
        }
    }

    func retryScheduled(_ event: RetryScheduledEvent) {
        let violation = self.budgetViolation()
        self.counts.withLock { counts in
            counts.retriesScheduled += 1
            if let violation { counts.budgetViolations.append(violation) }
        }
    }

    func callFinished(_ event: RetryCallFinishedEvent) {
        self.counts.withLock { counts in
            counts.callsFinished[event.stopReason, default: 0] += 1
            // The policy's statistics leave out calls that succeeded at the first attempt.
            if event.stopReason != .succeeded || event.attempts > 1 {
                counts.recordedCallsFinished[event.stopReason, default: 0] += 1
            }
        }
    }

    var attemptsFailed: Int { self.counts.withLock { $0.attemptsFailed } }
    var retriesScheduled: Int { self.counts.withLock { $0.retriesScheduled } }
    var callsFinished: [RetryStopReason: Int] { self.counts.withLock { $0.callsFinished } }
    /// Finished calls as ``RetryStatistics/stopReasons`` counts them.
    var recordedCallsFinished: [RetryStopReason: Int] { self.counts.withLock { $0.recordedCallsFinished } }
    /// Token levels seen outside `0...maximumTokens`; empty when the budget behaved.
    var budgetViolations: [Double] { self.counts.withLock { $0.budgetViolations } }

    private func budgetViolation() -> Double? {
        guard let budget = self.budget else { return nil }
        let tokens = budget.tokens
        return (0...budget.maximumTokens).contains(tokens) ? nil : tokens
    }
}

/// A retry observer that lets a test wait until a given number of retries have been scheduled.
///
/// An explicit synchronization point for code paths where parked sleepers alone
/// are ambiguous, such as a per-attempt timer sleeping beside the operation.
final class ReliabilityRetryLatch: RetryObserver {
    private struct State {
        var scheduled = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Lock(State())

    func retryScheduled(_ event: RetryScheduledEvent) {
        let ready = self.state.withLock { state in
            state.scheduled += 1
            let scheduled = state.scheduled
            let ready = state.waiters.filter { $0.count <= scheduled }.map(\.continuation)
            state.waiters.removeAll { $0.count <= scheduled }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Suspends until at least `count` retries have been scheduled.
    func waitForRetries(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state in
                if state.scheduled >= count { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// The namespace of the reliability suites (stress, cancellation, time edges,
/// configuration), so that `swift test --filter Reliability` selects them all.
enum Reliability {}
