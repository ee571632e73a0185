import Foundation

/// The seed design's retry handler: a typical hand-written tutorial retry loop, ported to Swift 6 for comparison.
///
/// A class that holds its configuration and retries in a plain `while` loop:
/// exponential backoff from `baseDelay`, ±25% jitter, capped at `maximumDelay`,
/// a caller-supplied `shouldRetry` predicate, and `Task.sleep` between attempts.
/// The operation and the predicate are escaping closures, as in the original. Its
/// `execute` is an ordinary nonisolated `async` method, so under Swift 6 a
/// main-actor caller hops to the global executor and back on every call; the
/// operation had to become `@Sendable` for that to compile.
final class SeedDesignRetryHandler: Sendable {
    /// Attempts in all, counting the first (the original calls this `maxRetries`).
    let maximumRetries: Int
    /// The delay before the first retry, in seconds.
    let baseDelay: TimeInterval
    /// The cap on any delay, in seconds.
    let maximumDelay: TimeInterval

    /// A handler with the original's defaults: 3 attempts, 1 s base delay, 30 s cap.
    init(maximumRetries: Int = 3, baseDelay: TimeInterval = 1, maximumDelay: TimeInterval = 30) {
        self.maximumRetries = maximumRetries
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// Runs `operation`, retrying failures that `shouldRetry` accepts.
    func execute<T: Sendable>(
        operation: @escaping @Sendable () async throws -> T,
        shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true }
    ) async throws -> T {
        var lastError: (any Error)?
        var attempt = 0
        while attempt < self.maximumRetries {
            do {
                return try await operation()
            } catch {
                lastError = error
                guard shouldRetry(error) else { throw error }
                attempt += 1
                guard attempt < self.maximumRetries else { throw error }
                let delay = self.delay(forAttempt: attempt)
                try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            }
        }
        throw lastError ?? WorkloadError()
    }

    private func delay(forAttempt attempt: Int) -> TimeInterval {
        let exponential = self.baseDelay * pow(2, Double(attempt - 1))
        return Swift.min(exponential * Double.random(in: 0.75...1.25), self.maximumDelay)
    }
}
