/// What a classifier knows about the call when it judges a failure.
public struct RetryContext: Sendable, Hashable {
    /// How many attempts have run, including the one that just failed (1 after the first failure).
    public var attempt: Int

    /// Creates a context; the policy makes these, tests of classifiers may too.
    public init(attempt: Int) {
        self.attempt = attempt
    }
}
