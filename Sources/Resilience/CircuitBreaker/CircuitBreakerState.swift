/// The state of a ``CircuitBreaker``: closed, open, half-open or isolated.
///
/// - ``closed``: calls pass; failures are counted by the trip rule.
/// - ``open``: calls are rejected at once with ``CircuitBreakerOpenError`` until
///   the open time has passed.
/// - ``halfOpen``: a few probe calls pass; enough successes close the breaker, a
///   failure re-opens it.
/// - ``isolated``: held open by ``CircuitBreaker/isolate()`` until ``CircuitBreaker/reset()``.
///
/// A struct with static members rather than an enum, so that new states can be
/// added without breaking anyone's `switch`: compare with `==`.
public struct CircuitBreakerState: Sendable, Hashable, CustomStringConvertible {
    enum Kind: UInt8, Sendable, Hashable {
        case closed
        case open
        case halfOpen
        case isolated
    }

    let kind: Kind

    init(_ kind: Kind) {
        self.kind = kind
    }

    /// Calls pass and their results are counted.
    public static let closed = CircuitBreakerState(.closed)
    /// Calls are rejected until the open time has passed.
    public static let open = CircuitBreakerState(.open)
    /// A limited number of probe calls pass to test recovery.
    public static let halfOpen = CircuitBreakerState(.halfOpen)
    /// Held open by hand until reset.
    public static let isolated = CircuitBreakerState(.isolated)

    /// Whether calls are rejected outright: open or isolated.
    public var isOpen: Bool {
        self.kind == .open || self.kind == .isolated
    }

    /// `closed`, `open`, `halfOpen` or `isolated`.
    public var description: String {
        switch self.kind {
        case .closed: "closed"
        case .open: "open"
        case .halfOpen: "halfOpen"
        case .isolated: "isolated"
        }
    }
}
