import Resilience
import ResilienceTesting

/// What one nested retry call did, as the nested-retry suites compare it: the attempts it sent
/// and the outermost call's stop.
struct NestedSend: Equatable, CustomStringConvertible {
    var attempts: Int
    var stop: RetryStopReason?

    var description: String { "\(self.attempts) \(self.stop.map { "\($0)" } ?? "nil")" }

    /// What layers of three attempts send around one another: three, the outer call stopping
    /// because the inner policy retried.
    static let nested = NestedSend(attempts: 3, stop: .retriedByInnerPolicy)

    /// The policy these suites nest: three attempts, a constant 10 ms backoff, no jitter.
    static func policy(_ clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.milliseconds(10)), jitter: .none, clock: clock)
    }
}
