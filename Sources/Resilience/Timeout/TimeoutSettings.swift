/// What a ``Timeout`` holds: its name, its limit, its observer and its deadline watcher.
///
/// A class, so that a ``Timeout`` is one reference. A pipeline's stages are values, and
/// a pipeline copies the stages inside a stage into the operation it hands that stage,
/// on every call: with the name, the observer (an existential copied through its type's
/// value witnesses) and the watcher stored inline, each copy of a ``Timeout`` cost
/// about three retains and an existential copy, and the standard HTTP pipeline's
/// total timeout copies the attempt timeout several times per call. Immutable, so it
/// is `Sendable` as it is.
final class TimeoutSettings: Sendable {
    /// The name reported in errors and events.
    let name: String
    /// The time an operation is allowed.
    let duration: Duration
    /// Receives an event each time the limit ends an operation.
    let observer: (any StrategyObserver)?
    /// Watches the deadlines of the calls through the timeout and its copies.
    let watcher: DeadlineWatcher

    init(name: String, duration: Duration, observer: (any StrategyObserver)?, watcher: DeadlineWatcher) {
        self.name = name
        self.duration = duration
        self.observer = observer
        self.watcher = watcher
    }
}
