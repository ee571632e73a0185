import Dispatch
import Foundation

/// The seed design's circuit breaker: a typical hand-written tutorial breaker, ported to Swift 6 for comparison.
///
/// A class whose state (closed, open, half-open; failure and success counts; the
/// time of the last failure) is guarded by a private serial `DispatchQueue`:
/// every call enters the queue with `sync` once to check the state and once to
/// record the result. It opens after `failureThreshold` consecutive failures,
/// moves to half-open after `timeout`, and closes after `successThreshold`
/// successes there. Like the original, `execute` is an ordinary nonisolated `async`
/// method taking an escaping closure.
final class SeedDesignCircuitBreaker: Sendable {
    /// The breaker's states, as in the original.
    enum State: Sendable {
        case closed
        case open
        case halfOpen
    }

    private struct Counters {
        var state = State.closed
        var failureCount = 0
        var successCount = 0
        var lastFailureTime: Date?
    }

    /// Consecutive failures that open the breaker.
    let failureThreshold: Int
    /// Successes in half-open that close it.
    let successThreshold: Int
    /// Seconds the breaker stays open before letting a call through.
    let timeout: TimeInterval

    private let queue = DispatchQueue(label: "resilience-benchmarks.seed-design.circuit-breaker")
    // The original design: mutable state whose every access happens inside
    // `queue.sync`. The compiler cannot check that, hence `nonisolated(unsafe)`;
    // this comparator exists to measure that design, not to recommend it.
    nonisolated(unsafe) private var counters = Counters()

    /// A breaker with the original's defaults: 5 failures, 2 successes, 60 s.
    init(failureThreshold: Int = 5, successThreshold: Int = 2, timeout: TimeInterval = 60) {
        self.failureThreshold = failureThreshold
        self.successThreshold = successThreshold
        self.timeout = timeout
    }

    /// Runs `operation` unless the breaker is open; records its result.
    ///
    /// - Throws: ``SeedDesignCircuitOpenError`` when open, or the operation's error.
    func execute<T: Sendable>(operation: @escaping @Sendable () async throws -> T) async throws -> T {
        switch self.checkAndUpdateState() {
        case .open:
            throw SeedDesignCircuitOpenError()
        case .closed, .halfOpen:
            do {
                let result = try await operation()
                self.recordSuccess()
                return result
            } catch {
                self.recordFailure()
                throw error
            }
        }
    }

    /// Forces the breaker open, as if `failureThreshold` calls had just failed.
    func trip() {
        self.queue.sync {
            self.counters.state = .open
            self.counters.failureCount = self.failureThreshold
            self.counters.lastFailureTime = Date()
        }
    }

    private func checkAndUpdateState() -> State {
        self.queue.sync {
            if self.counters.state == .open, let lastFailure = self.counters.lastFailureTime,
                Date().timeIntervalSince(lastFailure) >= self.timeout
            {
                self.counters.state = .halfOpen
                self.counters.successCount = 0
                self.counters.failureCount = 0
            }
            return self.counters.state
        }
    }

    private func recordSuccess() {
        self.queue.sync {
            self.counters.successCount += 1
            self.counters.failureCount = 0
            if self.counters.state == .halfOpen && self.counters.successCount >= self.successThreshold {
                self.counters.state = .closed
                self.counters.successCount = 0
            }
        }
    }

    private func recordFailure() {
        self.queue.sync {
            self.counters.failureCount += 1
            self.counters.successCount = 0
            self.counters.lastFailureTime = Date()
            if self.counters.failureCount >= self.failureThreshold {
                self.counters.state = .open
            }
        }
    }
}

/// The error ``SeedDesignCircuitBreaker`` throws while open.
struct SeedDesignCircuitOpenError: Error {}
