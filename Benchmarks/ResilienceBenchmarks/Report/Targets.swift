/// The issue's targets, checked against a run and reported, never asserted.
///
/// A target whose rows are missing (the circuit breaker's, until it lands) is
/// reported as not measured.
struct TargetCheck: Sendable {
    /// What the target says.
    var description: String
    /// The measured figure, as text, or `nil` when not measured.
    var measured: String?
    /// Whether the figure meets the target, or `nil` when not measured.
    var isMet: Bool?
}

extension BenchmarkReport {
    /// Every target of issue 5, in the issue's order.
    var targets: [TargetCheck] {
        var checks: [TargetCheck] = []
        // (row, limit from a nonisolated task, limit from the main actor), against the strict baseline.
        let limits: [(String, Double, Double?)] = [
            ("retry.success", 1.5, 2.0), ("breaker.success.consecutive", 1.5, 2.0),
            ("breaker.success.window", 2.0, 2.5), ("retry+breaker.success", 2.0, 2.5),
            ("registry.success", 2.0, nil),
        ]
        for caller in Caller.allCases {
            for (name, nonisolatedLimit, mainActorLimit) in limits {
                guard let limit = caller == .nonisolated ? nonisolatedLimit : mainActorLimit else { continue }
                let row = self.overheadRow(name, caller)
                checks.append(
                    TargetCheck(
                        description: "\(name) (\(caller.rawValue)): ratio at most \(Format.decimal(limit, 1))",
                        measured: row.map { Format.decimal($0.ratio, 2) },
                        isMet: row.map { $0.ratio <= limit }))
            }
        }
        for (name, _, _) in limits {
            let allocations = Caller.allCases.compactMap { self.overheadRow(name, $0)?.allocationsPerOperation }.max()
            checks.append(
                TargetCheck(
                    description: "\(name): 0 heap allocations per call",
                    measured: allocations.map { Format.decimal($0, 3) },
                    isMet: allocations.map { $0 < 0.01 }))
        }
        for caller in Caller.allCases {
            let row = self.overheadRow("breaker.rejection", caller)
            checks.append(
                TargetCheck(
                    description: "breaker.rejection (\(caller.rawValue)): at most 5 times a direct call",
                    measured: row.map { Format.decimal($0.ratio, 2) },
                    isMet: row.map { $0.ratio <= 5 }))
        }
        for (name, minimum) in [("breaker.success.consecutive", 1.0), ("breaker.success.window", 1.0)] {
            let single = self.overheadRow(name, .nonisolated)
            let contended = self.overhead.first { $0.name == name && $0.configuration == .tasks(64) }
            var throughputRatio: Double?
            if let single, let contended {
                // Throughput is the inverse of the time per call.
                throughputRatio = single.subject.median / contended.subject.median
            }
            checks.append(
                TargetCheck(
                    description: "\(name) with 64 tasks: throughput at least that of one task",
                    measured: throughputRatio.map { Format.decimal($0, 2) + "x" },
                    isMet: throughputRatio.map { $0 >= minimum }))
        }

        let contention = Dictionary(self.simulations.contention.map { ($0.schedule, $0) }) { first, _ in first }
        if let full = contention["full"] {
            let deviation = abs(full.calls - 795) / 795
            checks.append(
                TargetCheck(
                    description: "contention: full jitter's calls within 10% of ANCHORS.md's 795",
                    measured: "\(Format.decimal(full.calls, 0)) (\(Format.decimal(deviation * 100, 1))% off)",
                    isMet: deviation <= 0.10))
            if let exponential = contention["exponential"] {
                checks.append(
                    TargetCheck(
                        description: "contention: full jitter's calls well under exponential-without-jitter's",
                        measured: "\(Format.decimal(full.calls, 0)) vs \(Format.decimal(exponential.calls, 0))",
                        isMet: full.calls < exponential.calls * 0.75))
            }
        }
        if let ours = contention["default"], let best = self.simulations.contention.map(\.calls).min() {
            checks.append(
                TargetCheck(
                    description: "contention: the default within 10% of the best schedule's calls",
                    measured: "\(Format.decimal(ours.calls, 0)) vs best \(Format.decimal(best, 0))",
                    isMet: ours.calls <= best * 1.10))
        }
        for row in self.simulations.outage where !row.breaker {
            if row.budget {
                checks.append(
                    TargetCheck(
                        description: "outage with a budget: at most 1.15 attempts per request",
                        measured: Format.decimal(row.attemptsPerRequest, 3),
                        isMet: row.attemptsPerRequest <= 1.15))
            } else {
                checks.append(
                    TargetCheck(
                        description: "outage without a budget: the configured maximum "
                            + "(\(OutageSimulation.maximumAttempts)) attempts per request",
                        measured: Format.decimal(row.attemptsPerRequest, 3),
                        isMet: abs(row.attemptsPerRequest - Double(OutageSimulation.maximumAttempts)) < 0.01))
            }
        }
        let breakerOutages = self.simulations.outage.filter(\.breaker)
        if breakerOutages.isEmpty {
            checks.append(
                TargetCheck(
                    description: "outage with a breaker: time from recovery to the first success (reported)",
                    measured: nil, isMet: nil))
        }
        for row in breakerOutages {
            checks.append(
                TargetCheck(
                    description: "outage with a breaker\(row.budget ? " and a budget" : ""): time from recovery to "
                        + "the first success (reported)",
                    measured: row.recoveryMilliseconds.map { Format.milliseconds($0) } ?? "none",
                    isMet: nil))
        }
        for row in self.simulations.throttle {
            checks.append(
                TargetCheck(
                    description: "throttle \(row.retryAfter ? "with" : "without") Retry-After: exactly 1.0 attempt "
                        + "per request",
                    measured: Format.decimal(row.attemptsPerRequest, 3),
                    isMet: row.attemptsPerRequest == 1.0))
        }
        return checks
    }

    func overheadRow(_ name: String, _ caller: Caller) -> OverheadResult? {
        self.overhead.first { $0.name == name && $0.configuration == OverheadConfiguration(caller: caller) }
    }
}
