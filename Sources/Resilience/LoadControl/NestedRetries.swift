/// Whether a ``RetryPolicy`` retries a failure that a policy nested inside its
/// operation already retried to exhaustion.
///
/// Retries multiply across layers: an SDK that makes 3 attempts inside an app
/// that makes 3 attempts inside a job that makes 3 sends 27 requests to a server
/// that is down. Google's *Site Reliability Engineering* book ("Handling
/// Overload") asks that only the layer right above the failing one retry. By
/// default (``innermostLayer``) a policy whose operation failed because an inner
/// policy ran out of attempts stops at once with
/// ``RetryStopReason/retriedByInnerPolicy``, and tells the layer above it the
/// same, so three nested policies of 3 attempts send 3 requests, not 27.
///
/// ```swift
/// let sdkPolicy = try RetryPolicy(maximumAttempts: 3)
/// let appPolicy = try RetryPolicy(maximumAttempts: 3)  // .innermostLayer
/// try await appPolicy.execute { try await sdkPolicy.execute { try await server.call() } }  // at most 3 calls
/// let stubborn = try RetryPolicy(maximumAttempts: 3, nestedRetries: .everyLayer)
/// ```
///
/// A policy that stopped for any other reason (its classifier said final, its
/// budget or deadline ran out) leaves the layer above free to judge the failure
/// itself.
public struct NestedRetries: Sendable, Hashable, CustomStringConvertible {
    /// Whether this layer retries what a layer below already retried to exhaustion.
    public let retriesExhaustedFailures: Bool

    private init(retriesExhaustedFailures: Bool) {
        self.retriesExhaustedFailures = retriesExhaustedFailures
    }

    /// Only the innermost policy retries a given failure; the default.
    public static let innermostLayer = NestedRetries(retriesExhaustedFailures: false)
    /// This policy retries failures whatever the policies inside it did: the opt-out.
    public static let everyLayer = NestedRetries(retriesExhaustedFailures: true)

    /// `innermostLayer` or `everyLayer`.
    public var description: String { self.retriesExhaustedFailures ? "everyLayer" : "innermostLayer" }
}

/// Where a policy that ran out of attempts leaves word for the policy around it.
///
/// A plain call may not install a task-local on its success path (it would cost
/// more than the call), so an outer policy has nothing in place when its first
/// attempt runs. Instead, a policy that exhausts its attempts records the failure
/// here, keyed by the current task and by the error (its type and description);
/// the policy around it, on its failure path in the same task, takes the record
/// and stops. Both sides run on failure paths only. Records that no outer policy
/// takes (a policy with nothing around it) are dropped oldest first past a small
/// bound, match only the same task and the same error, and are never taken by
/// a policy that wrote or passed them on (whose next call in the same task
/// would otherwise read its own stale record as an inner policy's). What this
/// cannot tell apart: two different policies called one after the other in one
/// task, the first running out of attempts and the second failing on its first
/// attempt with an error of the same type and description; the second then stops
/// after one attempt; likewise a record left by a task that has ended while its
/// policy lives on, if a new task reuses the task's identity and fails with the
/// same error. (A record whose policy is gone is dropped.) Both err towards
/// sending less; ``NestedRetries/everyLayer`` opts out.
enum NestedRetryLedger {
    /// How many records are kept at most. A record is taken, if at all, moments after
    /// it is written; the bound only limits what nobody takes, and must be large
    /// enough that many tasks failing at once do not push out a record in transit.
    static let capacity = 1_024

    struct Record {
        var task: Int
        var fingerprint: String
        /// The policies that passed the word on, innermost first. A policy never takes a
        /// record it is part of: that record is left from one of its own earlier calls.
        var writers: [ObjectIdentifier]
        /// The policy that wrote it, while it lives. A record whose writer is gone is
        /// stale: its task has ended, and a new task may have taken its identity.
        weak var writer: RetryPolicy?
    }

    private static let records = Lock<[Record]>([])

    /// Records that a policy in the current task retried `error` to exhaustion.
    ///
    /// - Parameter inner: The writers of the record this policy took, if it stopped because of one.
    static func recordExhausted(_ error: any Error, by writer: RetryPolicy, passingOn inner: [ObjectIdentifier]) {
        guard let task = self.currentTask else { return }
        self.insert(
            Record(
                task: task, fingerprint: self.fingerprint(of: error), writers: inner + [ObjectIdentifier(writer)],
                writer: writer))
    }

    /// Takes the record another policy left for `error` in the current task, if there is one;
    /// drops the taker's own record for it, which a previous call of the taker left behind.
    ///
    /// - Returns: The writers of the record taken, innermost first, or `nil` for none.
    static func takeExhausted(_ error: any Error, by taker: ObjectIdentifier) -> [ObjectIdentifier]? {
        guard let task = self.currentTask else { return nil }
        let fingerprint = self.fingerprint(of: error)
        return self.records.withLock { records in
            records.removeAll {
                $0.writer == nil || ($0.task == task && $0.fingerprint == fingerprint && $0.writers.contains(taker))
            }
            guard let index = records.lastIndex(where: { $0.task == task && $0.fingerprint == fingerprint }) else {
                return nil
            }
            return records.remove(at: index).writers
        }
    }

    /// Moves the records for `error` from the current task (a child) to `parent`.
    static func handOver(_ error: any Error, to parent: Int?) {
        guard let parent, let task = self.currentTask else { return }
        let fingerprint = self.fingerprint(of: error)
        self.records.withLock { records in
            for index in records.indices where records[index].task == task && records[index].fingerprint == fingerprint
            {
                records[index].task = parent
            }
        }
    }

    /// The current task's identity, while it runs.
    static var currentTask: Int? {
        withUnsafeCurrentTask { $0?.hashValue }
    }

    private static func insert(_ record: Record) {
        self.records.withLock { records in
            // A task's older record for the same error is superseded.
            records.removeAll { $0.task == record.task && $0.fingerprint == record.fingerprint }
            if records.count >= self.capacity { records.removeFirst() }
            records.append(record)
        }
    }

    private static func fingerprint(of error: any Error) -> String {
        "\(String(reflecting: type(of: error)))|\(String(describing: error))"
    }
}
