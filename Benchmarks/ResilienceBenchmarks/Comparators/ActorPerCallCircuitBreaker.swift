/// A naive actor design for a circuit breaker, for comparison: every call hops
/// into the actor, which checks the state, runs the operation and records the result.
///
/// It opens after `failureThreshold` consecutive failures and lets one call
/// through after `breakDuration`. The operation is `nonisolated(nonsending)`, so
/// it runs on the actor's executor.
actor ActorPerCallCircuitBreaker {
    private enum State {
        case closed(failures: Int)
        case open(until: ContinuousClock.Instant)
        case halfOpen
    }

    /// Consecutive failures that open the breaker.
    let failureThreshold: Int
    /// How long the breaker stays open.
    let breakDuration: Duration
    private var state = State.closed(failures: 0)

    /// A breaker that opens after 5 failures for 30 s.
    init(failureThreshold: Int = 5, breakDuration: Duration = .seconds(30)) {
        self.failureThreshold = failureThreshold
        self.breakDuration = breakDuration
    }

    /// Runs `operation` on this actor unless the breaker is open.
    ///
    /// - Throws: ``ActorPerCallCircuitOpenError`` when open, or the operation's error.
    func execute<T: Sendable>(_ operation: nonisolated(nonsending) @Sendable () async throws -> T) async throws -> T {
        if case .open(let until) = self.state {
            guard ContinuousClock.now >= until else { throw ActorPerCallCircuitOpenError() }
            self.state = .halfOpen
        }
        do {
            let value = try await operation()
            self.state = .closed(failures: 0)
            return value
        } catch {
            switch self.state {
            case .closed(let failures) where failures + 1 < self.failureThreshold:
                self.state = .closed(failures: failures + 1)
            default:
                self.state = .open(until: ContinuousClock.now + self.breakDuration)
            }
            throw error
        }
    }

    /// Forces the breaker open for its break duration.
    func trip() {
        self.state = .open(until: ContinuousClock.now + self.breakDuration)
    }
}

/// The error ``ActorPerCallCircuitBreaker`` throws while open.
struct ActorPerCallCircuitOpenError: Error {}
