import Synchronization

/// The generations a registry's breakers draw from, one counter for all of them, so that the
/// generations of one key keep rising after the registry forgets its breaker and makes another.
///
/// A breaker of its own numbers its generations from zero, one by one. A registry's breakers
/// share a name prefix and an observer, and a key's breaker may be forgotten at the bound and
/// made again: each transition of any of them takes the next number of this counter, so the
/// events of one name, sorted by generation, read in the order they happened. One word per
/// registry, whatever the keys it has forgotten.
package final class CircuitBreakerGenerations: Sendable {
    private let latest = Atomic<UInt64>(0)

    package init() {}

    /// The latest generation drawn: a new breaker's, before its first transition.
    package var current: UInt64 {
        self.latest.load(ordering: .relaxed)
    }

    /// A generation later than every one drawn before.
    package func next() -> UInt64 {
        self.latest.wrappingAdd(1, ordering: .relaxed).newValue
    }
}
