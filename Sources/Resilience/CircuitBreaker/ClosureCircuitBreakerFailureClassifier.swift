/// A failure classifier made from a closure.
///
/// Build one with ``CircuitBreakerFailureClassifier/closure(_:)``.
public struct ClosureCircuitBreakerFailureClassifier: CircuitBreakerFailureClassifier {
    private let body: @Sendable (any Error) -> Bool

    /// Creates a classifier that calls `body` for each failed call.
    public init(_ body: @escaping @Sendable (any Error) -> Bool) {
        self.body = body
    }

    /// Returns what the closure returns.
    public func countsAsFailure(_ error: any Error) -> Bool {
        self.body(error)
    }
}
