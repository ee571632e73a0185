// resilience-benchmarks: what swift-resilience costs when nothing fails, and what
// it does to a server when things do. See Docs/Benchmarks.md.

import Foundation

let options: BenchmarkOptions
do {
    options = try BenchmarkOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    if let message = error.message {
        FileHandle.standardError.write(Data("error: \(message)\n\n\(BenchmarkOptions.usage)\n".utf8))
        exit(2)
    }
    print(BenchmarkOptions.usage)
    exit(0)
}

let progress = Progress(isEnabled: !options.isQuiet)
let settings = options.isQuick ? MeasurementSettings.quick : MeasurementSettings.standard
let started = ContinuousClock.now

#if DEBUG
    progress.note("warning: this is a debug build; run `swift run -c release resilience-benchmarks` for real figures")
#endif

if options.isSoak {
    let environment = RunEnvironment.current(mode: options.isQuick ? "quick soak" : "soak", seed: options.seed)
    do {
        let soak = try await BreakerSoak(calls: options.soakCallsPerPhase, progress: progress).run()
        print(
            options.printsJSON
                ? soak.json(environment: environment).serialized() : soak.tables(environment: environment),
            terminator: options.printsJSON ? "\n" : "")
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        exit(1)
    }
    progress.note("done in \(Format.decimal((ContinuousClock.now - started).milliseconds / 1_000, 1)) s")
    exit(0)
}

var report = BenchmarkReport(
    environment: RunEnvironment.current(mode: options.isQuick ? "quick" : "standard", seed: options.seed),
    allocationCounter: await OverheadRunner.checkAllocationCounter())

do {
    if options.parts.contains(.overhead) {
        let runner = OverheadRunner(
            settings: settings, countsAllocations: report.allocationCounter.isVerified, progress: progress)
        report.overhead = try await runner.run(OverheadCatalog.all(filter: options.filter))
    }
    if options.parts.contains(.memory) && report.allocationCounter.isVerified {
        report.memory = try MemoryCatalog.all().map { try $0.measure(count: 1_000) }
    }
    if options.parts.contains(.primitives) {
        report.primitives = PrimitiveCatalog.all.map { ($0.name, $0.detail, $0.measure(settings: settings)) }
    }
    if options.parts.contains(.simulations) {
        report.simulations = try await SimulationCatalog.run(
            seed: options.seed, isQuick: options.isQuick, progress: progress)
    }
    if let directory = options.svgDirectory {
        for path in try report.writeCharts(to: directory) {
            progress.note("wrote \(path)")
        }
    }
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(1)
}

if options.printsJSON {
    print(report.json.serialized())
} else {
    print(report.tables, terminator: "")
}
progress.note("done in \(Format.decimal((ContinuousClock.now - started).milliseconds / 1_000, 1)) s")
