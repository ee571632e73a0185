import Foundation

/// One of the project's performance goals, checked against a run and reported, never asserted.
///
/// A goal whose rows are missing from the run (with `--only` or `--filter`) is
/// reported as not measured. A missed goal carries its gap: how far the measured
/// figure is from the goal, in the goal's own unit.
struct TargetCheck: Sendable {
    /// What the goal asks, with its limit: "retry.success (nonisolated): at most 1.5x the direct call".
    var description: String
    /// What the measured figure is compared against: the baseline, the reference or the other row.
    var comparedWith: String
    /// The measured figure, as text, or `nil` when not measured.
    var measured: String?
    /// Whether the figure meets the goal, or `nil` when not measured or only reported.
    var isMet: Bool?
    /// For a missed goal, how far the figure is from it (`"+2.38x over 1.3x"`); `nil` otherwise.
    var gap: String?

    /// The verdict column: `met`, `missed by <gap>`, `reported` or `not measured`.
    var verdict: String {
        switch self.isMet {
        case .some(true): "met"
        case .some(false): "missed by " + (self.gap ?? "an unknown margin")
        case .none: self.measured == nil ? "not measured" : "reported"
        }
    }
}

/// The reference figures for the contention simulation, for the comparison column and the chart.
///
/// An independent re-run of the model of Marc Brooker, "Exponential Backoff And
/// Jitter" (AWS Architecture Blog, 2015), whose simulator is published as
/// aws-samples/aws-arch-backoff-simulator: 100 clients, base 5 ms, cap 2 s,
/// hops of |N(10 ms, 2 ms)|, mean of 100 trials.
enum ContentionReference {
    /// Where the figures come from, as printed under the table and on the chart.
    static let source = "re-run of Brooker's model (\"Exponential Backoff And Jitter\", AWS Architecture Blog, 2015)"

    /// Write calls and completion seconds per schedule.
    static let figures: [String: (calls: Double, completionSeconds: Double)] = [
        "none": (2_420, 2.0),
        "exponential": (1_853, 63.7),
        "equal": (811, 6.6),
        "full": (795, 5.0),
        "decorrelated": (1_006, 4.6),
    ]
}

