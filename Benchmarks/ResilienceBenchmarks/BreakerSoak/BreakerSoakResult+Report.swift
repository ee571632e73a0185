extension BreakerSoakResult {
    /// The soak as text for standard output.
    func tables(environment: RunEnvironment) -> String {
        var phases = TextTable([
            ("phase", .left), ("what", .left), ("calls", .right), ("s", .right), ("ns/call", .right),
            ("ok", .right), ("failed", .right), ("rejected", .right), ("transitions", .right),
            ("allocs/call", .right), ("RSS after", .right),
        ])
        for phase in self.phases {
            phases.append([
                phase.name, phase.detail, Format.grouped(phase.calls), Format.decimal(phase.seconds, 1),
                Format.decimal(phase.seconds * 1e9 / Double(phase.calls), 0),
                Format.grouped(phase.counts.successes), Format.grouped(phase.counts.failures),
                Format.grouped(phase.counts.rejections), Format.grouped(phase.transitions),
                phase.allocationsPerCall.map { Format.decimal($0, 2) } ?? "n/a",
                phase.residentAfter.map { BreakerSoak.mebibytes($0) + " MiB" } ?? "n/a",
            ])
        }
        var lines = [
            "swift-resilience breaker soak (\(environment.mode) run)",
            "date: \(environment.date)",
            "swift: \(environment.swift)",
            "machine: \(environment.machine)",
            "",
            "\(Format.grouped(self.callsPerPhase)) calls per phase after \(Format.grouped(self.warmUpCallsPerPhase)) "
                + "warm-up calls each; virtual time, 1 ms per call",
            phases.rendered,
        ]
        for phase in self.phases {
            guard let registry = phase.registry else { continue }
            lines.append(
                "registry: \(Format.grouped(registry.count)) breakers held at the end, at most "
                    + "\(Format.grouped(registry.maximumCount)) at any sample, bound \(Format.grouped(registry.bound)); "
                    + "\(Format.grouped(registry.breakersMade)) breakers made")
        }
        lines.append(
            "resident memory (VmRSS): start \(Self.mib(self.residentStart)), after warm-up "
                + "\(Self.mib(self.residentAfterWarmUp)), peak after warm-up \(Self.mib(self.residentPeak)), "
                + "end \(Self.mib(self.residentEnd))")
        lines.append(
            "growth after warm-up: resident \(Self.signedMib(self.residentGrowth)), "
                + "live heap \(Self.signedMib(self.heapGrowth))"
                + (self.heapGrowth.map { " (\(Format.grouped($0)) bytes)" } ?? ""))
        return lines.joined(separator: "\n") + "\n"
    }

    /// The soak as one JSON document.
    func json(environment: RunEnvironment) -> JSONValue {
        .object([
            ("swift", .string(environment.swift)),
            ("machine", .string(environment.machine)),
            (
                "soak",
                .object([
                    ("calls_per_phase", .integer(self.callsPerPhase)),
                    ("warm_up_calls_per_phase", .integer(self.warmUpCallsPerPhase)),
                    ("rss_start_bytes", Self.integer(self.residentStart)),
                    ("rss_after_warm_up_bytes", Self.integer(self.residentAfterWarmUp)),
                    ("rss_peak_bytes", Self.integer(self.residentPeak)),
                    ("rss_end_bytes", Self.integer(self.residentEnd)),
                    ("rss_growth_after_warm_up_bytes", Self.integer(self.residentGrowth)),
                    ("heap_after_warm_up_bytes", Self.integer(self.heapAfterWarmUp)),
                    ("heap_end_bytes", Self.integer(self.heapEnd)),
                    ("heap_growth_after_warm_up_bytes", Self.integer(self.heapGrowth)),
                    (
                        "phases",
                        .array(
                            self.phases.map { phase in
                                var fields: [(String, JSONValue)] = [
                                    ("name", .string(phase.name)),
                                    ("calls", .integer(phase.calls)),
                                    ("seconds", .decimal(phase.seconds, 3)),
                                    ("successes", .integer(phase.counts.successes)),
                                    ("failures", .integer(phase.counts.failures)),
                                    ("rejections", .integer(phase.counts.rejections)),
                                    ("attempts", .integer(phase.counts.attempts)),
                                    ("transitions", .integer(phase.transitions)),
                                    ("allocations_per_call", .decimal(phase.allocationsPerCall, 3)),
                                    ("rss_after_bytes", Self.integer(phase.residentAfter)),
                                ]
                                if let registry = phase.registry {
                                    fields += [
                                        ("registry_bound", .integer(registry.bound)),
                                        ("registry_count", .integer(registry.count)),
                                        ("registry_maximum_count", .integer(registry.maximumCount)),
                                        ("breakers_made", .integer(registry.breakersMade)),
                                    ]
                                }
                                return .object(fields)
                            })
                    ),
                ])
            ),
            ("run", .object([("date", .string(environment.date)), ("mode", .string(environment.mode))])),
        ])
    }

    private static func integer(_ value: Int?) -> JSONValue {
        value.map(JSONValue.integer) ?? .null
    }

    private static func mib(_ bytes: Int?) -> String {
        bytes.map { BreakerSoak.mebibytes($0) + " MiB" } ?? "n/a"
    }

    private static func signedMib(_ bytes: Int?) -> String {
        guard let bytes else { return "n/a" }
        return (bytes >= 0 ? "+" : "-") + BreakerSoak.mebibytes(abs(bytes)) + " MiB"
    }
}
