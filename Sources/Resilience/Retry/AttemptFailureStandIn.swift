/// A failure an attempt throws for the policy to judge in place of the error its operation threw,
/// while observers hear of that error.
///
/// The CloudKit batch helper judges a partial failure by the items it sends again, so the
/// failure the rules read holds their errors only; an observer's ``RetryAttemptFailedEvent``,
/// ``RetryScheduledEvent`` and ``RetryCallFinishedEvent`` carry the partial failure the operation
/// threw, as documented, never the library's stand-in.
protocol AttemptFailureStandIn: Error {
    /// The error observers hear of: the one the operation threw, or, for an attempt whose
    /// operation threw none (`operationThrew`), the failure of an earlier attempt that ends the call.
    var reportedError: any Error { get }
    /// Whether the attempt ends the call with ``RetryStopReason/notIdempotent``, whatever the
    /// rules would read in it: it left nothing to send again, but items that may have been
    /// applied were held back. The call reached its dependency, as a call that succeeded did:
    /// the calls around it hear so, and the throttle and the budget count it as one.
    var endsTheCallAsNotIdempotent: Bool { get }
    /// Whether the attempt's operation threw `reportedError`; `false` for an attempt whose
    /// operation returned, which no ``RetryAttemptFailedEvent`` reports and no count takes as failed.
    var operationThrew: Bool { get }
}

extension AttemptFailureStandIn {
    var endsTheCallAsNotIdempotent: Bool { false }
    var operationThrew: Bool { true }
}

/// The error an observer hears of for `error`: the error it stands in for, if it is a stand-in.
func reportedError(_ error: any Error) -> any Error {
    (error as? any AttemptFailureStandIn)?.reportedError ?? error
}

/// Whether `error` is a stand-in that ends its call as not idempotent (see
/// `AttemptFailureStandIn.endsTheCallAsNotIdempotent`). Failure path only.
@usableFromInline
func endsTheCallAsNotIdempotent(_ error: any Error) -> Bool {
    (error as? any AttemptFailureStandIn)?.endsTheCallAsNotIdempotent ?? false
}
