import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// Thousands of callers through one bulkhead or one rate limiter, some behind a `Timeout`, on a
/// test clock moved in random steps and jumps, with random callers cancelled at random moments.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .disabled(if: runsUnderThreadSanitizer, "starved under ThreadSanitizer; runs in the plain test step"))
struct LimiterCancellationStressTests {
    final class Tally: Sendable {
        struct State {
            var inFlight = 0
            var maxInFlight = 0
            var admissions: [Duration] = []
            var windows: [(earliest: Duration, latest: Duration)] = []
            var finished = 0
            var cancelledWithValue = 0
            var outcomes: [String: Int] = [:]
            var unexpected: [String] = []
        }
        let state = Lock(State())
    }

    final class Flags: Sendable {
        let bits: Lock<[Bool]>
        init(_ n: Int) { self.bits = Lock(Array(repeating: false, count: n)) }
        func set(_ i: Int) { self.bits.withLock { $0[i] = true } }
        func get(_ i: Int) -> Bool { self.bits.withLock { $0[i] } }
    }

    /// The test clock, remembering the last reading each task took: the reading a limiter
    /// counted a permit at, read back by the operation it admitted.
    final class ReadingClock: Clock, Sendable {
        typealias Instant = TestClock.Instant
        typealias Duration = Swift.Duration
        let base: TestClock
        let readings = Lock<[Int: Instant]>([:])
        init(_ base: TestClock) { self.base = base }
        var now: Instant {
            let now = self.base.now
            let key = withUnsafeCurrentTask { $0.map { $0.hashValue } } ?? 0
            self.readings.withLock { $0[key] = now }
            return now
        }
        var minimumResolution: Swift.Duration { .zero }
        func sleep(until deadline: Instant, tolerance: Swift.Duration?) async throws {
            try await self.base.sleep(until: deadline, tolerance: tolerance)
        }
        func lastReading() -> Instant? {
            let key = withUnsafeCurrentTask { $0.map { $0.hashValue } } ?? 0
            return self.readings.withLock { $0[key] }
        }
    }

    static let seeds: [UInt64] = Array(11...13)

    /// One round of the driver: cancels up to three callers at random (marking them in
    /// `flags`), lets the runnable tasks go on, then moves the clock: usually a step of up to
    /// `longestStep` milliseconds, sometimes a jump past several deadlines, sometimes not at all.
    static func cancelAFewAndMoveTheClock(
        _ tasks: [Task<Void, Never>], _ flags: Flags, _ clock: TestClock, longestStep: Int64,
        using g: inout SeededRandomNumberGenerator
    ) async {
        for _ in 0..<Int.random(in: 0...3, using: &g) where !tasks.isEmpty {
            let i = Int.random(in: 0..<tasks.count, using: &g)
            flags.set(i)
            tasks[i].cancel()
        }
        for _ in 0..<Int.random(in: 1...20, using: &g) { await Task.yield() }
        switch Int.random(in: 0..<20, using: &g) {
        case 0: clock.advance(by: .seconds(Int64.random(in: 10...120, using: &g)))
        case 1...4: break
        default: clock.advance(by: .milliseconds(Int64.random(in: 1...longestStep, using: &g)))
        }
    }

