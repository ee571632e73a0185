/// The rules that no classifier can change, applied to every failure at every
/// entry point before any classifier is asked.
///
/// 1. **Cancellation ends the call.** A failure in a cancelled task, or a
///    `CancellationError`, is never retried (``RetryStopReason/cancelled``).
/// 2. **HTTP 429 is never retried**, wherever it sits in the error's chain
///    (``RetryStopReason/tooManyRequests``). The server's retry-after hint is
///    still reported.
/// 3. **A request that is not idempotent is never sent twice once it may have
///    reached the server** (``RetryStopReason/notIdempotent``): after a timeout, a
///    dropped connection or any answer from the server, a 503 included. Only a
///    failure that proves the request never left (``RequestDelivery/notSent``)
///    lets it be sent again.
///
/// Two more rules are about counting, not retrying: a ``CircuitBreaker`` never
/// counts a call the caller cancelled, and always counts an attempt the
/// library's own time limit ended.
///
/// ```swift
/// let analysis = FailureAnalysis(error)
/// Rulebook.stopReason(for: analysis, idempotency: .notIdempotent)  // .notIdempotent after a timeout
/// ```
public enum Rulebook {
    /// The stop reason the rules impose on a failure, or `nil` when they leave it to the classifiers.
    ///
    /// - Parameters:
    ///   - analysis: The failure, read once.
    ///   - idempotency: Whether the call may run twice; the request's own report
    ///     (``FailureAnalysis/requestIdempotency``) wins over it.
    public static func stopReason(for analysis: FailureAnalysis, idempotency: Idempotency) -> RetryStopReason? {
        if analysis.interruption == .caller || analysis.interruption == .superseded { return .cancelled }
        if analysis.isTooManyRequests { return .tooManyRequests }
        let idempotency = analysis.requestIdempotency ?? idempotency
        if !idempotency.isIdempotent, !analysis.delivery.provesNotSent { return .notIdempotent }
        return nil
    }

    /// The idempotency a call is judged by: the request's own report, then the
    /// call's declaration, then the enclosing call's, then the classifier's, then idempotent.
    static func idempotency(
        of analysis: FailureAnalysis,
        declared: Idempotency?,
        classifier: any RetryClassifier
    ) -> Idempotency {
        analysis.requestIdempotency ?? declared ?? CallScope.current.idempotency ?? classifier.declaredIdempotency
            ?? .idempotent
    }
}
