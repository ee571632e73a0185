/// The executor a ``SerialSimulation`` runs its jobs on: a job that is re-enqueued
/// on it (a `Task.yield`, say) goes back to the simulation's queue, not to a thread.
final class SerialSimulationExecutor: SerialExecutor {
    /// The one executor, for the one queue.
    static let shared = SerialSimulationExecutor()

    private init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        SerialJobQueue.shared.enqueue(UnownedJob(job))
    }
}
