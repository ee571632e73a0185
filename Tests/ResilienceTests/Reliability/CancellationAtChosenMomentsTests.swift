import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// Random two- and three-layer compositions, the caller cancelled at a random instant of the
/// test clock (or before the call starts), the clock moved in random steps and jumps.
///
/// The driver, the composition and its operation run on the main actor, whose jobs run one at
/// a time in the order they were enqueued; the composition's tasks off the main actor (an
/// attempt's child task, a woken sleeper) run on a ``CountingTaskExecutor``. The driver cancels
/// or moves the clock only once the composition has settled: nothing the driver can see has
/// changed for many rounds of yielding, no job of the composition is pending on that executor,
/// and the watchers of the hedging and the timeout, which run on the cooperative pool, are
/// asleep on the clock or parked. So a decision of the library to start an operation is taken
/// wholly before the cancellation or wholly after it, and the same seed gives the same
/// compositions, instants and clock moves whatever the machine's load.
///
/// What it holds the library to is what it promises a caller that cancels:
/// - after the cancellation no operation starts, except the first attempt of a caller that had
///   sent nothing and waited in no limiter (cancelled before the call started, say), which
///   runs as a bare call would; an operation that does start sees `Task.isCancelled`;
/// - the caller gets a value only if an operation returned it before the cancellation;
/// - when no operation had answered by then, the caller fails with `CancellationError`, or
///   with a time limit's outcome (`TimeoutError`, `AttemptTimeoutError`, a
///   `LimiterRejectionError` for `noTimeLeft` or `waitCutShort`) only once the clock had
///   reached that limit when the caller cancelled: a limit that passed first stays the cause;
/// - breakers count no failure that did not happen, and no bulkhead or limiter waiter is left.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
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

        /// The time limit this layer sets, if it sets one.
        var limit: Duration? {
            switch self {
            case .policyDeadline: .seconds(6)
            case .attemptTimeout: .seconds(2)
            case .timeout: .seconds(8)
            default: nil
            }
        }
    }

    final class Record: Sendable {
        struct State {
            var sends = 0
            var sendsAfterCancel = 0
            /// Operations that started after the cancellation without seeing it.
            var unawareSendsAfterCancel = 0
            var served: [Int] = []
            var failed = 0
            var cancelled = false
            var trace: [String] = []
        }
        let state = Lock(State())
    }

    /// Ten seeds of forty random rounds each: every seed draws its compositions, instants and
    /// clock moves from the same space, so more seeds only repeat the kind of round; a problem
    /// names its seed and round to replay it.
    static let seeds: [UInt64] = Array(1...10)

    // One seed at a time: all of them share the main actor, so run together each would last
    // as long as all of them, past its time limit on a busy machine.
    @Test(.serialized, arguments: seeds)
    @MainActor func cancelAnywhere(seed: UInt64) async throws {
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
            let policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock)
            let deadlinePolicy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(6),
                clock: clock)
            let timeout = try Timeout(.seconds(8), clock: clock)
            let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
            let finished = Lock(false)

            // Everything the driver can see of the composition: settled once none of it changes.
            let fingerprint = { @MainActor () -> [Int] in
                let s = record.state.withLock { [$0.sends, $0.served.count, $0.failed] }
                return s + [
                    clock.sleeperCount, clock.sleepRequests.count, bulkhead.queued, bulkhead.inFlight,
                    limiter.storage.waiters.load(ordering: .relaxed), hedging.calls.withLock { $0.count },
                    hedging.watcher.registrations, timeout.watcher.registrations, finished.withLock { $0 ? 1 : 0 },
                ]
            }
            let watchersBusy = { Self.isBusy(hedging.watcher) || Self.isBusy(timeout.watcher) }
            // The composition's tasks run off the main actor on a counting executor, so that the
            // driver sees when all of them have come to rest.
            let executor = CountingTaskExecutor()
            let settle = { await Self.settle(fingerprint, watchersBusy, pending: { executor.pending }) }
            let hold: @MainActor @Sendable () async throws -> Void = {
                try await bulkhead.execute { @MainActor in try await clock.sleep(for: .seconds(3)) }
            }
            let holder = Task(executorPreference: executor, operation: hold)
            await settle()

            let op: @MainActor @Sendable () async throws -> Int = {
                let n = record.state.withLock { s -> Int in
                    s.sends += 1
                    if s.cancelled {
                        s.sendsAfterCancel += 1
                        if !Task.isCancelled { s.unawareSendsAfterCancel += 1 }
                    }
                    s.trace.append("send \(s.sends) at \(clock.now.offset)\(Task.isCancelled ? " cancelled" : "")")
                    return s.sends
                }
                let (hold, ok) = script[min(n - 1, script.count - 1)]
                try await clock.sleep(for: hold)
                try Task.checkCancellation()
                record.state.withLock { s in
                    if ok { s.served.append(n) } else { s.failed += 1 }
                    s.trace.append("\(ok ? "served" : "failed") \(n) at \(clock.now.offset)")
                }
                if ok { return n }
                throw HTTPResponseError(statusCode: 503)
            }
            typealias Call = @MainActor @Sendable () async throws -> Int
            func wrap(_ layer: Layer, _ inner: @escaping Call) -> Call {
                switch layer {
                case .policy: return { try await policy.execute { @MainActor in try await inner() } }
                case .policyDeadline: return { try await deadlinePolicy.execute { @MainActor in try await inner() } }
                case .attemptTimeout:
                    return { try await policy.execute(attemptTimeout: .seconds(2)) { @MainActor in try await inner() } }
                case .timeout: return { try await timeout.execute { @MainActor in try await inner() } }
                case .hedging: return { try await hedging.execute { @MainActor in try await inner() } }
                case .rateLimiterWait: return { try await limiter.execute { @MainActor in try await inner() } }
                case .bulkheadQueue: return { try await bulkhead.execute { @MainActor in try await inner() } }
                case .breaker: return { try await breaker.execute { @MainActor in try await inner() } }
                }
            }
            var call = op
            for layer in layers.reversed() { call = wrap(layer, call) }
            let composed = call
            let run: @MainActor @Sendable () async throws -> Int = {
                if cancelBeforeStart {
                    withUnsafeCurrentTask { $0?.cancel() }
                    record.state.withLock {
                        $0.cancelled = true
                        $0.trace.append("cancelled before start")
                    }
                }
                defer { finished.withLock { $0 = true } }
                return try await composed()
            }
            let task = Task(executorPreference: executor, operation: run)
            await settle()
            var cancelledInFlight = false
            var sendsAtCancel = 0
            var waitingAtCancel = false
            var endedAtCancel = 0
            var servedAtCancel: [Int] = []
            var clockAtCancel = Duration.zero
            // Cancel at `cancelAt`, then move the clock in half-second steps, sometimes a jump,
            // letting the composition settle after each move.
            var steps = 0
            while !finished.withLock({ $0 }) {
                if !cancelBeforeStart && !cancelledInFlight && clock.now.offset >= cancelAt {
                    (sendsAtCancel, endedAtCancel, servedAtCancel) = record.state.withLock { state in
                        state.cancelled = true
                        state.trace.append("cancel at \(clock.now.offset)")
                        return (state.sends, state.served.count + state.failed, state.served)
                    }
                    clockAtCancel = clock.now.offset
                    waitingAtCancel = bulkhead.queued > 0 || limiter.storage.waiters.load(ordering: .relaxed) > 0
                    cancelledInFlight = true
                    task.cancel()
                    await settle()
                    continue
                }
                steps += 1
                if steps > 400 { break }
                let step: Duration =
                    Int.random(in: 0..<10, using: &g) == 0
                    ? .seconds(Int64.random(in: 3...20, using: &g)) : .milliseconds(500)
                record.state.withLock { $0.trace.append("advance to \(clock.now.offset + step)") }
                clock.advance(by: step)
                await settle()
            }
            let name =
                "seed \(seed) round \(round) \(layers) cancel \(cancelBeforeStart ? "before start" : "at \(cancelAt)")"
            guard finished.withLock({ $0 }) else {
                // Every layer ends within the clock's moves; a call still running is a hang.
                problems.append("\(name): still running after \(steps) steps")
                task.cancel()
                holder.cancel()
                _ = await task.result
                _ = await holder.result
                continue
            }
            let result = await task.result
            holder.cancel()
            _ = await holder.result
            let s = record.state.withLock { $0 }
            let trace = s.trace.joined(separator: ", ")
            if cancelBeforeStart || cancelledInFlight {
                if s.unawareSendsAfterCancel > 0 {
                    problems.append(
                        "\(name): \(s.unawareSendsAfterCancel) operations started after the cancellation without seeing it [\(trace)]"
                    )
                }
                // The first attempt runs even in a cancelled task, as a bare call would: a call
                // cancelled before it sent anything, and not waiting in a limiter, may still send
                // once (on a busy machine its tasks may not have reached the first attempt yet).
                // One that was waiting in a limiter, or had sent, sends nothing more.
                let allowed = cancelBeforeStart || (sendsAtCancel == 0 && !waitingAtCancel) ? 1 : 0
                if s.sendsAfterCancel > allowed {
                    problems.append(
                        "\(name): \(s.sendsAfterCancel) sends after the cancellation (\(sendsAtCancel) before) [\(trace)]"
                    )
                }
                if case .success(let value) = result, !servedAtCancel.contains(value) {
                    problems.append(
                        "\(name): a cancelled caller got the value \(value), not returned before the cancellation [\(trace)]"
                    )
                }
                if case .failure(let error) = result, endedAtCancel == 0 || cancelBeforeStart {
                    let ok: Bool
                    if error is CancellationError {
                        ok = true
                    } else if let limit = Self.limitBehind(error, layers: layers) {
                        ok = clockAtCancel >= limit && !cancelBeforeStart
                    } else {
                        ok = false
                    }
                    if !ok { problems.append("\(name): cancelled caller got \(error) [\(trace)]") }
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

    /// The earliest instant at which the time limit whose outcome `error` is could have passed,
    /// for the limits among `layers`; `nil` when `error` is no time limit's outcome.
    static func limitBehind(_ error: any Error, layers: [Layer]) -> Duration? {
        let limits = layers.compactMap(\.limit)
        if error is TimeoutError { return layers.contains(.timeout) ? .seconds(8) : nil }
        if error is AttemptTimeoutError { return layers.contains(.attemptTimeout) ? .seconds(2) : nil }
        if let reason = (error as? LimiterRejectionError)?.reason, reason == .noTimeLeft || reason == .waitCutShort {
            return limits.min()
        }
        return nil
    }

    /// Whether `watcher` has work to do off the main actor: it runs, or its sleep has ended.
    static func isBusy(_ watcher: DeadlineWatcher) -> Bool {
        switch watcher.phase {
        case .running: true
        case .sleeping(let until): until <= watcher.now()
        case .none, .parked: false
        }
    }

    /// Yields until nothing in `fingerprint` has changed for many rounds while no watcher is busy
    /// and no job of the composition's tasks is `pending` off the main actor: each round runs every
    /// job the main actor had enqueued before it. On a busy machine the composition's tasks off the
    /// main actor (an attempt's child task, a woken sleeper) can lag it by many rounds: a driver
    /// that went by rounds alone would cancel, or move time, before they reached the point it
    /// judges them at.
    @MainActor static func settle(
        _ fingerprint: @MainActor () -> [Int], _ watchersBusy: () -> Bool, pending: () -> Int
    ) async {
        var last = fingerprint()
        var quiet = 0
        var spins = 0
        while quiet < 64 {
            await Task.yield()
            spins += 1
            // Seconds of yielding, or the test's time limit: only a hang gets here.
            if spins > 1_000_000 || Task.isCancelled {
                Issue.record("the composition never settled")
                return
            }
            let now = fingerprint()
            if now == last && !watchersBusy() && pending() == 0 {
                quiet += 1
            } else {
                quiet = 0
                last = now
            }
        }
    }
}
