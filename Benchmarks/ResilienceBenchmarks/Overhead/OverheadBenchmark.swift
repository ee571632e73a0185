/// Who calls, and from how many tasks at once.
struct OverheadConfiguration: Sendable, Hashable {
    /// Where the calling loop runs.
    var caller: Caller
    /// How many tasks share the subject; more than one only for nonisolated callers.
    var tasks: Int

    /// A configuration; the main actor is a single caller by nature.
    init(caller: Caller, tasks: Int = 1) {
        precondition(tasks >= 1, "at least one task")
        precondition(caller == .nonisolated || tasks == 1, "the main actor runs one loop at a time")
        self.caller = caller
        self.tasks = tasks
    }

    /// One nonisolated task.
    static let nonisolated = OverheadConfiguration(caller: .nonisolated)
    /// The main actor.
    static let mainActor = OverheadConfiguration(caller: .mainActor)
    /// Each caller once: the standard pair for a success or rejection path.
    static let bothCallers: [OverheadConfiguration] = [.nonisolated, .mainActor]
    /// `count` nonisolated tasks sharing one subject.
    static func tasks(_ count: Int) -> OverheadConfiguration {
        OverheadConfiguration(caller: .nonisolated, tasks: count)
    }
    /// The task counts of the contention rows, beyond the single task: 2 and 64.
    static let contention: [OverheadConfiguration] = [.tasks(2), .tasks(64)]
}

/// One row family of the overhead suite: a named subject and the configurations it is measured in.
///
/// A benchmark is a recipe: ``prepare`` builds the fixture (a policy, a tripped
/// breaker) once, and returns the loop runner for it. The runner is generic over
/// the subject's concrete type, so the timed loop is specialized for it.
struct OverheadBenchmark: Sendable {
    /// The row name in tables and JSON, such as `retry.success`.
    let name: String
    /// The configurations to measure, in table order.
    let configurations: [OverheadConfiguration]
    /// Builds the fixture and returns its runner.
    let prepare: @Sendable () async throws -> PreparedOverheadBenchmark
    /// Another row's subject, timed in alternation with this one for a goal that compares the two.
    let reference: OverheadReference?

    /// A benchmark of the subject `makeSubject` builds.
    init<Subject: OverheadSubject>(
        _ name: String,
        _ configurations: [OverheadConfiguration],
        subject makeSubject: @escaping @Sendable () async throws -> Subject
    ) {
        self.name = name
        self.configurations = configurations
        self.prepare = {
            let subject = try await makeSubject()
            return PreparedOverheadBenchmark { configuration, iterations, countingAllocations in
                await MeasurementLoops.run(
                    subject, configuration, iterations: iterations, countingAllocations: countingAllocations)
            }
        }
        self.reference = nil
    }

    /// The same benchmark measured in other configurations.
    func with(configurations: [OverheadConfiguration]) -> OverheadBenchmark {
        OverheadBenchmark(
            name: self.name, configurations: configurations, prepare: self.prepare, reference: self.reference)
    }

    /// The same benchmark, with `other`'s subject timed in alternation with its own.
    ///
    /// For a goal stated against another row: two rows are measured one after the
    /// other, seconds apart, and on a shared machine the load can change in between,
    /// so the ratio of their medians moves with it. Timed in turns, repetition by
    /// repetition, the two loops see the same load.
    func timed(against other: OverheadBenchmark) -> OverheadBenchmark {
        OverheadBenchmark(
            name: self.name, configurations: self.configurations, prepare: self.prepare,
            reference: OverheadReference(name: other.name, prepare: other.prepare))
    }

    private init(
        name: String,
        configurations: [OverheadConfiguration],
        prepare: @escaping @Sendable () async throws -> PreparedOverheadBenchmark,
        reference: OverheadReference?
    ) {
        self.name = name
        self.configurations = configurations
        self.prepare = prepare
        self.reference = reference
    }
}

/// A row's subject timed beside another row's: see ``OverheadBenchmark/timed(against:)``.
struct OverheadReference: Sendable {
    /// The name of the other row.
    let name: String
    /// Builds the other row's fixture and returns its runner.
    let prepare: @Sendable () async throws -> PreparedOverheadBenchmark
}

/// A fixture ready to be timed.
struct PreparedOverheadBenchmark: Sendable {
    /// Runs `iterations` calls in a configuration, optionally counting allocations.
    let run: @Sendable (OverheadConfiguration, Int, Bool) async -> LoopMeasurement
}

/// The measured cost of one row.
struct OverheadResult: Sendable {
    /// The benchmark's name.
    var name: String
    /// Who called.
    var configuration: OverheadConfiguration
    /// Nanoseconds per call through the subject, over the repetitions.
    var subject: Summary
    /// Nanoseconds per direct call in the same configuration, interleaved with the subject's repetitions.
    var baseline: Summary
    /// Nanoseconds per direct call of the plain nonisolated operation, interleaved the same way.
    var plainBaseline: Summary
    /// Heap allocations per call, or `nil` when the counter is unavailable.
    var allocationsPerOperation: Double?
    /// Calls per repetition of the subject's loop.
    var iterations: Int
    /// Repetitions of each loop.
    var repetitions: Int
    /// The other row's subject timed in alternation with this one, when the benchmark names one.
    var reference: ReferenceMeasurement? = nil

    /// The subject's median over the baseline's median.
    var ratio: Double {
        self.subject.median / self.baseline.median
    }

    /// The subject's median over the plain baseline's median.
    var plainRatio: Double {
        self.subject.median / self.plainBaseline.median
    }
}

/// Another row's subject, timed in the same repetitions as a row's subject.
struct ReferenceMeasurement: Sendable {
    /// The other row's name.
    var name: String
    /// Nanoseconds per call of the other row's subject.
    var reference: Summary
    /// The subject's time over the reference's, per repetition (each pair timed back to back).
    var ratio: Summary
    /// The same ratio of the CPU time the process used, per repetition; it does not
    /// move with the share of a core the loops got on a busy machine.
    var processorTimeRatio: Summary?
}
