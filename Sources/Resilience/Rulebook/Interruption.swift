/// Who stopped a call that ended because its task was cancelled.
///
/// The difference decides what a breaker counts: when the caller gives up, the
/// dependency did nothing wrong; when the library's own time limit ends an
/// attempt, the dependency was too slow, which is a failure. `Task.isCancelled`
/// is true in both cases, so the library records which it was when it cancels.
public struct Interruption: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier, such as `"caller"`.
    public let rawValue: String

    private init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The caller cancelled its task, or the operation threw `CancellationError`.
    public static let caller = Interruption(rawValue: "caller")
    /// A time limit of the library's (a policy's `attemptTimeout`) ended the attempt.
    public static let timeLimit = Interruption(rawValue: "timeLimit")
    /// Another attempt of the same call won a ``Hedging`` race, and this one was
    /// cancelled as no longer needed: neither a success nor a failure of the dependency.
    public static let superseded = Interruption(rawValue: "superseded")

    /// The identifier.
    public var description: String { self.rawValue }
}
