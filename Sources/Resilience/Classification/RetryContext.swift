/// What a classifier knows about the call when it judges a failure.
public struct RetryContext: Sendable, Hashable {
    /// How many attempts have run, including the one that just failed (1 after the first failure).
    public var attempt: Int
    /// Whether the call may run twice, as the hard rules judged it (see ``Idempotency``).
    ///
    /// A failure reaches a classifier only when the rules allow another attempt,
    /// so for a call that is not idempotent the failure proved the request was never sent.
    public var idempotency: Idempotency
    /// Whether a call declared ``idempotency``: this call (`execute(idempotency:)`, the
    /// `idempotency:` of ``RetryAdvice``) or one enclosing it (a policy's, a pipeline's, a
    /// ``Timeout``'s or a ``Hedging``'s declared call), rather than a classifier's word
    /// (``RetryClassifier/declaredIdempotency``) or the default.
    ///
    /// A classifier that needs an explicit word before it repeats a request of unknown outcome
    /// reads it: ``CloudKitRetryClassifier`` and ``DefaultRetryClassifier`` retry CloudKit's
    /// `serverResponseLost` when the call was declared idempotent; without a declaration, only a
    /// ``CloudKitRetryClassifier`` made with `operationIsIdempotent: true` does.
    public var idempotencyIsDeclared: Bool
    /// The facts the library read from the failure, if it has read them.
    public var analysis: FailureAnalysis?

    /// Creates a context; the policy makes these, tests of classifiers may too.
    ///
    /// - Parameters:
    ///   - attempt: Attempts run so far, including the one that failed.
    ///   - idempotency: Whether the call may run twice; idempotent unless given.
    ///   - analysis: The failure's facts, if read.
    ///   - idempotencyIsDeclared: Whether a call declared `idempotency`; not unless given.
    public init(
        attempt: Int, idempotency: Idempotency = .idempotent, analysis: FailureAnalysis? = nil,
        idempotencyIsDeclared: Bool = false
    ) {
        self.attempt = attempt
        self.idempotency = idempotency
        self.idempotencyIsDeclared = idempotencyIsDeclared
        self.analysis = analysis
    }
}
