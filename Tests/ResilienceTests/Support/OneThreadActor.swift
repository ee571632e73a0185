import Foundation

/// A global actor whose jobs all run on one thread of its own, which nothing else runs on.
///
/// For tests of code that keeps state per thread (the breaker's rejection cache): isolated
/// to it, a scenario runs on one thread every time, and no other test's code runs on that
/// thread in between, as may happen on the main actor or the cooperative pool.
@globalActor
actor OneThreadActor {
    /// The one instance.
    static let shared = OneThreadActor()

    /// An executor of its own, not ``DedicatedThread``'s, so that no other test shares its thread.
    private let executor = DedicatedThreadExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.executor.asUnownedSerialExecutor()
    }
}
