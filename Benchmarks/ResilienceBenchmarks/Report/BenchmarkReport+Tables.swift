extension BenchmarkReport {
    /// Everything, as text tables for standard output.
    var tables: String {
        var sections: [String] = []
        sections.append(
            """
            swift-resilience benchmarks (\(self.environment.mode) run)
            date: \(self.environment.date)
            swift: \(self.environment.swift)
            machine: \(self.environment.machine)
            allocation counter: \(self.allocationCounterLine)
            """)
        if !self.overhead.isEmpty { sections.append(self.overheadTable) }
        if !self.memory.isEmpty { sections.append(self.memoryTable) }
        if !self.primitives.isEmpty { sections.append(self.primitivesTable) }
        if !self.simulations.contention.isEmpty { sections.append(self.contentionTable) }
        if !self.simulations.outage.isEmpty { sections.append(self.outageTable) }
        if !self.simulations.throttle.isEmpty { sections.append(self.throttleTable) }
        if !self.simulations.toolbox.isEmpty { sections.append(self.toolboxTable) }
        if !self.simulations.loadDiscipline.nested.isEmpty { sections.append(self.loadDisciplineTable) }
        sections.append(self.targetsTable)
        return sections.joined(separator: "\n\n") + "\n"
    }

    private var allocationCounterLine: String {
        let check = self.allocationCounter
        guard check.isSupported else { return "unavailable in this build (allocations shown as n/a)" }
        let control = check.controlAllocationsPerOperation.map { Format.decimal($0, 3) } ?? "n/a"
        return check.isVerified
            ? "malloc interposer, verified (a one-allocation control counted \(control) per call)"
            : "malloc interposer FAILED its check (control counted \(control) per call; allocations shown as n/a)"
    }

    private var overheadTable: String {
        var table = TextTable([
            ("overhead", .left), ("caller", .left), ("tasks", .right), ("ns/op", .right), ("min-max", .right),
            ("direct ns/op", .right), ("ratio", .right), ("plain ns/op", .right), ("plain ratio", .right),
            ("allocs/op", .right),
        ])
        for row in self.overhead {
            table.append([
                row.name, row.configuration.caller.rawValue, String(row.configuration.tasks),
                Format.nanoseconds(row.subject.median),
                Format.nanoseconds(row.subject.minimum) + "-" + Format.nanoseconds(row.subject.maximum),
                Format.nanoseconds(row.baseline.median),
                Format.decimal(row.ratio, 2) + "x",
                Format.nanoseconds(row.plainBaseline.median),
                Format.decimal(row.plainRatio, 2) + "x",
                row.allocationsPerOperation.map { Format.decimal($0, 2) } ?? "n/a",
            ])
        }
        return "Cost per call, median of \(self.overhead.first?.repetitions ?? 0) repetitions "
            + "(ratio = median / median of the direct call in the same configuration, whose operation is "
            + "nonisolated(nonsending); plain ratio = median / median of the direct call of a plain "
            + "nonisolated async operation)\n" + table.rendered
    }

    private var memoryTable: String {
        var table = TextTable([("memory", .left), ("object", .left), ("bytes", .right), ("allocations", .right)])
        for row in self.memory {
            let measured = self.allocationCounter.isVerified
            table.append([
                row.name, row.detail,
                measured ? Format.decimal(row.bytesPerObject, 0) : "n/a",
                measured ? Format.decimal(row.allocationsPerObject, 1) : "n/a",
            ])
        }
        return "Heap per object (allocator's usable sizes)\n" + table.rendered
    }

    private var primitivesTable: String {
        var table = TextTable([("primitive", .left), ("operation", .left), ("ns/op", .right), ("min-max", .right)])
        for row in self.primitives {
            table.append([
                row.name, row.detail, Format.decimal(row.summary.median, 1),
                Format.decimal(row.summary.minimum, 1) + "-" + Format.decimal(row.summary.maximum, 1),
            ])
        }
        return "Primitives, uncontended, one thread\n" + table.rendered
    }

    private var contentionTable: String {
        var table = TextTable([
            ("schedule", .left), ("write calls", .right), ("completion", .right), ("reference calls", .right),
            ("reference completion", .right),
        ])
        for row in self.simulations.contention {
            let reference = ContentionReference.figures[row.schedule]
            table.append([
                row.schedule, Format.decimal(row.calls, 0),
                Format.decimal(row.completionMilliseconds / 1_000, 2) + " s",
                reference.map { Format.grouped(Int($0.calls)) } ?? "-",
                reference.map { Format.decimal($0.completionSeconds, 1) + " s" } ?? "-",
            ])
        }
        return "Contention (Brooker's model: 100 clients, 100 trials, base 5 ms, cap 2 s, hops |N(10 ms, 2 ms)|;\n"
            + "exponential schedules start at base * 2 = 10 ms as in Brooker's code, decorrelated at base;\n"
            + "reference: \(ContentionReference.source))\n"
            + table.rendered
    }

    private var outageTable: String {
        var table = TextTable([
            ("budget", .left), ("breaker", .left), ("attempts/request", .right), ("recovery", .right),
            ("median client", .right), ("last client", .right), ("requests", .right),
        ])
        for row in self.simulations.outage {
            let tail = Format.decimal(row.tailMilliseconds / 1_000, 0) + " s"
            table.append([
                row.budget ? "yes" : "no", row.breaker ? "yes" : "no", Format.decimal(row.attemptsPerRequest, 3),
                row.recoveryMilliseconds.map { Format.milliseconds($0) } ?? "none",
                row.medianClientRecoveryMilliseconds.map { Format.milliseconds($0) } ?? "none",
                row.lastClientRecoveryMilliseconds.map { Format.milliseconds($0) }
                    ?? "\(Format.grouped(row.clients - row.clientsRecovered)) not in \(tail)",
                Format.grouped(row.requests),
            ])
        }
        // The size comes from the rows: `--quick` simulates fewer clients.
        let clients = Format.grouped(self.simulations.outage.first?.clients ?? OutageSimulation.standardClients)
        return "Outage (\(clients) clients, server fails everything for 60 s, 3 attempts per call; recovery: from the\n"
            + "server's recovery to the first success of any client, of the median client, of the last client)\n"
            + table.rendered
    }

    private var throttleTable: String {
        var table = TextTable([
            ("Retry-After", .left), ("attempts/request", .right), ("requests", .right), ("hint surfaced", .right),
        ])
        for row in self.simulations.throttle {
            table.append([
                row.retryAfter ? "2 s" : "none", Format.decimal(row.attemptsPerRequest, 3),
                Format.grouped(row.requests), Format.grouped(row.hintsSurfaced),
            ])
        }
        return "Throttle (1,000 clients, every response 429, classifier says retry everything)\n" + table.rendered
    }

    private var targetsTable: String {
        var table = TextTable([
            ("goal", .left), ("compared against", .left), ("measured", .right), ("verdict", .left),
        ])
        for check in self.targets {
            table.append([check.description, check.comparedWith, check.measured ?? "-", check.verdict])
        }
        return "Performance goals (reported, not asserted; a miss shows its gap: measured against the goal)\n"
            + table.rendered
    }
}
