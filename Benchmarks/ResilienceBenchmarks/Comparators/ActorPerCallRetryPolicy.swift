/// A naive actor design for retries, for comparison: every call hops into the
/// actor, which runs the operation and the whole retry loop.
///
/// The operation is `nonisolated(nonsending)`, so it really runs on the actor's
/// executor, as in a design that keeps all of a call's work inside the actor.
/// Backoff is plain exponential from `initialDelay`, with no jitter.
actor ActorPerCallRetryPolicy {
    /// Attempts in all, counting the first.
    let maximumAttempts: Int
    /// The delay before the first retry.
    let initialDelay: Duration
    /// Calls that succeeded, a typical piece of actor state.
    private(set) var successes = 0

    /// A policy with 3 attempts from a 100 ms delay.
    init(maximumAttempts: Int = 3, initialDelay: Duration = .milliseconds(100)) {
        self.maximumAttempts = maximumAttempts
        self.initialDelay = initialDelay
    }

    /// Runs `operation` on this actor, retrying failures.
    func execute<T: Sendable>(_ operation: nonisolated(nonsending) @Sendable () async throws -> T) async throws -> T {
        var attempt = 1
        var delay = self.initialDelay
        while true {
            do {
                let value = try await operation()
                self.successes &+= 1
                return value
            } catch {
                if attempt >= self.maximumAttempts || error is CancellationError { throw error }
                try await Task.sleep(for: delay)
                attempt += 1
                delay *= 2
            }
        }
    }
}
