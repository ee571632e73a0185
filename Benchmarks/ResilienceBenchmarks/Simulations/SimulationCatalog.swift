/// Every simulation, in report order. The outage-with-breaker variant goes in
/// `SimulationCatalog+CircuitBreaker.swift`.
enum SimulationCatalog {
    /// The results of every simulation.
    struct Results: Sendable {
        /// One row per contention schedule.
        var contention: [ContentionResult] = []
        /// One row per outage variant.
        var outage: [OutageResult] = []
        /// One row per throttle variant.
        var throttle: [ThrottleResult] = []
        /// The toolbox simulations: hedging, bulkhead, rate limiter.
        var toolbox = ToolboxSimulationResults()
        /// Nested retries, adaptive throttling, RateLimit headers and probe waves.
        var loadDiscipline = LoadDisciplineResults()
    }

    /// The outage variants: retry without and with a budget, then any breaker variants.
    static var outageVariants: [OutageSimulation.Variant] {
        OutageSimulation.retryVariants + Self.circuitBreakerOutageVariants
    }

    /// Runs every simulation with `seed`; `isQuick` (`--quick`) shrinks the toolbox
    /// simulations to ``ToolboxSimulations/Size/quick`` and the outage to
    /// ``OutageSimulation/quickClients``, and leaves the others as they are.
    static func run(seed: UInt64, isQuick: Bool, progress: Progress) async throws -> Results {
        var results = Results()
        let contention = ContentionSimulation(seed: seed)
        for schedule in ContentionSimulation.schedules {
            let result = contention.run(schedule)
            progress.note(
                "contention \(schedule.name): \(Format.decimal(result.calls, 1)) calls, "
                    + "\(Format.decimal(result.completionMilliseconds, 1)) ms")
            results.contention.append(result)
        }
        var outage = OutageSimulation(seed: seed)
        if isQuick { outage.clients = OutageSimulation.quickClients }
        for variant in Self.outageVariants {
            let result = try await outage.run(variant)
            progress.note(
                "outage budget=\(variant.budget) breaker=\(variant.breaker): "
                    + "\(Format.decimal(result.attemptsPerRequest, 3)) attempts/request, \(result.events) events")
            results.outage.append(result)
        }
        let throttle = ThrottleSimulation(seed: seed)
        for sendsRetryAfter in [false, true] {
            let result = try await throttle.run(retryAfter: sendsRetryAfter)
            progress.note(
                "throttle retry_after=\(sendsRetryAfter): \(Format.decimal(result.attemptsPerRequest, 3)) attempts/request"
            )
            results.throttle.append(result)
        }
        results.toolbox = try await ToolboxSimulations.run(
            seed: seed, size: isQuick ? .quick : .standard, progress: progress)
        results.loadDiscipline = try await Self.runLoadDiscipline(seed: seed, progress: progress)
        return results
    }
}
