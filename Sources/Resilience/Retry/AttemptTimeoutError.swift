/// The error an attempt ends with when it outlives its per-attempt timeout.
///
/// It is retryable: ``DefaultRetryClassifier`` retries it like any transient failure.
public struct AttemptTimeoutError: RetryableError, Hashable, CustomStringConvertible {
    /// The time the attempt was allowed.
    public let timeout: Duration

    /// Creates the error for an attempt allowed `timeout`.
    public init(timeout: Duration) {
        self.timeout = timeout
    }

    /// Always `true`: a timed-out attempt may succeed next time.
    public var isRetryable: Bool { true }

    /// `attempt timed out after …`.
    public var description: String { "attempt timed out after \(self.timeout)" }
}
