import Foundation

/// Keeps a client under the quota a server publishes in its `RateLimit` field,
/// so that it waits for the reset instead of running into 429 Too Many Requests.
///
/// Record the field of every response, successful or not; before each request,
/// ask the gate how long to wait. While the last response said quota is left,
/// each request spends one unit of it locally; once none is left, requests wait
/// until the reset the server announced (at most ``maximumWait``). When the
/// server lists several quotas (per minute and per day, say), each request spends
/// a unit of every one, and requests wait for the latest reset among those spent.
/// After its reset a quota is unknown until the next response tells it again.
///
/// ```swift
/// let gate = RateLimitGate()
/// try await gate.acquire()                          // waits only when the quota is spent
/// let (data, response) = try await session.data(for: request)
/// gate.record(headers: response.allHeaderFields as? [String: String] ?? [:])
/// ```
///
/// The gate holds its state behind a lock that no user code and no wait runs under.
public final class RateLimitGate: Sendable {
    /// The longest wait the gate imposes; a later reset is cut to it.
    public let maximumWait: Duration

    private let clock: ElapsedClock
    private let state = Lock(State())

    private struct State {
        /// Each quota the last response announced, spent locally since; empty when none is known.
        var limits: [Limit] = []
    }

    /// One announced quota.
    private struct Limit {
        /// The quota left, as reported and spent locally since.
        var remaining: Int64
        /// When the quota resets, as elapsed time on the gate's clock; `nil` when not stated.
        var resetAt: Duration?
    }

    /// Creates a gate.
    ///
    /// - Parameters:
    ///   - maximumWait: The longest wait honoured; zero or more. Defaults to 60 s.
    ///   - clock: The clock for resets and waits; inject a test clock in tests.
    /// - Throws: ``ConfigurationError`` when `maximumWait` is negative.
    public init(
        maximumWait: Duration = .seconds(60),
        clock: some Clock<Duration> = ContinuousClock()
    ) throws(ConfigurationError) {
        try ConfigurationError.requireNonNegative(maximumWait, "maximumWait")
        self.maximumWait = maximumWait.clampedToResilienceRange
        self.clock = ElapsedClock(clock)
    }

    /// Records the `RateLimit` field among `headers` (names compared case-insensitively), if any.
    public func record(headers: [String: String]) {
        let value =
            headers[RateLimitHeader.fieldName]
            ?? headers.first { $0.key.caseInsensitiveCompare(RateLimitHeader.fieldName) == .orderedSame }?.value
        guard let value, let limits = RateLimitHeader.serviceLimits(parsing: value) else { return }
        self.record(limits)
    }

    /// Records the limits a response announced, replacing what earlier responses said.
    ///
    /// Every quota counts: a request spends one unit of each, and while any quota with a
    /// stated reset is spent, requests wait for the latest such reset (at most
    /// ``maximumWait``). A spent quota whose reset the server did not state holds nothing
    /// back, since the gate cannot tell when it frees.
    public func record(_ limits: [RateLimitHeader.ServiceLimit]) {
        guard !limits.isEmpty else { return }
        let now = self.clock.now()
        let recorded = limits.map {
            Limit(remaining: $0.remaining, resetAt: $0.reset.map { now + $0.clampedToResilienceRange })
        }
        self.state.withLock { state in state.limits = recorded }
    }

    /// Reserves one request: the time to wait before sending it, zero when it may go now.
    public func reserve() -> Duration {
        let now = self.clock.now()
        return self.state.withLock { state in
            // A quota past its reset is unknown until the next response.
            state.limits.removeAll { limit in limit.resetAt.map { $0 <= now } ?? false }
            let latestSpentReset = state.limits.lazy.filter { $0.remaining <= 0 }.compactMap(\.resetAt).max()
            if let latestSpentReset { return Swift.min(latestSpentReset - now, self.maximumWait) }
            // The request goes: it spends one unit of every quota that has one left.
            for index in state.limits.indices where state.limits[index].remaining > 0 {
                state.limits[index].remaining -= 1
            }
            return .zero
        }
    }

    /// Waits, on the gate's clock, until one request may be sent.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    public func acquire() async throws {
        let wait = self.reserve()
        guard wait > .zero else { return }
        try await self.clock.sleepUntil(self.clock.now() + wait)
    }
}
