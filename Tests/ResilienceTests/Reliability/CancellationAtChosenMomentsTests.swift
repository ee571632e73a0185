import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// Random two- and three-layer compositions, the caller cancelled at a random instant of the
/// test clock (or before the call starts), the clock moved in random steps and jumps.
@Suite(
    .serialized, .timeLimit(.minutes(1)),
    .disabled(if: runsUnderThreadSanitizer, "starved under ThreadSanitizer; runs in the plain test step"))
struct CancellationAtChosenMomentsTests {
    enum Layer: CaseIterable, CustomStringConvertible {
        case policy, policyDeadline, attemptTimeout, timeout, hedging, rateLimiterWait, bulkheadQueue, breaker
        var description: String {
            switch self {
            case .policy: "policy"
            case .policyDeadline: "policy(deadline 6s)"
            case .attemptTimeout: "policy(attemptTimeout 2s)"
            case .timeout: "timeout(8s)"
            case .hedging: "hedging"
            case .rateLimiterWait: "rateLimiter(wait)"
            case .bulkheadQueue: "bulkhead(queue)"
            case .breaker: "breaker"
            }
        }
    }

    final class Record: Sendable {
        struct State {
            var sends = 0
            var sendsAfterCancel = 0
            var served = 0
            var failed = 0
            var cancelled = false
        }
        let state = Lock(State())
    }

    static let seeds: [UInt64] = Array(1...20)

