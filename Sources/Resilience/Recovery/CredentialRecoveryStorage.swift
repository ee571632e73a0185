/// The lock-guarded state of a ``CredentialRecovery``, and the task that runs its refresh.
///
/// The refresh runs in a task of its own, not in any caller's, so that cancelling
/// one waiting call never cancels the refresh the other calls wait for. Callers
/// park on continuations that their own cancellation resumes at once.
final class CredentialRecoveryStorage<Credential: Sendable>: Sendable {
    typealias Stamped = (credential: Credential, generation: UInt64)
    typealias Waiter = CheckedContinuation<Result<Stamped, any Error>, Never>

    private let state: Lock<CredentialRecoveryStateMachine<Credential, Waiter>>
    private let refresh: @Sendable (Credential) async throws -> Credential

    init(credential: Credential, refresh: @escaping @Sendable (Credential) async throws -> Credential) {
        self.state = Lock(CredentialRecoveryStateMachine(credential: credential))
        self.refresh = refresh
    }

    var current: Stamped {
        self.state.withLock { $0.current }
    }

    var waiterCount: Int {
        self.state.withLock { $0.waiterCount }
    }

    func replace(with credential: Credential) -> Stamped {
        self.state.withLock { $0.replace(with: credential) }
    }

    /// Waits for the credential that follows generation `carried`, sharing one refresh among all callers.
    func recover(after carried: UInt64) async -> Result<Stamped, any Error> {
        let id = self.state.withLock { $0.makeWaiterID() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let action = self.state.withLock { $0.recover(after: carried, id: id, waiter: continuation) }
                switch action {
                case .resume(let result):
                    continuation.resume(returning: result)
                case .park:
                    break
                case .parkAndRefresh(let credential, let generation):
                    self.startRefresh(from: credential, generation: generation)
                }
            }
        } onCancel: {
            let waiter = self.state.withLock { $0.cancel(id: id) }
            waiter?.resume(returning: .failure(CancellationError()))
        }
        // A cancellation that came after the call was resumed another way left a note; drop it.
        self.state.withLock { $0.forget(id: id) }
        return result
    }

    private func startRefresh(from credential: Credential, generation: UInt64) {
        // Detached: the refresh belongs to no caller, inherits no caller's task-local
        // values or cancellation, and keeps this storage alive until it ends.
        Task.detached {
            let outcome: Result<Credential, any Error>
            do {
                outcome = .success(try await self.refresh(credential))
            } catch {
                outcome = .failure(error)
            }
            let (waiters, result) = self.state.withLock { $0.refreshFinished(from: generation, with: outcome) }
            for waiter in waiters {
                waiter.resume(returning: result)
            }
        }
    }
}
