extension BenchmarkReport {
    /// The toolbox simulations as `--json` rows: `hedging`, `bulkhead` and `ratelimiter`.
    var toolboxSimulationRows: [JSONValue] {
        let results = self.simulations.toolbox
        var rows: [JSONValue] = []
        for row in results.hedging {
            rows.append(
                .object([
                    ("name", .string("hedging")),
                    ("hedged", .bool(row.hedged)),
                    ("p99_ms", .decimal(row.p99Milliseconds, 2)),
                    ("load_per_request", .decimal(row.loadPerRequest, 4)),
                    ("requests", .integer(row.requests)),
                ]))
        }
        for row in results.bulkhead {
            rows.append(
                .object([
                    ("name", .string("bulkhead")),
                    ("limit", .integer(row.limit)),
                    ("p99_admitted_ms", .decimal(row.p99AdmittedMilliseconds, 2)),
                    ("rejected_share", .decimal(row.rejectedShare, 4)),
                    ("arrivals", .integer(row.arrivals)),
                ]))
        }
        for row in results.rateLimiter {
            rows.append(
                .object([
                    ("name", .string("ratelimiter")),
                    ("algorithm", .string(row.algorithm)),
                    ("configured_per_second", .decimal(row.configuredPerSecond, 2)),
                    ("admitted_per_second", .decimal(row.admittedPerSecond, 2)),
                    ("offered", .integer(row.offered)),
                ]))
        }
        return rows
    }

    /// The toolbox simulations as text tables.
    var toolboxTable: String {
        let results = self.simulations.toolbox
        var hedging = TextTable([("hedged", .left), ("p99", .right), ("attempts/request", .right)])
        for row in results.hedging {
            hedging.append([
                row.hedged ? "yes" : "no", Format.milliseconds(row.p99Milliseconds),
                Format.decimal(row.loadPerRequest, 3),
            ])
        }
        var bulkhead = TextTable([("limit", .right), ("p99 admitted", .right), ("rejected", .right)])
        for row in results.bulkhead {
            bulkhead.append([
                "\(row.limit)", Format.milliseconds(row.p99AdmittedMilliseconds),
                Format.decimal(row.rejectedShare * 100, 1) + "%",
            ])
        }
        var rate = TextTable([("algorithm", .left), ("configured/s", .right), ("admitted/s", .right)])
        for row in results.rateLimiter {
            rate.append([
                row.algorithm, Format.decimal(row.configuredPerSecond, 0), Format.decimal(row.admittedPerSecond, 2),
            ])
        }
        // The sizes come from the rows: `--quick` runs smaller simulations.
        let requests = results.hedging.first.map { Format.grouped($0.requests) + " requests; " } ?? ""
        let arrivals =
            results.bulkhead.first.map { Format.grouped($0.arrivals) + " Poisson arrivals" } ?? "Poisson arrivals"
        let seconds = results.rateLimiter.first.map { " for " + Format.decimal($0.seconds, 0) + " s" } ?? ""
        return "Hedging (\(requests)3% of attempts take 300 to 1,000 ms; hedge at the tracked p95)\n"
            + hedging.rendered
            + "\n\nBulkhead (\(arrivals) at 1.5x capacity, 50 ms mean service, queue as long as the limit, "
            + "100 ms queue timeout)\n" + bulkhead.rendered
            + "\n\nRate limiter (offered 3x the configured 100/s\(seconds))\n" + rate.rendered
    }

