import Resilience

/// A failure that counts: no status, no hint.
struct ServiceFailure: Error, Equatable {}

/// An HTTP failure with an optional retry-after hint, as a networking layer would throw.
struct HTTPFailure: Error, HTTPStatusReporting, RetryAfterProviding {
    var httpStatusCode: Int?
    var retryAfter: Duration?

    init(status: Int, retryAfter: Duration? = nil) {
        self.httpStatusCode = status
        self.retryAfter = retryAfter
    }
}

/// Counts how many operations are inside at once, and the most there ever were.
final class ConcurrencyGauge: Sendable {
    private struct State {
        var current = 0
        var maximum = 0
        var total = 0
    }

    private let state = Lock(State())

    func enter() {
        self.state.withLock { state in
            state.current += 1
            state.total += 1
            state.maximum = max(state.maximum, state.current)
        }
    }

    func leave() {
        self.state.withLock { $0.current -= 1 }
    }

    var current: Int { self.state.withLock { $0.current } }
    var maximum: Int { self.state.withLock { $0.maximum } }
    var total: Int { self.state.withLock { $0.total } }
}

/// A counter that tasks can wait on until it reaches a value: an explicit sync point.
final class Countdown: Sendable {
    private struct State {
        var count = 0
        var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Lock(State())

    func increment() {
        let ready = self.state.withLock { state in
            state.count += 1
            let count = state.count
            let ready = state.waiters.filter { $0.target <= count }.map(\.continuation)
            state.waiters.removeAll { $0.target <= count }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    var count: Int { self.state.withLock { $0.count } }

    /// Returns once the count has reached `target`.
    func wait(untilReaching target: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = self.state.withLock { state in
                if state.count >= target { return true }
                state.waiters.append((target, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}

/// A gate that parks tasks until it is opened, so they all set off together: the
/// toolbox tests' `Gate`, which also counts who is waiting.
typealias StartingGate = Gate

/// Records every observer event.
final class RecordingBreakerObserver: CircuitBreakerObserver {
    private struct State {
        var changes: [CircuitBreakerStateChangeEvent] = []
        var rejections: [CircuitBreakerRejectionEvent] = []
    }

    private let state = Lock(State())

    func stateChanged(_ event: CircuitBreakerStateChangeEvent) {
        self.state.withLock { $0.changes.append(event) }
    }

    func callRejected(_ event: CircuitBreakerRejectionEvent) {
        self.state.withLock { $0.rejections.append(event) }
    }

    var changes: [CircuitBreakerStateChangeEvent] { self.state.withLock { $0.changes } }
    var rejections: [CircuitBreakerRejectionEvent] { self.state.withLock { $0.rejections } }
    var transitions: [String] {
        self.changes.map { "\($0.from)->\($0.to)" }
    }
}

extension CircuitBreaker {
    /// Runs one call that throws `error`, swallowing the error.
    func fail(with error: any Error = ServiceFailure()) async {
        _ = try? await self.execute { throw error }
    }
}