    @Test(arguments: seeds)
    func cancelAnywhere(seed: UInt64) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        var problems: [String] = []
        for round in 0..<40 {
            let clock = TestClock()
            let depth = Int.random(in: 2...3, using: &g)
            var layers = (0..<depth).map { _ in Layer.allCases.randomElement(using: &g)! }
            let breakerInnermost = Bool.random(using: &g)
            if breakerInnermost { layers.append(.breaker) }
            let cancelBeforeStart = Int.random(in: 0..<8, using: &g) == 0
            let cancelAt = Duration.milliseconds(Int64.random(in: 0...12, using: &g) * 500)
            let script = (0..<12).map { _ in
                (Duration.milliseconds(Int64.random(in: 1...6, using: &g) * 500), Int.random(in: 0..<3, using: &g) != 0)
            }
            let record = Record()
            let budget = try RetryBudget(maximumTokens: 100, tokenRatio: 0.5)
            let breaker = try CircuitBreaker(
                name: "b", tripRule: .consecutiveFailures(1000), clock: clock)
            // A bulkhead whose one slot is held for 3 s, and a rate limiter whose token is spent
            // until 2 s: callers through them wait first.
            let bulkhead = try ConcurrencyLimiter(limit: 1, queueLimit: 10, clock: clock)
            let limiter = try RateLimiter(
                .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(2)), maximumWait: .seconds(30),
                clock: clock)
            _ = try await limiter.execute { 0 }
            let holder = Task { try await bulkhead.execute { try await clock.sleep(for: .seconds(3)) } }
            await yieldUntil("holder") { bulkhead.inFlight == 1 }
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock)
            let deadlinePolicy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(6),
                clock: clock)
            let timeout = try Timeout(.seconds(8), clock: clock)
            let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)

            let op: @Sendable () async throws -> Int = {
                let n = record.state.withLock { s -> Int in
                    s.sends += 1
                    if s.cancelled { s.sendsAfterCancel += 1 }
                    return s.sends
                }
                let (hold, ok) = script[min(n - 1, script.count - 1)]
                try await clock.sleep(for: hold)
                try Task.checkCancellation()
                if ok {
                    record.state.withLock { $0.served += 1 }
                    return n
                }
                record.state.withLock { $0.failed += 1 }
                throw HTTPResponseError(statusCode: 503)
            }
            func wrap(_ layer: Layer, _ inner: @escaping @Sendable () async throws -> Int)
                -> @Sendable () async throws -> Int
            {
                switch layer {
                case .policy: return { try await policy.execute { try await inner() } }
                case .policyDeadline: return { try await deadlinePolicy.execute { try await inner() } }
                case .attemptTimeout:
                    return { try await policy.execute(attemptTimeout: .seconds(2)) { try await inner() } }
                case .timeout: return { try await timeout.execute { try await inner() } }
                case .hedging: return { try await hedging.execute { try await inner() } }
                case .rateLimiterWait: return { try await limiter.execute { try await inner() } }
                case .bulkheadQueue: return { try await bulkhead.execute { try await inner() } }
                case .breaker: return { try await breaker.execute { try await inner() } }
                }
            }
            var call = op
            for layer in layers.reversed() { call = wrap(layer, call) }
            let composed = call
            let started = Lock(false)
            let task = Task {
                if cancelBeforeStart { withUnsafeCurrentTask { $0?.cancel() } }
                if cancelBeforeStart { record.state.withLock { $0.cancelled = true } }
                started.withLock { $0 = true }
                return try await composed()
            }
            await yieldUntil("started") { started.withLock { $0 } }
            var cancelledInFlight = false
            var sendsAtCancel = 0
            var endedAtCancel = 0
            var ended = false
            // Drive the clock in half-second steps, sometimes a jump; cancel at `cancelAt`.
            var steps = 0
            while !ended {
                for _ in 0..<60 { await Task.yield() }
                if !cancelBeforeStart && !record.state.withLock({ $0.cancelled }) && clock.now.offset >= cancelAt,
                    !(await Self.isDone(task))
                {
                    (sendsAtCancel, endedAtCancel) = record.state.withLock { state in
                        state.cancelled = true
                        return (state.sends, state.served + state.failed)
                    }
                    cancelledInFlight = true
                    task.cancel()
                    for _ in 0..<60 { await Task.yield() }
                }
                steps += 1
                if Int.random(in: 0..<10, using: &g) == 0 {
                    clock.advance(by: .seconds(Int64.random(in: 3...20, using: &g)))
                } else {
                    clock.advance(by: .milliseconds(500))
                }
                for _ in 0..<60 { await Task.yield() }
                if steps > 400 { break }
                // A finished task: poll cheaply by racing a tiny check.
                ended = await Self.isDone(task)
            }
            let result = await task.result
            holder.cancel()
            _ = await holder.result
            let s = record.state.withLock { $0 }
            let name =
                "seed \(seed) round \(round) \(layers) cancel \(cancelBeforeStart ? "before start" : "at \(cancelAt)")"
            let wasCancelled = cancelBeforeStart || cancelledInFlight
            if wasCancelled {
                if case .success(let v) = result, endedAtCancel == 0 || cancelBeforeStart {
                    problems.append(
                        "\(name): a cancelled caller got the value \(v) (sends \(s.sends), served \(s.served), at cancel \(sendsAtCancel))"
                    )
                }
                if s.sendsAfterCancel > (cancelBeforeStart || sendsAtCancel == 0 ? 1 : 0) {
                    problems.append(
                        "\(name): \(s.sendsAfterCancel) sends after the cancellation (\(sendsAtCancel) before)")
                }
                if case .failure(let error) = result, endedAtCancel == 0 || cancelBeforeStart {
                    let ok =
                        error is CancellationError || error is TimeoutError || error is AttemptTimeoutError
                        || (error as? LimiterRejectionError)?.reason == .waitCutShort
                    if !ok { problems.append("\(name): cancelled caller got \(error)") }
                }
            }
            let timeLimited = layers.contains { $0 == .timeout || $0 == .attemptTimeout }
            let breakerLayers = layers.filter { $0 == .breaker }.count
            let counted = breaker.snapshot().consecutiveFailures
            if !timeLimited && counted > s.failed * breakerLayers {
                problems.append("\(name): breaker counted \(counted), only \(s.failed) answers failed")
            }
            if bulkhead.queued != 0 || bulkhead.inFlight != 0 {
                problems.append("\(name): bulkhead left \(bulkhead.queued) queued, \(bulkhead.inFlight) in flight")
            }
            if limiter.storage.waiters.load(ordering: .relaxed) != 0 { problems.append("\(name): limiter waiter left") }
        }
        #expect(problems.isEmpty, "\(problems.count) problems: \(problems.prefix(6))")
    }

    static func isDone(_ task: Task<Int, any Error>) async -> Bool {
        // A task is done when awaiting its result does not suspend for long: race it with a flag.
        let done = Lock(false)
        let watcher = Task {
            _ = await task.result
            done.withLock { $0 = true }
        }
        for _ in 0..<30 { await Task.yield() }
        watcher.cancel()
        return done.withLock { $0 }
    }
}
