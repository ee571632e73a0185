/// The error a ``CircuitBreaker`` throws instead of running an operation it rejects.
///
/// It names the breaker and says how long until the breaker will let a call
/// through again. It adopts ``RetryAfterProviding``, so a ``RetryPolicy``
/// wrapped around the breaker waits out the open time like any server hint (or
/// stops, if the wait exceeds its ``RetryPolicy/maximumRetryAfter``), and
/// ``RetryableError``, so the default classifier retries it unless the breaker
/// is isolated.
///
/// ```swift
/// do {
///     try await breaker.execute { try await api.fetch() }
/// } catch let error as CircuitBreakerOpenError {
///     showBanner("\(error.breakerName) is unavailable; retry in \(error.retryAfter ?? .zero)")
/// }
/// ```
public struct CircuitBreakerOpenError: Error, RetryAfterProviding, RetryableError, RequestDeliveryReporting,
    Sendable, Hashable, CustomStringConvertible
{
    /// The name of the breaker that rejected the call.
    public let breakerName: String
    /// The breaker's state when it rejected the call: ``CircuitBreakerState/open``,
    /// ``CircuitBreakerState/halfOpen`` (every probe slot taken) or ``CircuitBreakerState/isolated``.
    public let state: CircuitBreakerState
    /// The time left before the breaker lets a probe through, when open; when half-open
    /// with every probe slot taken, the time until the earliest probe lease runs out.
    ///
    /// The half-open figure is an upper bound: a slot frees as soon as a probe finishes,
    /// which may be sooner, and at the latest when its lease expires. `nil` when isolated
    /// (only a reset ends it).
    ///
    /// Never shorter than the time left. With the system's `ContinuousClock` on Linux, an
    /// open breaker measures it from the kernel's coarse clocks, without a precise reading:
    /// it is then rounded up to whole milliseconds and may exceed the exact figure by up to
    /// two clock ticks and a millisecond. Any other clock, a test clock included, gives it
    /// exactly.
    public let retryAfter: Duration?

    /// Creates a rejection; breakers make these, tests may too.
    ///
    /// - Parameters:
    ///   - breakerName: The name of the breaker that rejected the call.
    ///   - state: The state that rejected it: open, half-open or isolated.
    ///   - retryAfter: The open time left (or, half-open, the time until a probe slot must
    ///     free), or `nil` when no one can say.
    public init(breakerName: String, state: CircuitBreakerState, retryAfter: Duration?) {
        self.breakerName = breakerName
        self.state = state
        self.retryAfter = retryAfter
    }

    /// Whether waiting can help: true unless the breaker is isolated, which only a manual reset ends.
    public var isRetryable: Bool {
        self.state != .isolated
    }

    /// Always ``RequestDelivery/notSent``: the breaker refused the call before it was made,
    /// so even a request that is not idempotent may be tried again.
    public var requestDelivery: RequestDelivery { .notSent }

    /// A sentence naming the breaker, its state and the remaining open time.
    public var description: String {
        guard let retryAfter else {
            return "circuit breaker '\(self.breakerName)' is \(self.state) and rejected the call"
        }
        return "circuit breaker '\(self.breakerName)' is \(self.state) and rejected the call; retry after \(retryAfter)"
    }
}
