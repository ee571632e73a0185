/// The decisions of a ``CredentialRecovery``, with no locks and no awaits.
///
/// It holds the current credential and its generation, whether a refresh is
/// running, the failure of the last refresh and its round, and the parked waiters. Each method
/// returns what the caller must do after releasing the lock: resume waiters,
/// start the refresh. `Waiter` is whatever the storage resumes (a continuation);
/// tests use plain values.
package struct CredentialRecoveryStateMachine<Credential: Sendable, Waiter> {
    /// The credential calls use now.
    package private(set) var credential: Credential
    /// How many times the credential changed: by a successful refresh or a replacement.
    package private(set) var generation: UInt64 = 0
    /// The generation the running refresh started from, if one is running for the current generation.
    package private(set) var refreshingGeneration: UInt64?
    /// The error of the last refresh that failed, the generation it tried to replace, how long
    /// it is remembered for calls that did not see it, and its round.
    private var failure: (generation: UInt64, error: any Error, memory: RefreshFailureMemory, round: UInt64)?
    /// How many refreshes have started: the round of the one that started last.
    package private(set) var rounds: UInt64 = 0
    /// The round of the running refresh, if one is running.
    private var refreshingRound: UInt64 = 0
    /// The calls waiting for a refresh, by ID and by the generation that refresh replaces, in arrival order.
    private var waiters: [(id: UInt64, generation: UInt64, waiter: Waiter)] = []
    /// Waiters cancelled before they parked, by ID.
    private var cancelledBeforeParking: Set<UInt64> = []
    private var nextID: UInt64 = 0
    /// The values the machine let go of (a replaced credential, a failure it forgot), kept until
    /// the caller takes them with the lock released: their deinitializers are the app's code.
    private var letGo: [any Sendable] = []

    package init(credential: Credential) {
        self.credential = credential
    }

    /// Hands over the values the machine let go of since the last call, for the caller to drop
    /// once it has released its lock.
    package mutating func takeLetGo() -> [any Sendable] {
        defer { self.letGo = [] }
        return self.letGo
    }

    /// Forgets the last refresh's failure, keeping its error for ``takeLetGo()``.
    private mutating func forgetFailure() {
        if let failure = self.failure { self.letGo.append(failure.error) }
        self.failure = nil
    }

    /// Installs `credential`, keeping the one it replaces for ``takeLetGo()``.
    private mutating func install(_ credential: Credential) {
        self.letGo.append(self.credential)
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

    /// The round of the failed refresh a call gets now, and when that failure's retry-after hint
    /// runs out (`nil` without one): read after ``recover(after:seen:id:waiter:at:)`` resumed a
    /// call with a failure, or after ``refreshFinished(from:with:remembering:)`` recorded one.
    package var failedRound: (round: UInt64, until: Duration?)? {
        guard let failure = self.failure, failure.generation == self.generation else { return nil }
        if case .until(let until) = failure.memory { return (failure.round, until) }
        return (failure.round, nil)
    }

    /// Decides for a call whose request carried generation `carried` and failed for its credential at `now`.
    ///
    /// `seen` is the round of the last failed refresh this call already got, when it asks again
    /// after a refresh that failed for now: a round that failed since then is its answer, without
    /// a new refresh, so that calls which waited different times after one failed round still
    /// share the next one. A call that asks for the first time gets a failure only while it is
    /// remembered (for good, or within its retry-after hint).
    package mutating func recover(
        after carried: UInt64, seen: UInt64? = nil, id: UInt64, waiter: Waiter, at now: Duration
    ) -> RecoverAction {
        if self.cancelledBeforeParking.remove(id) != nil {
            return .resume(.failure(CancellationError()))
        }
        if carried < self.generation {
            // Someone recovered since this request was made: it just retries with the newer credential.
            return .resume(.success(self.current))
        }
        if let failure = self.failure, failure.generation == self.generation {
            // This generation's refresh already failed; a new credential (``replace``) clears it,
            // and so does the end of the wait a passing failure asked for, unless this call has
            // not seen that failure yet.
            let isNews = seen.map { failure.round > $0 } ?? false
            switch failure.memory {
            case .forGood:
                return .resume(.failure(failure.error))
            case .until(let until) where until > now || isNews:
                return .resume(.failure(failure.error))
            case .notAtAll where isNews:
                return .resume(.failure(failure.error))
            case .until, .notAtAll:
                self.forgetFailure()
            }
        }
        self.waiters.append((id, self.generation, waiter))
        if self.refreshingGeneration == self.generation { return .park }
        self.refreshingGeneration = self.generation
        self.rounds += 1
        self.refreshingRound = self.rounds
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
            self.install(credential)
            self.generation += 1
            self.forgetFailure()
            return (waiters, .success(self.current))
        case .failure(let error):
            // Kept even when later calls are not to get it: a call that already waited out an
            // earlier failed round takes this one as its answer.
            self.forgetFailure()
            self.failure = (generation, error, memory, self.refreshingRound)
            return (waiters, .failure(error))
        }
    }

    /// Installs a credential obtained another way (the person signed in again), clearing a failed refresh.
    package mutating func replace(with credential: Credential) -> (credential: Credential, generation: UInt64) {
        self.install(credential)
        self.generation += 1
        self.forgetFailure()
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
    /// Not at all: the refresh failed for a reason that passes, and the next call refreshes again
    /// (a call that waited after an earlier failed round still takes this one as its answer).
    case notAtAll
}
