import Resilience
import Synchronization

/// A row of the primitives table: the cost of one synchronization building block,
/// uncontended, on one thread.
///
/// These explain the overhead rows: what the package's `Lock` costs against
/// `Synchronization.Mutex` (the comparison behind the choice of lock; see Docs/DesignDecisions.md), what a relaxed
/// atomic add costs, and what checking `Task.isCancelled` costs, which the retry
/// fast path does once per call.
struct PrimitiveBenchmark: Sendable {
    /// The row name, such as `lock.pthread`.
    let name: String
    /// What one operation is.
    let detail: String
    /// Runs the operation `iterations` times and returns the time taken.
    let run: @Sendable (Int) -> Duration

    /// Times `run` in `repetitions` repetitions of about `target` each; nanoseconds per operation.
    func measure(settings: MeasurementSettings) -> Summary {
        var iterations = 1_000
        _ = self.run(iterations)
        while true {
            let elapsed = self.run(iterations).nanoseconds
            if elapsed >= settings.targetDuration.nanoseconds / 8 || iterations >= 100_000_000 {
                iterations = Swift.max(1, Int(Double(iterations) * settings.targetDuration.nanoseconds / elapsed))
                break
            }
            iterations *= 8
        }
        var samples: [Double] = []
        for _ in 0..<settings.repetitions {
            samples.append(self.run(iterations).nanoseconds / Double(iterations))
        }
        return Summary(samples)
    }
}

/// The primitives table.
enum PrimitiveCatalog {
    /// Every row, in order: the synchronization primitives, the circuit breaker's building
    /// blocks (`PrimitiveCatalog+CircuitBreaker.swift`), then the reading of one failure
    /// (`PrimitiveCatalog+FailureAnalysis.swift`).
    static var all: [PrimitiveBenchmark] {
        Self.synchronization + Self.circuitBreaker + Self.failureAnalysis
    }

    /// The synchronization primitives.
    static let synchronization: [PrimitiveBenchmark] = [
        PrimitiveBenchmark(name: "lock.pthread", detail: "Resilience's Lock: lock, add, unlock") { iterations in
            let lock = Lock(0)
            return time {
                for _ in 0..<iterations {
                    lock.withLock { $0 &+= 1 }
                }
                blackHole(lock.withLock { $0 })
            }
        },
        PrimitiveBenchmark(name: "mutex.synchronization", detail: "Synchronization.Mutex: lock, add, unlock") {
            iterations in
            let mutex = Mutex(0)
            return time {
                for _ in 0..<iterations {
                    mutex.withLock { $0 &+= 1 }
                }
                blackHole(mutex.withLock { $0 })
            }
        },
        PrimitiveBenchmark(name: "atomic.relaxed-add", detail: "Atomic<Int>.wrappingAdd, relaxed") { iterations in
            let counter = Atomic(0)
            return time {
                for _ in 0..<iterations {
                    counter.wrappingAdd(1, ordering: .relaxed)
                }
                blackHole(counter.load(ordering: .relaxed))
            }
        },
        PrimitiveBenchmark(name: "task.is-cancelled", detail: "reading Task.isCancelled in a task") { iterations in
            time {
                var cancelled = 0
                for _ in 0..<iterations where Task.isCancelled {
                    cancelled &+= 1
                }
                blackHole(cancelled)
            }
        },
    ]

    /// The wall-clock time `body` takes.
    @inline(__always)
    static func time(_ body: () -> Void) -> Duration {
        let clock = ContinuousClock()
        let start = clock.now
        body()
        return start.duration(to: clock.now)
    }
}
