import Synchronization

/// Holds one value handed across tasks: set by one, read by another.
final class Slot<T: Sendable>: Sendable {
    private let value = Mutex<T?>(nil)

    /// Stores `new`, in place of any value held.
    func set(_ new: T) { self.value.withLock { $0 = new } }

    /// The value held, or `nil` before one is set.
    var get: T? { self.value.withLock { $0 } }
}