    /// The toolbox goals, reported and never asserted.
    var toolboxTargets: [TargetCheck] {
        var checks: [TargetCheck] = []
        for caller in Caller.allCases {
            for name in ["fallback.success", "bulkhead.success", "ratelimiter.success"] {
                let row = self.overheadRow(name, caller)
                let allocations = row?.allocationsPerOperation.map { Format.decimal($0, 3) } ?? "n/a"
                checks.append(
                    TargetCheck(
                        description: "\(name) (\(caller.rawValue)): at most 1.5x the direct call, zero allocations",
                        comparedWith: "direct call",
                        measured: row.map { Format.decimal($0.ratio, 2) + "x, \(allocations) allocations" },
                        isMet: row.map {
                            $0.ratio <= 1.5 && ($0.allocationsPerOperation ?? 0) < Self.allocationTolerance
                        },
                        gap: row.map {
                            Self.timeAndAllocationGap(
                                ratio: $0.ratio, limit: 1.5, allocations: $0.allocationsPerOperation,
                                allowedAllocations: 0, allowedName: "zero")
                        }))
            }
            let reference = self.overheadRow("taskgroup.child", caller)
            for name in ["timeout.success", "hedging.success"] {
                let row = self.overheadRow(name, caller)
                let ratio = row.flatMap { row in reference.map { row.subject.median / $0.subject.median } }
                checks.append(
                    TargetCheck(
                        description: "\(name) (\(caller.rawValue)): at most 1.2x taskgroup.child, no more allocations",
                        comparedWith: "taskgroup.child",
                        measured: ratio.map {
                            Format.decimal($0, 2) + "x, "
                                + (row?.allocationsPerOperation.map { Format.decimal($0, 2) } ?? "n/a") + " against "
                                + (reference?.allocationsPerOperation.map { Format.decimal($0, 2) } ?? "n/a")
                                + " allocations"
                        },
                        isMet: ratio.map { ratio in
                            ratio <= 1.2
                                && (row?.allocationsPerOperation ?? 0)
                                    < (reference?.allocationsPerOperation ?? 0) + Self.allocationTolerance
                        },
                        gap: ratio.map {
                            Self.timeAndAllocationGap(
                                ratio: $0, limit: 1.2, allocations: row?.allocationsPerOperation,
                                allowedAllocations: reference?.allocationsPerOperation ?? 0,
                                allowedName: "taskgroup.child")
                        }))
            }
            let timeout = self.overheadRow("timeout.success", caller)
            let pipeline = self.overheadRow("pipeline.standard.success", caller)
            // Judged on the timeout timed in turns with the pipeline, repetition by repetition; the
            // ratio of the two rows' medians, measured seconds apart, is shown beside it when both ran.
            let acrossRows = pipeline.flatMap { row in timeout.map { row.subject.median / $0.subject.median } }
            let paired = pipeline?.reference.flatMap { $0.name == "timeout.success" ? $0 : nil }
            let inTurns = paired?.ratio.median
            let processorTime = paired?.processorTimeRatio?.median
            let ratio = inTurns ?? acrossRows
            checks.append(
                TargetCheck(
                    description: "pipeline.standard.success (\(caller.rawValue)): at most 2.5x timeout.success",
                    comparedWith: inTurns == nil ? "timeout.success" : "timeout.success, timed in turns",
                    measured: ratio.map { ratio in
                        var shown = Format.decimal(ratio, 2) + "x"
                        guard inTurns != nil else { return shown }
                        var notes: [String] = []
                        if let processorTime { notes.append("CPU time: " + Format.decimal(processorTime, 2) + "x") }
                        if let acrossRows { notes.append("rows: " + Format.decimal(acrossRows, 2) + "x") }
                        if !notes.isEmpty { shown += " (" + notes.joined(separator: "; ") + ")" }
                        return shown
                    },
                    isMet: ratio.map { $0 <= 2.5 },
                    gap: ratio.map { "+" + Format.decimal(Swift.max(0, $0 - 2.5), 2) + "x over 2.5x" }))
            let inline = self.overheadRow("pipeline.inline.success", caller)
            let allocations = inline?.allocationsPerOperation
            checks.append(
                TargetCheck(
                    description: "pipeline.inline.success (\(caller.rawValue)): no heap allocation per call",
                    comparedWith: "0 allocations",
                    measured: inline.map { row in
                        (allocations.map { Format.decimal($0, 3) } ?? "n/a") + " allocations, "
                            + Format.decimal(row.ratio, 2) + "x the direct call"
                    },
                    isMet: inline.map { _ in (allocations ?? 0) < Self.allocationTolerance },
                    gap: allocations.map { "+" + Format.decimal($0, 3) + " allocations" }))
        }
        let plain = self.simulations.toolbox.hedging.first { !$0.hedged }
        let hedged = self.simulations.toolbox.hedging.first { $0.hedged }
        if let plain, let hedged {
            let cut = 1 - hedged.p99Milliseconds / plain.p99Milliseconds
            let extra = hedged.loadPerRequest / plain.loadPerRequest - 1
            checks.append(
                TargetCheck(
                    description: "hedging: p99 cut by at least half with at most 10% extra load",
                    comparedWith: "the same server without hedging",
                    measured: Format.decimal(cut * 100, 1) + "% cut, " + Format.decimal(extra * 100, 1)
                        + "% extra load",
                    isMet: cut >= 0.5 && extra <= 0.1,
                    gap: "cut " + Format.decimal(cut * 100, 1) + "% (goal 50%), load +" + Format.decimal(extra * 100, 1)
                        + "% (goal 10%)"))
        }
        return checks
    }
}
