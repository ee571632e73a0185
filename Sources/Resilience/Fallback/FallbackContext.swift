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
    ///
    /// Read from ``analysis``, so the refusal counts wherever it sits in the error's
    /// chain: thrown as it is, under an `NSError`'s `NSUnderlyingErrorKey`, inside the
    /// library's own wrappers or an app's error that wraps it (see
    /// ``UnderlyingErrorProviding``). An inner breaker's ``CircuitBreakerOpenError`` is a
    /// refusal too, though a breaker outside counts it against the dependency
    /// (``FailureAnalysis/isLocalRejection``). A refusal beside an error that says the
    /// request may have left (one item of a batch, say) is not, and neither is a time-limited
    /// attempt that an enclosing deadline left no time to start
    /// (``LimiterRejectionError/Reason/noTimeLeft``): the deadline ran out, nothing shed load.
    public var isRejection: Bool {
        self.analysis.isRefusedBeforeRunning
    }
}
