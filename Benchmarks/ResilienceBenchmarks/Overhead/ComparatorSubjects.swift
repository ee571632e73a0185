/// `seed-design.retry.success`: the seed design's retry handler, first attempt succeeding.
struct SeedDesignRetrySuccess: OverheadSubject {
    let handler = SeedDesignRetryHandler()

    func call(_ input: Int) async -> Int {
        (try? await self.handler.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.handler.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `seed-design.breaker.success`: the seed design's queue-guarded breaker, closed.
struct SeedDesignBreakerSuccess: OverheadSubject {
    let breaker = SeedDesignCircuitBreaker()

    func call(_ input: Int) async -> Int {
        (try? await self.breaker.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.breaker.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `seed-design.retry+breaker.success`: the seed design's retry handler around its breaker.
struct SeedDesignRetryAroundBreakerSuccess: OverheadSubject {
    let handler = SeedDesignRetryHandler()
    let breaker = SeedDesignCircuitBreaker()

    func call(_ input: Int) async -> Int {
        let breaker = self.breaker
        return
            (try? await self.handler.execute {
                try await breaker.execute { try await Workload.operation(input) }
            }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        let breaker = self.breaker
        return
            (try? await self.handler.execute {
                try await breaker.execute { try await Workload.operation(input) }
            }) ?? input
    }
}

/// `seed-design.breaker.rejection`: the seed design's breaker, open, rejecting every call.
struct SeedDesignBreakerRejection: OverheadSubject {
    let breaker: SeedDesignCircuitBreaker

    init() {
        self.breaker = SeedDesignCircuitBreaker()
        self.breaker.trip()
    }

    func call(_ input: Int) async -> Int {
        do {
            return try await self.breaker.execute { try await Workload.operation(input) }
        } catch {
            return input &+ 1
        }
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        do {
            return try await self.breaker.execute { try await Workload.operation(input) }
        } catch {
            return input &+ 1
        }
    }
}

/// `actor-per-call.retry.success`: the naive actor retry policy, first attempt succeeding.
struct ActorPerCallRetrySuccess: OverheadSubject {
    let policy = ActorPerCallRetryPolicy()

    func call(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.policy.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `actor-per-call.breaker.success`: the naive actor breaker, closed.
struct ActorPerCallBreakerSuccess: OverheadSubject {
    let breaker = ActorPerCallCircuitBreaker()

    func call(_ input: Int) async -> Int {
        (try? await self.breaker.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.breaker.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `actor-per-call.retry+breaker.success`: the naive actor retry policy around the naive actor breaker.
struct ActorPerCallRetryAroundBreakerSuccess: OverheadSubject {
    let policy = ActorPerCallRetryPolicy()
    let breaker = ActorPerCallCircuitBreaker()

    func call(_ input: Int) async -> Int {
        let breaker = self.breaker
        return
            (try? await self.policy.execute {
                try await breaker.execute { try await Workload.operation(input) }
            }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        let breaker = self.breaker
        return
            (try? await self.policy.execute {
                try await breaker.execute { try await Workload.operation(input) }
            }) ?? input
    }
}

/// `actor-per-call.breaker.rejection`: the naive actor breaker, open, rejecting every call.
struct ActorPerCallBreakerRejection: OverheadSubject {
    let breaker: ActorPerCallCircuitBreaker

    /// Creates the breaker and trips it.
    static func make() async -> ActorPerCallBreakerRejection {
        let breaker = ActorPerCallCircuitBreaker()
        await breaker.trip()
        return ActorPerCallBreakerRejection(breaker: breaker)
    }

    func call(_ input: Int) async -> Int {
        do {
            return try await self.breaker.execute { try await Workload.operation(input) }
        } catch {
            return input &+ 1
        }
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        do {
            return try await self.breaker.execute { try await Workload.operation(input) }
        } catch {
            return input &+ 1
        }
    }
}
