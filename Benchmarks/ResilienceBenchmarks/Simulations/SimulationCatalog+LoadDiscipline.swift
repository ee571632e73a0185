extension SimulationCatalog {
    /// The figures of the four simulations of what the library does to a server under stress.
    struct LoadDisciplineResults: Sendable {
        /// Without and with the nested-retry guard.
        var nested: [NestedRetryResult] = []
        /// Without and with adaptive throttling.
        var throttling: [AdaptiveThrottlingResult] = []
        /// Ignoring and honouring the RateLimit field.
        var rateLimit: [RateLimitHeaderResult] = []
        /// Without and with jittered open durations.
        var probeWaves: [ProbeWaveResult] = []
    }

    /// Runs the four simulations, each without and with its feature.
    static func runLoadDiscipline(seed: UInt64, progress: Progress) async throws -> LoadDisciplineResults {
        var results = LoadDisciplineResults()
        for guarded in [false, true] {
            let result = try await NestedRetrySimulation(seed: seed).run(guarded: guarded)
            progress.note("nested guard=\(guarded): \(Format.decimal(result.attemptsPerRequest, 2)) attempts/request")
            results.nested.append(result)
        }
        for throttling in [false, true] {
            let result = try AdaptiveThrottlingSimulation(seed: seed).run(throttling: throttling)
            progress.note(
                "adaptive-throttling throttling=\(throttling): "
                    + "\(Format.decimal(result.serverRequestsPerOffered, 4)) server requests/offered, "
                    + "recovery \(result.recoveryWindows.map { Format.decimal($0, 2) } ?? "never") windows")
            results.throttling.append(result)
        }
        for honoured in [false, true] {
            let result = try RateLimitHeaderSimulation(seed: seed).run(honoured: honoured)
            progress.note("ratelimit-headers honoured=\(honoured): \(result.tooManyRequests) 429s")
            results.rateLimit.append(result)
        }
        for jitter in [false, true] {
            let result = try await ProbeWaveSimulation(seed: seed).run(jitter: jitter)
            progress.note(
                "probe-waves jitter=\(jitter): \(Format.decimal(result.maxProbesPer100msShare, 2)) of clients in one 100 ms slot"
            )
            results.probeWaves.append(result)
        }
        return results
    }
}

extension BenchmarkReport {
    /// The JSON rows of the load-discipline simulations.
    var loadDisciplineJSON: [JSONValue] {
        let results = self.simulations.loadDiscipline
        var rows: [JSONValue] = []
        for row in results.nested {
            rows.append(
                .object([
                    ("name", .string("nested")), ("guard", .bool(row.guarded)),
                    ("attempts_per_request", .decimal(row.attemptsPerRequest, 4)),
                    ("requests", .integer(row.requests)), ("layers", .integer(row.layers)),
                    ("attempts_per_layer", .integer(row.attemptsPerLayer)),
                ]))
        }
        for row in results.throttling {
            rows.append(
                .object([
                    ("name", .string("adaptive-throttling")), ("throttling", .bool(row.throttling)),
                    ("server_requests_per_offered", .decimal(row.serverRequestsPerOffered, 4)),
                    ("recovery_windows", row.recoveryWindows.map { .decimal($0, 3) } ?? .null),
                ]))
        }
        for row in results.rateLimit {
            rows.append(
                .object([
                    ("name", .string("ratelimit-headers")), ("honoured", .bool(row.honoured)),
                    ("too_many_requests", .integer(row.tooManyRequests)), ("requests", .integer(row.requests)),
                ]))
        }
        for row in results.probeWaves {
            rows.append(
                .object([
                    ("name", .string("probe-waves")), ("jitter", .bool(row.jitter)),
                    ("max_probes_per_100ms_share", .decimal(row.maxProbesPer100msShare, 3)),
                    ("probes", .integer(row.probes)), ("clients", .integer(row.clients)),
                ]))
        }
        return rows
    }

    /// The text table of the load-discipline simulations.
    var loadDisciplineTable: String {
        let results = self.simulations.loadDiscipline
        var table = TextTable([
            ("simulation", .left), ("feature", .left), ("figure", .left), ("value", .right), ("goal", .left),
        ])
        for row in results.nested {
            table.append([
                "nested (3 layers x 3 attempts)", row.guarded ? "guard" : "none", "attempts/request",
                Format.decimal(row.attemptsPerRequest, 2), "at most 3",
            ])
        }
        for row in results.throttling {
            table.append([
                "adaptive-throttling (outage)", row.throttling ? "throttle" : "none", "server requests/offered",
                Format.decimal(row.serverRequestsPerOffered, 4), "at most 0.1",
            ])
            table.append([
                "", "", "windows to full traffic", row.recoveryWindows.map { Format.decimal($0, 2) } ?? "never",
                "within 2",
            ])
        }
        for row in results.rateLimit {
            table.append([
                "ratelimit-headers", row.honoured ? "honoured" : "ignored", "429s after the first response",
                String(row.tooManyRequests), "0",
            ])
        }
        for row in results.probeWaves {
            table.append([
                "probe-waves (100 breakers)", row.jitter ? "jitter 20%" : "none", "largest 100 ms slot share",
                Format.decimal(row.maxProbesPer100msShare, 2), "at most 0.25",
            ])
        }
        return "What the library does to a server (each without and with its feature)\n" + table.rendered
    }
}