extension BenchmarkReport {
    /// The project's performance goals, in the order of Docs/Benchmarks.md.
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
                    Self.atMost(
                        "\(name) (\(caller.rawValue)): at most \(Format.decimal(limit, 1))x the direct call",
                        comparedWith: "direct call, same caller, same run",
                        measured: row?.ratio, limit: limit, digits: 2, unit: "x"))
            }
        }
        for (name, _, _) in limits {
            let allocations = Caller.allCases.compactMap { self.overheadRow(name, $0)?.allocationsPerOperation }.max()
            checks.append(
                Self.atMost(
                    "\(name): no heap allocation per call", comparedWith: "0 allocations",
                    measured: allocations, limit: 0.01, goal: 0, digits: 3, unit: " allocs"))
        }
        for caller in Caller.allCases {
            let row = self.overheadRow("breaker.rejection", caller)
            checks.append(
                Self.atMost(
                    "breaker.rejection (\(caller.rawValue)): at most 5x the direct call",
                    comparedWith: "direct call, same caller, same run",
                    measured: row?.ratio, limit: 5, digits: 2, unit: "x"))
        }
        for name in ["breaker.success.consecutive", "breaker.success.window"] {
            let single = self.overheadRow(name, .nonisolated)
            let contended = self.overhead.first { $0.name == name && $0.configuration == .tasks(64) }
            var throughputRatio: Double?
            if let single, let contended {
                // Throughput is the inverse of the time per call.
                throughputRatio = single.subject.median / contended.subject.median
            }
            checks.append(
                Self.atLeast(
                    "\(name) with 64 tasks: at least the single-task throughput",
                    comparedWith: "the same breaker, one task",
                    measured: throughputRatio, limit: 1.0, digits: 2, unit: "x"))
        }

        let contention = Dictionary(self.simulations.contention.map { ($0.schedule, $0) }) { first, _ in first }
        if let full = contention["full"], let reference = ContentionReference.figures["full"] {
            let deviation = abs(full.calls - reference.calls) / reference.calls * 100
            var check = Self.atMost(
                "contention: full jitter's write calls within 10% of the reference",
                comparedWith: "\(Format.grouped(Int(reference.calls))) calls, re-run of Brooker's model",
                measured: deviation, limit: 10, digits: 1, unit: "%")
            check.measured = "\(Format.decimal(full.calls, 0)) (\(Format.decimal(deviation, 1))% off)"
            checks.append(check)
            if let exponential = contention["exponential"] {
                let share = full.calls / exponential.calls
                var check = Self.atMost(
                    "contention: full jitter's write calls under 0.75x exponential-without-jitter's",
                    comparedWith: "exponential, no jitter: \(Format.grouped(Int(exponential.calls.rounded()))) calls",
                    measured: share, limit: 0.75, digits: 2, unit: "x")
                check.measured = "\(Format.decimal(full.calls, 0)) (\(Format.decimal(share, 2))x)"
                checks.append(check)
            }
        }
        if let ours = contention["default"],
            let best = self.simulations.contention.min(by: { $0.calls < $1.calls })
        {
            let share = ours.calls / best.calls
            var check = Self.atMost(
                "contention: the default schedule within 1.1x the best schedule's write calls",
                comparedWith: "best in this run: \(best.schedule), \(Format.grouped(Int(best.calls.rounded()))) calls",
                measured: share, limit: 1.1, digits: 2, unit: "x")
            check.measured = "\(Format.decimal(ours.calls, 0)) (\(Format.decimal(share, 2))x)"
            checks.append(check)
        }
        let withoutBudget = self.simulations.outage.first { !$0.budget && !$0.breaker }
        for row in self.simulations.outage where !row.breaker {
            if row.budget {
                checks.append(
                    Self.atMost(
                        "outage with a budget: at most 1.15 attempts per request",
                        comparedWith: withoutBudget.map {
                            "no budget: \(Format.decimal($0.attemptsPerRequest, 3)) attempts"
                        } ?? "no budget: not run",
                        measured: row.attemptsPerRequest, limit: 1.15, digits: 3, unit: ""))
            } else {
                let maximum = Double(OutageSimulation.maximumAttempts)
                let gap = row.attemptsPerRequest - maximum
                checks.append(
                    TargetCheck(
                        description: "outage without a budget: exactly the configured maximum attempts per request",
                        comparedWith: "maximumAttempts: \(OutageSimulation.maximumAttempts)",
                        measured: Format.decimal(row.attemptsPerRequest, 3),
                        isMet: abs(gap) < 0.01,
                        gap: (gap > 0 ? "+" : "") + Format.decimal(gap, 3) + " attempts"))
            }
        }
        let breakerOutages = self.simulations.outage.filter(\.breaker)
        let withoutBreaker = withoutBudget?.recoveryMilliseconds.map { "no breaker: \(Format.milliseconds($0))" }
        if breakerOutages.isEmpty {
            checks.append(
                TargetCheck(
                    description: "outage with a breaker: time from recovery to the first success (reported)",
                    comparedWith: withoutBreaker ?? "no breaker: not run", measured: nil, isMet: nil))
        }
        for row in breakerOutages {
            checks.append(
                TargetCheck(
                    description: "outage with a breaker\(row.budget ? " and a budget" : ""): time from recovery to "
                        + "the first success (reported)",
                    comparedWith: withoutBreaker ?? "no breaker: not run",
                    measured: row.recoveryMilliseconds.map { Format.milliseconds($0) } ?? "none",
                    isMet: nil))
        }
        for row in self.simulations.throttle {
            let gap = row.attemptsPerRequest - 1
            checks.append(
                TargetCheck(
                    description: "throttle \(row.retryAfter ? "with" : "without") Retry-After: exactly 1.0 attempt "
                        + "per request",
                    comparedWith: "a classifier that asks to retry everything",
                    measured: Format.decimal(row.attemptsPerRequest, 3),
                    isMet: row.attemptsPerRequest == 1.0,
                    gap: "+" + Format.decimal(gap, 3) + " attempts"))
        }
        checks += self.toolboxTargets
        return checks
    }

    func overheadRow(_ name: String, _ caller: Caller) -> OverheadResult? {
        self.overhead.first { $0.name == name && $0.configuration == OverheadConfiguration(caller: caller) }
    }

    /// A goal met when `measured <= limit`; the gap of a miss is measured against `goal` (the limit by default).
    private static func atMost(
        _ description: String, comparedWith: String, measured: Double?, limit: Double, goal: Double? = nil,
        digits: Int, unit: String
    ) -> TargetCheck {
        let goal = goal ?? limit
        return TargetCheck(
            description: description, comparedWith: comparedWith,
            measured: measured.map { Format.decimal($0, digits) + unit },
            isMet: measured.map { $0 <= limit },
            gap: measured.map {
                let shown = Self.visibleDigits($0 - goal, from: digits)
                return "+\(Format.decimal($0 - goal, shown))\(unit) (\(Format.decimal($0, shown))\(unit) against "
                    + "at most \(Self.trimmed(goal))\(unit))"
            })
    }

    /// Allocations per call below which two counts are the same: the counter also sees the
    /// rare allocation of the runtime or the harness, spread over millions of calls.
    static let allocationTolerance = 0.01

    /// The gap of a goal on both time and allocations: each part that is missed, and only those.
    ///
    /// A row can meet the time and miss the allocations (or the other way round); the
    /// gap names what was missed, instead of printing a zero time gap.
    static func timeAndAllocationGap(
        ratio: Double, limit: Double, allocations: Double?, allowedAllocations: Double, allowedName: String
    ) -> String {
        var parts: [String] = []
        if ratio > limit {
            parts.append(
                "+" + Format.decimal(ratio - limit, Self.visibleDigits(ratio - limit, from: 2))
                    + "x over \(Self.trimmed(limit))x")
        }
        if let allocations, allocations >= allowedAllocations + Self.allocationTolerance {
            let excess = allocations - allowedAllocations
            let shown = Self.visibleDigits(excess, from: 2)
            parts.append(
                "+" + Format.decimal(excess, shown) + " allocations over " + allowedName + " ("
                    + Format.decimal(allocations, shown) + " against " + Format.decimal(allowedAllocations, shown) + ")"
            )
        }
        return parts.isEmpty ? "an unknown margin" : parts.joined(separator: "; ")
    }

    /// A goal met when `measured >= limit`.
    private static func atLeast(
        _ description: String, comparedWith: String, measured: Double?, limit: Double, digits: Int, unit: String
    ) -> TargetCheck {
        TargetCheck(
            description: description, comparedWith: comparedWith,
            measured: measured.map { Format.decimal($0, digits) + unit },
            isMet: measured.map { $0 >= limit },
            gap: measured.map {
                let shown = Self.visibleDigits(limit - $0, from: digits)
                return "-\(Format.decimal(limit - $0, shown))\(unit) (\(Format.decimal($0, shown))\(unit) against "
                    + "at least \(Self.trimmed(limit))\(unit))"
            })
    }

    /// Enough decimals, from `digits` up to 6, for a small nonzero gap not to print as zero.
    private static func visibleDigits(_ gap: Double, from digits: Int) -> Int {
        var shown = digits
        while shown < 6 && gap != 0 && abs(gap) < 0.5 * pow(10, Double(-shown)) { shown += 1 }
        return shown
    }

    /// `1.3` rather than `1.30`, `8` rather than `8.0`.
    private static func trimmed(_ value: Double) -> String {
        var text = Format.decimal(value, 3)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }
}
