import Synchronization

/// Counts attempts from inside operations that may run in any task.
final class AttemptTally: Sendable {
    private let value = Atomic(0)

    /// Records an attempt and returns its number, 1 for the first.
    func next() -> Int {
        self.value.add(1, ordering: .relaxed).newValue
    }

    /// How many attempts were recorded.
    var count: Int {
        self.value.load(ordering: .relaxed)
    }
}