    @Test(arguments: seeds)
    func bulkheadUnderRandomCancellation(seed: UInt64) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        let clock = TestClock()
        let limit = Int.random(in: 1...6, using: &g)
        let queueLimit = Int.random(in: 0...200, using: &g)
        let queueTimeout: Duration? = Bool.random(using: &g) ? .seconds(Int64.random(in: 1...20, using: &g)) : nil
        let limiter = try ConcurrencyLimiter(
            limit: limit, queueLimit: queueLimit, queueTimeout: queueTimeout, clock: clock)
        let timeout = try Timeout(.seconds(Int64.random(in: 2...15, using: &g)), clock: clock)
        let tally = Tally()
        let total = 2_000
        var tasks: [Task<Void, Never>] = []
        let flags = Flags(total)
        var launched = 0
        var rounds = 0
        while true {
            rounds += 1
            // Launch a few more callers.
            let batch = min(Int.random(in: 0...6, using: &g), total - launched)
            for _ in 0..<batch {
                let index = launched
                launched += 1
                let hold = Duration.milliseconds(Int64.random(in: 0...4_000, using: &g))
                let wrapped = Int.random(in: 0..<3, using: &g) == 0
                let flag = index
                tasks.append(
                    Task {
                        @Sendable func body() async throws -> Int {
                            try await limiter.execute {
                                let now = tally.state.withLock { s -> Int in
                                    s.inFlight += 1
                                    s.maxInFlight = max(s.maxInFlight, s.inFlight)
                                    return s.inFlight
                                }
                                if now > limit {
                                    tally.state.withLock { $0.unexpected.append("in flight \(now) > \(limit)") }
                                }
                                defer { tally.state.withLock { $0.inFlight -= 1 } }
                                if hold > .zero { try await clock.sleep(for: hold) }
                                try Task.checkCancellation()
                                return index
                            }
                        }
                        let result: Result<Int, any Error>
                        do {
                            result = .success(
                                wrapped ? try await timeout.execute { try await body() } : try await body())
                        } catch {
                            result = .failure(error)
                        }
                        let wasCancelled = flags.get(flag)
                        tally.state.withLock { s in
                            s.finished += 1
                            let key: String
                            switch result {
                            case .success:
                                key = "value"
                                if wasCancelled { s.cancelledWithValue += 1 }
                            case .failure(let e as LimiterRejectionError): key = "\(e.reason)"
                            case .failure(is CancellationError): key = "cancelled"
                            case .failure(is TimeoutError): key = "timeout"
                            case .failure(let e):
                                key = "other"
                                s.unexpected.append("\(e)")
                            }
                            if case .failure(is CancellationError) = result, !wasCancelled {
                                s.unexpected.append(
                                    "CancellationError for a caller never cancelled (wrapped: \(wrapped))")
                            }
                            s.outcomes[key, default: 0] += 1
                        }
                    })
            }
            await Self.cancelAFewAndMoveTheClock(tasks, flags, clock, longestStep: 1_500, using: &g)
            let finished = tally.state.withLock { $0.finished }
            if launched == total && finished == total { break }
            if rounds > 200_000 {
                Issue.record("seed \(seed): \(total - finished) callers never answered; queued \(limiter.queued)")
                break
            }
            if launched == total && rounds % 1000 == 0 {
                clock.advance(by: .seconds(60))
            }
        }
        for task in tasks { await task.value }
        let s = tally.state.withLock { $0 }
        #expect(s.unexpected.isEmpty, "seed \(seed): \(s.unexpected.prefix(5))")
        #expect(s.maxInFlight <= limit)
        #expect(limiter.queued == 0)
        #expect(limiter.inFlight == 0)
        try await yieldUntil("no sleeper was left") { clock.sleeperCount == 0 }
    }

    @Test(arguments: seeds)
    func rateLimiterUnderRandomCancellation(seed: UInt64) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        let clock = TestClock()
        let bucket = seed % 2 == 1
        let capacity = Int.random(in: 1...10, using: &g)
        let perPeriod = Int.random(in: 1...capacity, using: &g)
        let period = Duration.milliseconds(Int64.random(in: 100...3_000, using: &g))
        let segments = Int.random(in: 1...10, using: &g)
        let window = period * segments
        let algorithm: RateLimiterAlgorithm =
            bucket
            ? try .tokenBucket(capacity: capacity, tokensPerPeriod: perPeriod, period: period)
            : try .slidingWindow(limit: capacity, window: window, segments: segments)
        let maximumWait = Duration.milliseconds(Int64.random(in: 0...20_000, using: &g))
        let reading = ReadingClock(clock)
        let limiter = try RateLimiter(algorithm, maximumWait: maximumWait, clock: reading)
        let timeout = try Timeout(.seconds(Int64.random(in: 1...10, using: &g)), clock: clock)
        let tally = Tally()
        let total = 2_000
        var tasks: [Task<Void, Never>] = []
        let flags = Flags(total)
        var launched = 0
        var rounds = 0
        while true {
            rounds += 1
            let batch = min(Int.random(in: 0...4, using: &g), total - launched)
            for _ in 0..<batch {
                let index = launched
                launched += 1
                let wrapped = Int.random(in: 0..<3, using: &g) == 0
                let flag = index
                tasks.append(
                    Task {
                        @Sendable func body() async throws -> Int {
                            try await limiter.execute {
                                // Counted no earlier than the limiter's last reading and no later than now.
                                let latest = clock.now.offset
                                let earliest = reading.lastReading()?.offset ?? latest
                                tally.state.withLock {
                                    $0.admissions.append(latest)
                                    $0.windows.append((earliest, latest))
                                }
                                return index
                            }
                        }
                        let result: Result<Int, any Error>
                        do {
                            result = .success(
                                wrapped ? try await timeout.execute { try await body() } : try await body())
                        } catch {
                            result = .failure(error)
                        }
                        let wasCancelled = flags.get(flag)
                        tally.state.withLock { s in
                            s.finished += 1
                            let key: String
                            switch result {
                            case .success: key = "value"
                            case .failure(let e as LimiterRejectionError): key = "\(e.reason)"
                            case .failure(is CancellationError): key = "cancelled"
                            case .failure(is TimeoutError): key = "timeout"
                            case .failure(let e):
                                key = "other"
                                s.unexpected.append("\(e)")
                            }
                            if case .failure(is CancellationError) = result, !wasCancelled {
                                s.unexpected.append("CancellationError for a caller never cancelled")
                            }
                            s.outcomes[key, default: 0] += 1
                        }
                    })
            }
            await Self.cancelAFewAndMoveTheClock(tasks, flags, clock, longestStep: 800, using: &g)
            let finished = tally.state.withLock { $0.finished }
            if launched == total && finished == total { break }
            if rounds > 200_000 {
                Issue.record("seed \(seed): \(total - finished) callers never answered")
                break
            }
            if launched == total && rounds % 1000 == 0 { clock.advance(by: .seconds(60)) }
        }
        for task in tasks { await task.value }
        let s = tally.state.withLock { $0 }
        let times = s.admissions.sorted()
        var violations: [String] = []
        if bucket {
            // Full at the start; `perPeriod` tokens at the end of each whole period, up to the capacity.
            for (i, t) in times.enumerated() {
                let periods = Int(t / period)
                if i + 1 > capacity + perPeriod * periods {
                    violations.append("\(i + 1) admitted by \(t), at most \(capacity + perPeriod * periods)")
                }
            }
        } else {
            // Any span shorter than the window less one segment holds at most the limit.
            // Counted only when every admission's interval lies within one such span (a sure violation).
            let span = window - period
            let spans = s.windows.sorted { $0.earliest < $1.earliest }
            for i in spans.indices {
                let from = spans[i].earliest
                let inside = spans[i...].filter { $0.latest - from < span }
                if inside.count > capacity {
                    violations.append(
                        "\(inside.count) admitted within \(span) from \(from): \(inside.prefix(capacity + 1).map { "\($0.earliest)...\($0.latest)" })"
                    )
                }
            }
        }
        #expect(violations.isEmpty, "seed \(seed): \(violations.prefix(3))")
        #expect(s.unexpected.isEmpty, "seed \(seed): \(s.unexpected.prefix(5))")
        #expect(limiter.storage.waiters.load(ordering: .relaxed) == 0)
        try await yieldUntil("no sleeper was left") { clock.sleeperCount == 0 }
    }
}
