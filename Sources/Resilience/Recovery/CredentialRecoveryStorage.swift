/// The lock-guarded state of a ``CredentialRecovery``, and the task that runs its refresh.
///
/// The refresh runs in a task of its own, not in any caller's, so that cancelling
/// one waiting call never cancels the refresh the other calls wait for. Callers
/// park on continuations that their own cancellation resumes at once.
final class CredentialRecoveryStorage<Credential: Sendable>: Sendable {
    typealias Stamped = (credential: Credential, generation: UInt64)
    typealias Waiter = CheckedContinuation<Answer, Never>

    /// How a call's wait for a credential ended.
    struct Answer: Sendable {
        /// The newer credential, or the error of the refresh (or the cancellation) that ended the wait.
        var result: Result<Stamped, any Error>
        /// The round of the refresh whose failure is in `result`, if one is.
        var failedRound: UInt64?
        /// When that failure's retry-after hint runs out on the recovery's clock, if it had one.
        var until: Duration?
        /// Whether the call waited for the answer (parked), rather than finding it at once.
        var waited = false

        init(_ result: Result<Stamped, any Error>, failed: (round: UInt64, until: Duration?)?) {
            self.result = result
            if case .failure = result, let failed {
                self.failedRound = failed.round
                self.until = failed.until
            }
        }
    }

    private struct State {
        var machine: CredentialRecoveryStateMachine<Credential, Waiter>
        /// The retry budget of each call that waits for the running refresh and has one, by the
        /// call's waiter ID (a call that leaves before the answer is taken out), and the generation
        /// the refresh started from: a failed refresh costs each distinct budget one token.
        var budgets: (generation: UInt64, byWaiter: [UInt64: RetryBudget]) = (0, [:])
        /// The REST classifiers of the calls that asked for the running refresh, one of each set of
        /// tables, and the generation the refresh started from: should the refresh fail with a code
        /// one of them lists as a failed token refresh, the failure is remembered for good. A call
        /// that leaves before the answer stays among them: the session is over for it too.
        var judges: (generation: UInt64, list: [RESTServiceErrorClassifier]) = (0, [])
        /// Tests waiting for a number of parked calls.
        var countWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Removes and returns the watchers whose count the parked calls now meet.
        mutating func satisfiedWatchers() -> [CheckedContinuation<Void, Never>] {
            let count = self.machine.waiterCount
            let ready = self.countWatchers.filter { count >= $0.count }.map(\.continuation)
            self.countWatchers.removeAll { count >= $0.count }
            return ready
        }
    }

    private let state: Lock<State>
    private let refresh: @Sendable (Credential) async throws -> Credential
    /// The clock that measures how long a failed refresh's retry-after hint is honoured.
    private let clock: ElapsedClock

    init(
        credential: Credential, clock: ElapsedClock,
        refresh: @escaping @Sendable (Credential) async throws -> Credential
    ) {
        self.state = Lock(State(machine: CredentialRecoveryStateMachine(credential: credential)))
        self.clock = clock
        self.refresh = refresh
    }

    var current: Stamped {
        self.state.withLock { $0.machine.current }
    }

    var waiterCount: Int {
        self.state.withLock { $0.machine.waiterCount }
    }

    var isLockHeld: Bool {
        self.state.isHeld
    }

    func replace(with credential: Credential) -> Stamped {
        // The replaced credential and a forgotten failure are released here, with the lock
        // released: their deinitializers are the app's code.
        let (stamped, _) = self.state.withLock { ($0.machine.replace(with: credential), $0.machine.takeLetGo()) }
        return stamped
    }

