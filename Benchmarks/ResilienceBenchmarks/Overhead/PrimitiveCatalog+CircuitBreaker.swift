import Resilience

extension PrimitiveCatalog {
    /// The pieces of the breaker's time-window success path, timed alone: reading the
    /// breaker's clock, and recording a success in a time window under the breaker's lock.
    /// Together with the consecutive rule's row they account for `breaker.success.window`.
    static let circuitBreaker: [PrimitiveBenchmark] = [
        PrimitiveBenchmark(
            name: "clock.elapsed-now", detail: "the breaker's clock read (ContinuousClock, type-erased)"
        ) { iterations in
            let clock = ElapsedClock(ContinuousClock())
            return time {
                var last = Duration.zero
                for _ in 0..<iterations {
                    last = clock.now()
                }
                blackHole(last)
            }
        },
        PrimitiveBenchmark(
            name: "breaker.window-record", detail: "lock, record a success in a 30 s window, unlock"
        ) { iterations in
            let machine = Lock(CircuitBreakerStateMachine(configuration: Self.timeWindowConfiguration))
            let permit = CircuitBreakerPermit(generation: 0, ticket: 0, start: nil)
            return time {
                var now = Duration.seconds(1)
                let step = Duration.nanoseconds(50)
                for _ in 0..<iterations {
                    now += step
                    _ = machine.withLock { $0.record(.success, for: permit, at: now) }
                }
                blackHole(machine.withLock { $0.snapshot(name: "", at: now).recentCalls })
            }
        },
    ]

    /// The time-window rule of `breaker.success.window`.
    private static let timeWindowConfiguration: CircuitBreakerConfiguration = {
        guard
            let configuration = try? CircuitBreakerConfiguration(
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 20, window: .time(.seconds(30), buckets: 10)))
        else { fatalError("the time-window configuration of the benchmark is invalid") }
        return configuration
    }()
}
