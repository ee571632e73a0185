/// How long and how often each loop runs.
struct MeasurementSettings: Sendable {
    /// Timed repetitions of each loop; the median is reported.
    var repetitions: Int
    /// The wall-clock time one repetition aims at; the iteration count is calibrated to it.
    var targetDuration: Duration

    /// The settings of a full run.
    static let standard = MeasurementSettings(repetitions: 15, targetDuration: .milliseconds(25))
    /// The settings of `--quick`: enough to check that everything runs, not to publish.
    static let quick = MeasurementSettings(repetitions: 3, targetDuration: .milliseconds(2))
}

/// Runs the overhead benchmarks: calibrates, times subject and baseline in
/// alternation, and counts allocations in a separate pass.
struct OverheadRunner {
    /// Repetitions and target time.
    var settings: MeasurementSettings
    /// Whether to count allocations; false when the counter is unavailable or failed its check.
    var countsAllocations: Bool
    /// Where progress lines go.
    var progress: Progress

    private static let maximumIterations = 50_000_000

    /// Measures every configuration of every benchmark, in order.
    func run(_ benchmarks: [OverheadBenchmark]) async throws -> [OverheadResult] {
        let baseline = try await OverheadCatalog.baseline.prepare()
        let plainBaseline = try await OverheadCatalog.plainBaseline.prepare()
        var results: [OverheadResult] = []
        for benchmark in benchmarks {
            let prepared = try await benchmark.prepare()
            var reference: (name: String, runner: PreparedOverheadBenchmark)?
            if let other = benchmark.reference { reference = (other.name, try await other.prepare()) }
            for configuration in benchmark.configurations {
                let result = await self.measure(
                    benchmark.name, prepared, against: baseline, plainBaseline, beside: reference, in: configuration)
                self.progress.note(
                    "overhead \(result.name) [\(configuration.caller.rawValue), \(configuration.tasks) task(s)]: "
                        + "\(Format.decimal(result.subject.median, 1)) ns/op, ratio \(Format.decimal(result.ratio, 2))")
                results.append(result)
            }
        }
        return results
    }

    /// Checks that the allocation counter sees allocations: a control that allocates
    /// one object per call must count about one allocation per call.
    static func checkAllocationCounter() async -> AllocationCounterCheck {
        guard AllocationCounter.isSupported else {
            return AllocationCounterCheck(isSupported: false, controlAllocationsPerOperation: nil)
        }
        let subject = AllocatingControl()
        let iterations = 10_000
        _ = await MeasurementLoops.run(subject, .nonisolated, iterations: 100)
        // The count includes starting the one child task: a few allocations over 10,000 calls.
        let measured = await MeasurementLoops.run(
            subject, .nonisolated, iterations: iterations, countingAllocations: true)
        let perCall = Double(measured.allocations ?? 0) / Double(iterations)
        return AllocationCounterCheck(isSupported: true, controlAllocationsPerOperation: perCall)
    }

