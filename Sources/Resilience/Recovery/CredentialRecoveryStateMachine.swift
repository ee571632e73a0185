/// The decisions of a ``CredentialRecovery``, with no locks and no awaits.
///
/// It holds the current credential and its generation, whether a refresh is
/// running, the failure of the last refresh, and the parked waiters. Each method
/// returns what the caller must do after releasing the lock: resume waiters,
/// start the refresh. `Waiter` is whatever the storage resumes (a continuation);
/// tests use plain values.
package struct CredentialRecoveryStateMachine<Credential, Waiter> {
    /// The credential calls use now.
    package private(set) var credential: Credential
    /// How many times the credential changed: by a successful refresh or a replacement.
    package private(set) var generation: UInt64 = 0
    /// The generation the running refresh started from, if one is running for the current generation.
    package private(set) var refreshingGeneration: UInt64?
    /// The error of the last refresh that is remembered, the generation it tried to replace,
    /// and until when it is remembered (`nil`: until a new credential replaces that generation).
    private var failure: (generation: UInt64, error: any Error, until: Duration?)?
    /// The calls waiting for a refresh, by ID and by the generation that refresh replaces, in arrival order.
    private var waiters: [(id: UInt64, generation: UInt64, waiter: Waiter)] = []
    /// Waiters cancelled before they parked, by ID.
    private var cancelledBeforeParking: Set<UInt64> = []
    private var nextID: UInt64 = 0

    package init(credential: Credential) {
        self.credential = credential
    }

    /// The number of calls waiting for the running refresh.
    package var waiterCount: Int { self.waiters.count }

    /// A fresh ID for a waiter.
    package mutating func makeWaiterID() -> UInt64 {
        self.nextID += 1
        return self.nextID
    }

    /// The credential now, stamped with its generation.
    package var current: (credential: Credential, generation: UInt64) {
        (self.credential, self.generation)
    }

    /// What a call must do after a credential failure of a request that carried generation `carried`.
    package enum RecoverAction {
        /// The call ends at once with this result (a newer credential, the last refresh's error, or cancellation).
        case resume(Result<(credential: Credential, generation: UInt64), any Error>)
        /// The call waits for the running refresh.
        case park
        /// The call waits, and the caller starts a refresh from `credential`, which has generation `generation`.
        case parkAndRefresh(credential: Credential, generation: UInt64)
    }

    /// Decides for a call whose request carried generation `carried` and failed for its credential at `now`.
    package mutating func recover(after carried: UInt64, id: UInt64, waiter: Waiter, at now: Duration) -> RecoverAction
    {
        if self.cancelledBeforeParking.remove(id) != nil {
            return .resume(.failure(CancellationError()))
        }
        if carried < self.generation {
            // Someone recovered since this request was made: it just retries with the newer credential.
            return .resume(.success(self.current))
        }
        if let failure = self.failure, failure.generation == self.generation {
            // This generation's refresh already failed; a new credential (``replace``) clears it,
            // and so does the end of the wait a passing failure asked for.
            guard let until = failure.until, until <= now else { return .resume(.failure(failure.error)) }
            self.failure = nil
        }
        self.waiters.append((id, self.generation, waiter))
        if self.refreshingGeneration == self.generation { return .park }
        self.refreshingGeneration = self.generation
        return .parkAndRefresh(credential: self.credential, generation: self.generation)
    }

    /// Takes the waiter `id` out of the queue when its task is cancelled; records the cancellation if it has not parked yet.
    package mutating func cancel(id: UInt64) -> Waiter? {
        if let index = self.waiters.firstIndex(where: { $0.id == id }) {
            return self.waiters.remove(at: index).waiter
        }
        self.cancelledBeforeParking.insert(id)
        return nil
    }

    /// Forgets a cancellation recorded for `id` that no parking will consume (the call ended another way).
    package mutating func forget(id: UInt64) {
        self.cancelledBeforeParking.remove(id)
    }

    /// Records the end of the refresh that started from `generation`, and returns every waiter with its result.
    ///
    /// A refresh overtaken by ``replace(with:)`` is ignored: its waiters get the replacement.
    /// A failure is remembered for later calls as `memory` says; the waiters get it in any case.
    package mutating func refreshFinished(
        from generation: UInt64, with result: Result<Credential, any Error>, remembering memory: RefreshFailureMemory
    ) -> (waiters: [Waiter], result: Result<(credential: Credential, generation: UInt64), any Error>) {
        if self.refreshingGeneration == generation { self.refreshingGeneration = nil }
        let waiters = self.waiters.filter { $0.generation == generation }.map(\.waiter)
        self.waiters.removeAll { $0.generation == generation }
        guard generation == self.generation else { return (waiters, .success(self.current)) }
        switch result {
        case .success(let credential):
            self.credential = credential
            self.generation += 1
            self.failure = nil
            return (waiters, .success(self.current))
        case .failure(let error):
            switch memory {
            case .forGood: self.failure = (generation, error, nil)
            case .until(let instant): self.failure = (generation, error, instant)
            case .notAtAll: self.failure = nil
            }
            return (waiters, .failure(error))
        }
    }

    /// Installs a credential obtained another way (the person signed in again), clearing a failed refresh.
    package mutating func replace(with credential: Credential) -> (credential: Credential, generation: UInt64) {
        self.credential = credential
        self.generation += 1
        self.failure = nil
        return self.current
    }
}

/// How long the failure of a refresh is remembered, so that later calls get it without a new refresh.
package enum RefreshFailureMemory: Equatable {
    /// Until a new credential replaces the generation: the refresh failed for good (the session is over).
    case forGood
    /// Until this instant: the refresh failed for a reason that passes, and the server asked to
    /// wait this long before the next one.
    case until(Duration)
    /// Not at all: the refresh failed for a reason that passes, and the next call refreshes again.
    case notAtAll
}
