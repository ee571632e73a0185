import Foundation

/// Keeps a client under the quota a server publishes in its `RateLimit` field,
/// so that it waits for the reset instead of running into 429 Too Many Requests.
///
/// Record the field of every response, successful or not; before each request,
/// ask the gate how long to wait. While the last response said quota is left,
/// each request spends one unit of it locally; once none is left, requests wait
/// until the reset the server announced (at most ``maximumWait``). After the
/// reset the gate knows nothing until the next response tells it again.
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
        /// The quota left, as last reported and spent locally since; `nil` when unknown.
        var remaining: Int64?
        /// When the quota resets, as elapsed time on the gate's clock.
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

    /// Records the limits a response announced; the most constrained one governs.
    public func record(_ limits: [RateLimitHeader.ServiceLimit]) {
        guard let tightest = limits.min(by: { $0.remaining < $1.remaining }) else { return }
        let now = self.clock.now()
        self.state.withLock { state in
            state.remaining = tightest.remaining
            state.resetAt = tightest.reset.map { now + $0.clampedToResilienceRange }
        }
    }

    /// Reserves one request: the time to wait before sending it, zero when it may go now.
    public func reserve() -> Duration {
        let now = self.clock.now()
        return self.state.withLock { state in
            if let resetAt = state.resetAt, resetAt <= now {
                state = State()  // the quota has reset: unknown until the next response
            }
            guard let remaining = state.remaining else { return .zero }
            if remaining > 0 {
                state.remaining = remaining - 1
                return .zero
            }
            guard let resetAt = state.resetAt else { return .zero }
            return Swift.min(resetAt - now, self.maximumWait)
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
