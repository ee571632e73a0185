/// What a ``Fallback`` knows when it answers: the original failure, unchanged, and its reading.
public struct FallbackContext: Sendable {
    /// The error the call finally failed or was rejected with.
    public let error: any Error
    /// The failure read once by the same analysis every strategy uses.
    public let analysis: FailureAnalysis

    /// Creates a context for `error`.
    public init(error: any Error, analysis: FailureAnalysis) {
        self.error = error
        self.analysis = analysis
    }

    /// Whether the call was refused before it ran: a breaker open, a limiter full,
    /// an adaptive throttle shedding load (the request provably never left,
    /// ``RequestDelivery/notSent``).
    public var isRejection: Bool {
        self.error is CircuitBreakerOpenError || self.error is LimiterRejectionError
            || self.error is AdaptiveThrottleRejection
    }
}
