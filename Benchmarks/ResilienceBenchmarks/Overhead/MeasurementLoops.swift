#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a benchmark loop runs.
enum Caller: String, Sendable, CaseIterable {
    /// A task on the global concurrent executor, isolated to no actor.
    case nonisolated = "nonisolated"
    /// The main actor.
    case mainActor = "main-actor"
}

/// What one run of a loop measured.
struct LoopMeasurement: Sendable {
    /// Wall-clock time of the loop alone.
    var elapsed: Duration
    /// Heap allocations during the loop, when they were counted.
    var allocations: Int?
    /// CPU time the process used during the run, starting the loop's tasks included.
    var processorTime: Duration? = nil
}

/// The timed loops. Each is generic over the subject, so the compiler specializes
/// it and the subject's call is a direct (usually inlined) call, as in user code.
enum MeasurementLoops {
    /// Runs `iterations` calls in a row on the main actor.
    @inline(never)
    @MainActor static func mainActor<Subject: OverheadSubject>(
        _ subject: Subject,
        iterations: Int,
        countingAllocations: Bool
    ) async -> LoopMeasurement {
        let clock = ContinuousClock()
        var value = Workload.seed(1)
        let counters = countingAllocations ? AllocationCounter.start() : nil
        let start = clock.now
        for _ in 0..<iterations {
            value = await subject.callFromMainActor(value)
        }
        let end = clock.now
        let allocations = counters.map { AllocationCounter.stop(since: $0).allocations }
        blackHole(value)
        return LoopMeasurement(elapsed: start.duration(to: end), allocations: allocations)
    }

    /// Runs `iterations` calls spread over `tasks` nonisolated child tasks that share `subject`.
    ///
    /// Every nonisolated row runs here, one task included, so that all of them
    /// share one loop shape. (The shape matters: the same direct call measured
    /// in a loop inside a nonisolated `static func` costs about 6 ns more, an
    /// executor switch after each call that a child task's closure does not
    /// need. The child task gives the cheaper, stricter baseline.) The time
    /// covers starting the tasks and waiting for the last one, so it is the
    /// wall-clock cost of the whole batch: throughput, not latency.
    @inline(never)
    static func concurrent<Subject: OverheadSubject>(
        _ subject: Subject,
        tasks: Int,
        iterations: Int,
        countingAllocations: Bool
    ) async -> LoopMeasurement {
        let perTask = Swift.max(1, iterations / tasks)
        let clock = ContinuousClock()
        let counters = countingAllocations ? AllocationCounter.start() : nil
        let start = clock.now
        await withTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var value = Workload.seed(task + 1)
                    for _ in 0..<perTask {
                        value = await subject.call(value)
                    }
                    return value
                }
            }
            for await value in group {
                blackHole(value)
            }
        }
        let end = clock.now
        let allocations = counters.map { AllocationCounter.stop(since: $0).allocations }
        return LoopMeasurement(elapsed: start.duration(to: end), allocations: allocations)
    }

    /// Runs the loop `configuration` calls for, `iterations` calls in all.
    static func run<Subject: OverheadSubject>(
        _ subject: Subject,
        _ configuration: OverheadConfiguration,
        iterations: Int,
        countingAllocations: Bool = false
    ) async -> LoopMeasurement {
        let processorStart = Self.processorTime()
        var measured =
            switch configuration.caller {
            case .mainActor:
                await Self.mainActor(subject, iterations: iterations, countingAllocations: countingAllocations)
            case .nonisolated:
                await Self.concurrent(
                    subject, tasks: configuration.tasks, iterations: iterations,
                    countingAllocations: countingAllocations)
            }
        measured.processorTime = Self.processorTime() - processorStart
        return measured
    }

    /// The CPU time the whole process has used so far (`CLOCK_PROCESS_CPUTIME_ID`).
    ///
    /// Unlike the wall-clock time, it does not grow while the loop's thread waits for
    /// a core that other work on the machine holds. The loops run while the rest of
    /// the process is idle, so the difference over a run is the loop's own CPU time.
    static func processorTime() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }
}
