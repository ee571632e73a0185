#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A memory soak for the retry engine: millions of calls through long-lived
/// policies and a shared budget, with resident memory reported at the start and
/// end and at checkpoints between. Fails when memory grows by more than the
/// allowed slack once warmed up.
///
/// It mixes the paths a long-running service exercises: first-attempt
/// successes on the fast path, transient failures that retry, final failures,
/// 429s with hints, failures with server hints, calls through a policy with an
/// observer and a deadline, and calls whose task is cancelled.
///
/// Usage: `retry-soak [calls] [allowed growth in MiB]` (defaults: 10,000,000 and 16).
@main
enum RetrySoak {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let calls = arguments.first.flatMap { Int($0) } ?? 10_000_000
        let allowedGrowthMiB = arguments.dropFirst().first.flatMap { Double($0) } ?? 16
        let lanes = 4
        let checkpoints = 10

        let budget = try RetryBudget(maximumTokens: 1_000, tokenRatio: 1)
        let events = CountingObserver()
        let fastPolicy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .full, budget: budget, clock: ImmediateClock())
        let fullPolicy = try RetryPolicy(
            maximumAttempts: 3, backoff: .exponential(initial: .nanoseconds(1), maximum: .microseconds(1)),
            jitter: .decorrelated, deadline: .seconds(60), budget: budget, observer: events, clock: ImmediateClock())

        // Warm up: let caches, the task allocator and the concurrency runtime settle.
        try await runLanes(calls: Swift.max(calls / 100, 10_000), lanes: lanes, offset: 0, fastPolicy, fullPolicy)
        let warm = residentMiB()
        print("retry-soak: \(calls) calls in \(lanes) lanes; resident after warm-up \(format(warm)) MiB")

        let clock = ContinuousClock()
        let start = clock.now
        var peak = warm
        let perCheckpoint = calls / checkpoints
        for checkpoint in 1...checkpoints {
            try await runLanes(
                calls: perCheckpoint, lanes: lanes, offset: checkpoint * perCheckpoint, fastPolicy, fullPolicy)
            let resident = residentMiB()
            peak = Swift.max(peak, resident)
            print("retry-soak: \(checkpoint * perCheckpoint) calls, resident \(format(resident)) MiB")
        }
        let end = residentMiB()
        let elapsed = start.duration(to: clock.now)
        let statistics = await fullPolicy.statistics
        print(
            "retry-soak: done in \(elapsed); resident start \(format(warm)) MiB, end \(format(end)) MiB,"
                + " peak \(format(peak)) MiB; full-path retries \(statistics.retries), events \(events.count)")
        let growth = end - warm
        guard growth <= allowedGrowthMiB else {
            print(
                "retry-soak: FAILED: resident memory grew by \(format(growth)) MiB (allowed \(format(allowedGrowthMiB)))"
            )
            exit(1)
        }
        print("retry-soak: resident memory grew by \(format(growth)) MiB, within \(format(allowedGrowthMiB)) MiB")
    }

    /// Runs `calls` calls split across `lanes` concurrent tasks.
    static func runLanes(
        calls: Int, lanes: Int, offset: Int, _ fastPolicy: RetryPolicy, _ fullPolicy: RetryPolicy
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var index = offset + lane
                    let end = offset + calls
                    while index < end {
                        await call(index, fastPolicy, fullPolicy)
                        index += lanes
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// One call whose behaviour is fixed by its index.
    static func call(_ index: Int, _ fastPolicy: RetryPolicy, _ fullPolicy: RetryPolicy) async {
        let kind = index % 100
        if kind == 99 {
            // A call whose task is cancelled before it starts.
            let task = Task { try await fastPolicy.execute { index } }
            task.cancel()
            _ = try? await task.value
            return
        }
        let policy = kind.isMultiple(of: 10) ? fullPolicy : fastPolicy
        var attempt = 0
        _ = try? await policy.execute {
            attempt += 1
            switch kind {
            case 90..<95 where attempt == 1: throw SoakFailure(retryable: true, status: nil, hint: nil)
            case 95, 96: throw SoakFailure(retryable: false, status: nil, hint: nil)
            case 97: throw SoakFailure(retryable: true, status: 429, hint: .seconds(1))
            case 98 where attempt == 1: throw SoakFailure(retryable: true, status: 503, hint: .nanoseconds(5))
            default: return index
            }
        }
    }
}

struct SoakFailure: Error, RetryableError, HTTPStatusReporting, RetryAfterProviding {
    var retryable: Bool
    var status: Int?
    var hint: Duration?

    var isRetryable: Bool { self.retryable }
    var httpStatusCode: Int? { self.status }
    var retryAfter: Duration? { self.hint }
}

/// Counts observer events without keeping them.
final class CountingObserver: RetryObserver {
    private let events = Lock(0)

    var count: Int { self.events.withLock { $0 } }

    func attemptFailed(_ event: RetryAttemptFailedEvent) { self.events.withLock { $0 += 1 } }
    func retryScheduled(_ event: RetryScheduledEvent) { self.events.withLock { $0 += 1 } }
    func callFinished(_ event: RetryCallFinishedEvent) { self.events.withLock { $0 += 1 } }
}

/// A clock on which every sleep ends at once (unless the task is cancelled), and
/// which keeps no record of them, so it cannot itself grow.
struct ImmediateClock: Clock {
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
    }
}

/// Resident memory in MiB: current (Linux `/proc/self/statm`), or the peak where that is unavailable.
func residentMiB() -> Double {
    #if os(Linux)
        let descriptor = open("/proc/self/statm", O_RDONLY)
        if descriptor >= 0 {
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            // "size resident shared text lib data dt", in pages.
            let fields = buffer.prefix(Swift.max(count, 0)).split(separator: UInt8(ascii: " "))
            if fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) {
                return Double(pages * sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
            }
        }
    #endif
    var usage = rusage()
    #if canImport(Darwin)
        getrusage(RUSAGE_SELF, &usage)
        return Double(usage.ru_maxrss) / 1_048_576  // bytes on Darwin
    #else
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1_024  // KiB on Linux
    #endif
}

func format(_ mebibytes: Double) -> String {
    let tenths = (mebibytes * 10).rounded()
    return "\(tenths / 10)"
}