    private func measure(
        _ name: String,
        _ subject: PreparedOverheadBenchmark,
        against baseline: PreparedOverheadBenchmark,
        _ plainBaseline: PreparedOverheadBenchmark,
        beside reference: (name: String, runner: PreparedOverheadBenchmark)?,
        in configuration: OverheadConfiguration
    ) async -> OverheadResult {
        let subjectIterations = await self.calibrate(subject, configuration)
        let baselineIterations = await self.calibrate(baseline, configuration)
        let plainIterations = await self.calibrate(plainBaseline, configuration)
        var referenceIterations = 0
        if let reference { referenceIterations = await self.calibrate(reference.runner, configuration) }
        var subjectSamples: [Double] = []
        var baselineSamples: [Double] = []
        var plainSamples: [Double] = []
        var referenceSamples: [Double] = []
        var referenceRatios: [Double] = []
        var processorTimeRatios: [Double] = []
        // Alternate the loops so that drift (frequency scaling, a noisy
        // neighbour) affects them alike, and rotate their order from one
        // repetition to the next so that no loop always runs first, or always
        // right after the same other loop. The subject and the reference stay
        // back to back, in an order that swaps every repetition.
        for repetition in 0..<self.settings.repetitions {
            var measured: LoopMeasurement?
            var other: LoopMeasurement?
            for turn in 0..<3 {
                switch (repetition + turn) % 3 {
                case 0:
                    let base = await baseline.run(configuration, baselineIterations, false)
                    baselineSamples.append(base.elapsed.nanoseconds / Double(baselineIterations))
                case 1:
                    let plain = await plainBaseline.run(configuration, plainIterations, false)
                    plainSamples.append(plain.elapsed.nanoseconds / Double(plainIterations))
                default:
                    if repetition.isMultiple(of: 2) {
                        measured = await subject.run(configuration, subjectIterations, false)
                        other = await reference?.runner.run(configuration, referenceIterations, false)
                    } else {
                        other = await reference?.runner.run(configuration, referenceIterations, false)
                        measured = await subject.run(configuration, subjectIterations, false)
                    }
                }
            }
            guard let measured else { continue }
            let perCall = measured.elapsed.nanoseconds / Double(subjectIterations)
            subjectSamples.append(perCall)
            if let other {
                let otherPerCall = other.elapsed.nanoseconds / Double(referenceIterations)
                referenceSamples.append(otherPerCall)
                referenceRatios.append(perCall / Swift.max(otherPerCall, .leastNonzeroMagnitude))
                if let own = measured.processorTime, let theirs = other.processorTime {
                    let ownPerCall = own.nanoseconds / Double(subjectIterations)
                    let theirsPerCall = theirs.nanoseconds / Double(referenceIterations)
                    processorTimeRatios.append(ownPerCall / Swift.max(theirsPerCall, .leastNonzeroMagnitude))
                }
            }
        }
        var allocationsPerOperation: Double?
        if self.countsAllocations {
            let counted = await subject.run(configuration, subjectIterations, true)
            allocationsPerOperation = counted.allocations.map { Double($0) / Double(subjectIterations) }
        }
        return OverheadResult(
            name: name,
            configuration: configuration,
            subject: Summary(subjectSamples),
            baseline: Summary(baselineSamples),
            plainBaseline: Summary(plainSamples),
            allocationsPerOperation: allocationsPerOperation,
            iterations: subjectIterations,
            repetitions: self.settings.repetitions,
            reference: reference.map {
                ReferenceMeasurement(
                    name: $0.name, reference: Summary(referenceSamples), ratio: Summary(referenceRatios),
                    processorTimeRatio: processorTimeRatios.isEmpty ? nil : Summary(processorTimeRatios))
            })
    }

    /// The iteration count whose loop takes about the target time, after a warm-up run.
    private func calibrate(
        _ subject: PreparedOverheadBenchmark,
        _ configuration: OverheadConfiguration
    ) async -> Int {
        let target = self.settings.targetDuration.nanoseconds
        var iterations = 16 * configuration.tasks
        _ = await subject.run(configuration, iterations, false)
        while true {
            let elapsed = await subject.run(configuration, iterations, false).elapsed.nanoseconds
            if elapsed >= target / 8 || iterations >= Self.maximumIterations {
                let scaled = Double(iterations) * target / Swift.max(elapsed, 1)
                // A whole number of calls per task, so that every task runs the same loop.
                let perTask = Swift.max(1, Int((scaled / Double(configuration.tasks)).rounded()))
                return Swift.min(Self.maximumIterations, perTask * configuration.tasks)
            }
            let factor = elapsed > 0 ? Swift.min(64, Swift.max(2, target / 8 / elapsed * 2)) : 64
            iterations = Swift.min(Self.maximumIterations, Int(Double(iterations) * factor))
        }
    }
}

/// Whether allocation counts can be trusted in this run.
struct AllocationCounterCheck: Sendable {
    /// Whether the build interposes the allocator at all.
    var isSupported: Bool
    /// Allocations counted per call of a control that allocates exactly one object per call.
    var controlAllocationsPerOperation: Double?

    /// The counter is supported and counted the control's allocations.
    var isVerified: Bool {
        guard self.isSupported, let perCall = self.controlAllocationsPerOperation else { return false }
        return perCall >= 0.99 && perCall < 1.5
    }
}