    /// Waits for the credential that follows generation `carried`, sharing one refresh among all callers.
    ///
    /// `seen` is the round of the last failed refresh the caller already got, if it asks again
    /// after one (see ``CredentialRecoveryStateMachine/recover(after:seen:id:waiter:at:)``).
    /// `budget` is the retry budget of the caller's policy, if any: a refresh the caller waits
    /// for and that fails costs it one token, however many callers with that budget shared it.
    /// `judge` is the REST classifier of the caller's policy that lists token refresh failure
    /// codes, if any: a refresh the caller waits for that fails with one is remembered for good.
    func recover(
        after carried: UInt64, seen: UInt64? = nil, budget: RetryBudget? = nil,
        judge: RESTServiceErrorClassifier? = nil
    ) async -> Answer {
        let id = self.state.withLock { $0.machine.makeWaiterID() }
        var parked = false
        var result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let now = self.clock.now()
                let (action, failed, watchers, _) = self.state.withLock { state in
                    let action = state.machine.recover(
                        after: carried, seen: seen, id: id, waiter: continuation, at: now)
                    switch action {
                    case .resume: break
                    case .park, .parkAndRefresh:
                        let generation = state.machine.current.generation
                        if state.budgets.generation != generation { state.budgets = (generation, [:]) }
                        if let budget { state.budgets.byWaiter[id] = budget }
                        if let judge {
                            if state.judges.generation != generation { state.judges = (generation, []) }
                            if !state.judges.list.contains(where: { $0.hasSameTables(as: judge) }) {
                                state.judges.list.append(judge)
                            }
                        }
                    }
                    return (action, state.machine.failedRound, state.satisfiedWatchers(), state.machine.takeLetGo())
                }
                for watcher in watchers { watcher.resume() }
                switch action {
                case .resume(let result):
                    continuation.resume(returning: Answer(result, failed: failed))
                case .park:
                    parked = true
                case .parkAndRefresh(let credential, let generation):
                    parked = true
                    self.startRefresh(from: credential, generation: generation)
                }
            }
        } onCancel: {
            let waiter = self.state.withLock { state in
                let waiter = state.machine.cancel(id: id)
                // A call that leaves before the answer (cancelled, or at its deadline) is not
                // charged for the refresh, unless another waiting call shares its budget.
                if waiter != nil { state.budgets.byWaiter[id] = nil }
                return waiter
            }
            waiter?.resume(returning: Answer(.failure(CancellationError()), failed: nil))
        }
        // A cancellation that came after the call was resumed another way left a note; drop it.
        self.state.withLock { $0.machine.forget(id: id) }
        result.waited = parked
        return result
    }

    /// The time left until `instant` on the recovery's clock; zero once it has passed.
    func timeLeft(until instant: Duration) -> Duration {
        Swift.max(instant - self.clock.now(), .zero)
    }

    private func startRefresh(from credential: Credential, generation: UInt64) {
        // Detached: the refresh belongs to no caller, inherits no caller's task-local
        // values or cancellation, and keeps this storage alive until it ends.
        Task.detached {
            let outcome: Result<Credential, any Error>
            var memory = RefreshFailureMemory.notAtAll
            do {
                outcome = .success(try await self.refresh(credential))
            } catch {
                outcome = .failure(error)
                // Read outside the lock: reading the error's chain may run the app's code.
                let judges = self.state.withLock { $0.judges.generation == generation ? $0.judges.list : [] }
                memory = RefreshFailure.memory(of: error, now: self.clock.now(), judges: judges)
            }
            let (waiters, answer, budgets, _) = self.state.withLock { [memory] state in
                let (waiters, result) = state.machine.refreshFinished(
                    from: generation, with: outcome, remembering: memory)
                // The next round's calls bring their own.
                if state.judges.generation == generation { state.judges.list = [] }
                var budgets: [RetryBudget] = []
                if state.budgets.generation == generation {
                    var seen = Set<ObjectIdentifier>()
                    budgets = state.budgets.byWaiter.values.filter { seen.insert(ObjectIdentifier($0)).inserted }
                    state.budgets.byWaiter = [:]
                }
                return (
                    waiters, Answer(result, failed: state.machine.failedRound), budgets, state.machine.takeLetGo()
                )
            }
            // The failure as the waiters get it: a refresh that ``replace(with:)`` overtook answers
            // them with the replacement, so its failure is not theirs and costs their budgets nothing.
            if case .failure(let error) = answer.result, !budgets.isEmpty {
                // One request was sent and failed: each budget of the calls that shared it pays
                // once, as for a failed attempt, unless it never left the device.
                let analysis = FailureAnalysis(error)
                if Rulebook.loadedTheDependency(analysis) {
                    for budget in budgets { budget.recordFailure() }
                }
            }
            for waiter in waiters {
                waiter.resume(returning: answer)
            }
        }
    }

    /// Suspends until at least `count` calls wait for a refresh; a synchronization point for tests.
    ///
    /// It does not return early on cancellation: tests bound it with a time limit.
    func waitForWaiters(count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isReady = self.state.withLock { state in
                if state.machine.waiterCount >= count { return true }
                state.countWatchers.append((count, continuation))
                return false
            }
            if isReady { continuation.resume() }
        }
    }
}
