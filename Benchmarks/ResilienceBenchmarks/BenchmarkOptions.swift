/// The command line of `resilience-benchmarks`.
struct BenchmarkOptions: Sendable {
    /// Which parts to run.
    enum Part: String, Sendable, CaseIterable {
        case overhead
        case memory
        case primitives
        case simulations
    }

    /// `--quick`: few, short repetitions and smaller toolbox simulations; for CI, not for publishing.
    var isQuick = false
    /// `--json`: print one JSON document instead of tables.
    var printsJSON = false
    /// `--svg DIR`: write the charts into this directory.
    var svgDirectory: String?
    /// `--seed N`: the simulations' seed.
    var seed: UInt64 = 2_015
    /// `--only PART[,PART]`: run only these parts.
    var parts = Set(Part.allCases)
    /// `--quiet`: no progress lines on standard error.
    var isQuiet = false
    /// `--filter TEXT`: only the overhead rows whose name contains this (and the direct call).
    var filter: String?
    /// `--soak`: run the breaker memory soak instead of the benchmarks.
    var isSoak = false
    /// `--soak-calls N`: measured calls per soak phase, instead of 10 million (1 million with `--quick`).
    var soakCalls: Int?

    /// Measured calls per soak phase.
    var soakCallsPerPhase: Int {
        self.soakCalls ?? (self.isQuick ? 1_000_000 : 10_000_000)
    }

    /// The usage text of `--help`.
    static let usage = """
        usage: resilience-benchmarks [--quick] [--json] [--svg DIR] [--seed N] [--only PARTS] [--filter TEXT] [--quiet]
               resilience-benchmarks --soak [--quick] [--soak-calls N] [--json] [--quiet]

        Measures what swift-resilience costs when nothing fails, and what it does to a
        server when things do. Build in release mode: swift run -c release resilience-benchmarks

          --quick        few short repetitions and smaller toolbox simulations (for CI; figures are noisier)
          --json         print one JSON document on standard output instead of tables
          --svg DIR      also write the charts as SVG files into DIR
          --seed N       seed of the simulations (default 2015); the same seed gives the same figures
          --only PARTS   comma-separated subset of: overhead, memory, primitives, simulations
          --filter TEXT  only the overhead rows whose name contains TEXT (the direct call always runs)
          --quiet        no progress lines on standard error
          --soak         instead of the benchmarks, the breaker memory soak: 10 million calls per phase
                         (1 million with --quick) through a time-window breaker, retry around breaker, and a
                         bounded registry; reports resident memory at the start, after warm-up and at the end
          --soak-calls N measured calls per soak phase
        """

    /// Parses `arguments` (without the program name).
    static func parse(_ arguments: [String]) throws(UsageError) -> BenchmarkOptions {
        var options = BenchmarkOptions()
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--quick":
                options.isQuick = true
            case "--json":
                options.printsJSON = true
            case "--quiet":
                options.isQuiet = true
            case "--soak":
                options.isSoak = true
            case "--soak-calls":
                guard let text = remaining.popFirst(), let calls = Int(text), calls >= 10 else {
                    throw UsageError("--soak-calls needs an integer of at least 10")
                }
                options.soakCalls = calls
            case "--svg":
                guard let directory = remaining.popFirst() else { throw UsageError("--svg needs a directory") }
                options.svgDirectory = directory
            case "--seed":
                guard let text = remaining.popFirst(), let seed = UInt64(text) else {
                    throw UsageError("--seed needs a non-negative integer")
                }
                options.seed = seed
            case "--filter":
                guard let text = remaining.popFirst() else { throw UsageError("--filter needs some text") }
                options.filter = text
            case "--only":
                guard let text = remaining.popFirst() else { throw UsageError("--only needs a list of parts") }
                var parts = Set<Part>()
                for name in text.split(separator: ",") {
                    guard let part = Part(rawValue: String(name)) else {
                        throw UsageError("unknown part '\(name)'")
                    }
                    parts.insert(part)
                }
                options.parts = parts
            case "--help", "-h":
                throw UsageError(nil)
            default:
                throw UsageError("unknown argument '\(argument)'")
            }
        }
        return options
    }
}

/// A command line the benchmark cannot run; `nil` message means `--help`.
struct UsageError: Error {
    /// What was wrong, or `nil` when the user asked for help.
    var message: String?

    init(_ message: String?) {
        self.message = message
    }
}
