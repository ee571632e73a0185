import Synchronization

/// What an operation knows about its own failed attempt that the error it throws cannot
/// say, handed to the retry loop through the call's options
/// (`RetryPolicy.CallOptions.attemptReport`).
///
/// The SQLite transaction helper uses it: it knows when an attempt provably left nothing
/// behind (`BEGIN` was refused, or the rollback succeeded), and when the attempt must not
/// be made again (the rollback failed, or SQLite rolled back the transaction a savepoint
/// was nested in). The operation reports just before it throws; the loop takes the report
/// once, for that failure, and clears it.
///
/// A report counts for the decisions of the call it was given to and no other: it is not
/// handed down to the calls nested in the operation, and the error the call ends with is
/// the operation's own, so an enclosing call judges that error by its own facts and
/// declaration.
final class AttemptReport: Sendable {
    /// What the operation said about its last failed attempt.
    enum Fact: UInt8 {
        /// Nothing: the failure is judged by its error alone.
        case none
        /// The attempt provably had no effect: judged as a request never sent
        /// (``RequestDelivery/notSent``), unless the error's chain says how far it got.
        case noEffect
        /// The attempt must not be made again, whatever a classifier says (``RetryStopReason/notRetryable``).
        case mustNotRepeat
    }

    private let fact = Atomic<UInt8>(Fact.none.rawValue)

    /// Records `fact` about the attempt about to throw.
    func report(_ fact: Fact) {
        self.fact.store(fact.rawValue, ordering: .releasing)
    }

    /// The fact reported about the failure being judged, clearing it.
    func take() -> Fact {
        Fact(rawValue: self.fact.exchange(Fact.none.rawValue, ordering: .acquiringAndReleasing)) ?? .none
    }
}
