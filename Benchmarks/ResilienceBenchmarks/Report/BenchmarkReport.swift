/// Everything one run measured, and its renderings: JSON, tables, charts.
struct BenchmarkReport: Sendable {
    /// Where and when.
    var environment: RunEnvironment
    /// Whether allocation counts are trustworthy in this run.
    var allocationCounter: AllocationCounterCheck
    /// The overhead rows, in catalog order.
    var overhead: [OverheadResult] = []
    /// Bytes per object.
    var memory: [MemoryResult] = []
    /// Synchronization primitives, nanoseconds per operation.
    var primitives: [(name: String, detail: String, summary: Summary)] = []
    /// The simulations' figures.
    var simulations = SimulationCatalog.Results()

    /// The JSON document of `--json`.
    ///
    /// The documented keys come first in each object, in a fixed order (see
    /// Docs/Benchmarks.md); extra keys (spread, iteration counts, sizes) follow them.
    var json: JSONValue {
        var simulations: [JSONValue] = []
        for row in self.simulations.contention {
            simulations.append(
                .object([
                    ("name", .string("contention")),
                    ("schedule", .string(row.schedule)),
                    ("calls", .decimal(row.calls, 2)),
                    ("completion_ms", .decimal(row.completionMilliseconds, 2)),
                ]))
        }
        for row in self.simulations.outage {
            simulations.append(
                .object([
                    ("name", .string("outage")),
                    ("budget", .bool(row.budget)),
                    ("attempts_per_request", .decimal(row.attemptsPerRequest, 4)),
                    ("recovery_ms", .decimal(row.recoveryMilliseconds, 2)),
                    ("breaker", .bool(row.breaker)),
                    ("requests", .integer(row.requests)),
                    ("clients", .integer(row.clients)),
                    ("clients_recovered", .integer(row.clientsRecovered)),
                    ("client_recovery_median_ms", .decimal(row.medianClientRecoveryMilliseconds, 2)),
                    ("client_recovery_last_ms", .decimal(row.lastClientRecoveryMilliseconds, 2)),
                    ("tail_ms", .decimal(row.tailMilliseconds, 0)),
                ]))
        }
        for row in self.simulations.throttle {
            simulations.append(
                .object([
                    ("name", .string("throttle")),
                    ("retry_after", .bool(row.retryAfter)),
                    ("attempts_per_request", .decimal(row.attemptsPerRequest, 4)),
                    ("requests", .integer(row.requests)),
                    ("hints_surfaced", .integer(row.hintsSurfaced)),
                ]))
        }
        simulations += self.toolboxSimulationRows
        simulations += self.loadDisciplineJSON
        return .object([
            ("swift", .string(self.environment.swift)),
            ("machine", .string(self.environment.machine)),
            (
                "overhead",
                .array(
                    self.overhead.map { row in
                        .object([
                            ("name", .string(row.name)),
                            ("caller", .string(row.configuration.caller.rawValue)),
                            ("tasks", .integer(row.configuration.tasks)),
                            ("ns_per_op", .decimal(row.subject.median, 2)),
                            ("baseline_ns_per_op", .decimal(row.baseline.median, 2)),
                            ("ratio", .decimal(row.ratio, 3)),
                            ("plain_baseline_ns_per_op", .decimal(row.plainBaseline.median, 2)),
                            ("plain_ratio", .decimal(row.plainRatio, 3)),
                            ("allocations_per_op", .decimal(row.allocationsPerOperation, 3)),
                            ("ns_per_op_min", .decimal(row.subject.minimum, 2)),
                            ("ns_per_op_max", .decimal(row.subject.maximum, 2)),
                            ("baseline_ns_per_op_min", .decimal(row.baseline.minimum, 2)),
                            ("baseline_ns_per_op_max", .decimal(row.baseline.maximum, 2)),
                            ("iterations", .integer(row.iterations)),
                            ("repetitions", .integer(row.repetitions)),
                            (
                                "reference",
                                row.reference.map { reference in
                                    .object([
                                        ("name", .string(reference.name)),
                                        ("ns_per_op", .decimal(reference.reference.median, 2)),
                                        ("ratio", .decimal(reference.ratio.median, 3)),
                                        ("cpu_time_ratio", .decimal(reference.processorTimeRatio?.median, 3)),
                                    ])
                                } ?? .null
                            ),
                        ])
                    })
            ),
            ("simulations", .array(simulations)),
            (
                "memory",
                .array(
                    self.memory.map { row in
                        .object([
                            ("name", .string(row.name)),
                            ("bytes", .decimal(row.bytesPerObject, 1)),
                            ("allocations", .decimal(row.allocationsPerObject, 2)),
                        ])
                    })
            ),
            (
                "primitives",
                .array(
                    self.primitives.map { row in
                        .object([
                            ("name", .string(row.name)),
                            ("ns_per_op", .decimal(row.summary.median, 2)),
                            ("ns_per_op_min", .decimal(row.summary.minimum, 2)),
                            ("ns_per_op_max", .decimal(row.summary.maximum, 2)),
                        ])
                    })
            ),
            (
                "targets",
                .array(
                    self.targets.map { check in
                        .object([
                            ("target", .string(check.description)),
                            ("measured", check.measured.map(JSONValue.string) ?? .null),
                            ("met", check.isMet.map(JSONValue.bool) ?? .null),
                            ("compared_with", .string(check.comparedWith)),
                            ("gap", check.isMet == false ? check.gap.map(JSONValue.string) ?? .null : .null),
                        ])
                    })
            ),
            (
                "run",
                .object([
                    ("date", .string(self.environment.date)),
                    ("mode", .string(self.environment.mode)),
                    (
                        "seed",
                        Int(exactly: self.environment.seed).map(JSONValue.integer)
                            ?? .string(String(self.environment.seed))
                    ),
                    ("allocation_counter_verified", .bool(self.allocationCounter.isVerified)),
                    (
                        "allocation_counter_control_per_op",
                        .decimal(self.allocationCounter.controlAllocationsPerOperation, 3)
                    ),
                ])
            ),
        ])
    }
}
