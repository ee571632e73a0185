import Foundation
import Resilience
import ResilienceTesting
import Testing

@testable import Resilience

/// Records every event with its error.
final class StrategyEventRecorder: StrategyObserver {
    let events = Lock<[StrategyEvent]>([])
    func observe(_ event: StrategyEvent) { self.events.withLock { $0.append(event) } }
    func count(_ kind: StrategyEvent.Kind) -> Int { self.events.withLock { $0.filter { $0.kind == kind }.count } }
    var all: [StrategyEvent] { self.events.withLock { $0 } }
}

private enum CallEnd: Equatable {
    case ran
    case rejected(LimiterRejectionError.Reason, queued: Int?)
    case cancelled
    case other(String)
}

@Suite(
    .timeLimit(.minutes(5)), .serialized,
    .disabled(
        if: runsUnderThreadSanitizer,
        "seeded rounds on the test clock starve under ThreadSanitizer; run in the plain test step"))
struct LimiterAccountingTests {
    /// Seeded: hold every slot, queue callers, then cancel some, time some out (cancelling
    /// some just as the timeout comes due), release holders in random order. Every caller is
    /// answered, each refusal has one `rejected` event and each queued caller one `queued`
    /// event, no permit leaks: a follow-up burst runs exactly `limit` at once and queues
    /// exactly `queueLimit`.
    @Test(arguments: 0..<24)
    func bulkheadPermitsSurviveCancellationAtEveryPoint(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let limit = Int.random(in: 1...3, using: &random)
        let queueLimit = Int.random(in: 0...3, using: &random)
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let limiter = try ConcurrencyLimiter(
            name: "bulk", limit: limit, queueLimit: queueLimit, queueTimeout: .seconds(10), observer: events,
            clock: clock)
        let running = Counter()
        let high = HighWaterMark()
        // Holders take every slot.
        let holderGates = (0..<limit).map { _ in Gate() }
        var holders: [Task<CallEnd, Never>] = []
        for gate in holderGates {
            holders.append(
                Task {
                    do {
                        return try await limiter.execute { () -> CallEnd in
                            _ = high.enter()
                            defer { high.leave() }
                            running.increment()
                            await gate.wait()
                            return .ran
                        }
                    } catch { return .other("\(error)") }
                })
        }
        try await yieldUntil { limiter.inFlight >= limit }
        // Callers beyond: some queue, the rest are refused at once. Each queues at its own time.
        let callers = queueLimit + Int.random(in: 0...2, using: &random)
        var waiters: [Task<CallEnd, Never>] = []
        for index in 0..<callers {
            let before = events.count(.queued) + events.count(.rejected)
            waiters.append(
                Task {
                    do {
                        return try await limiter.execute { () -> CallEnd in
                            _ = high.enter()
                            defer { high.leave() }
                            running.increment()
                            return .ran
                        }
                    } catch let rejection as LimiterRejectionError {
                        return .rejected(rejection.reason, queued: rejection.queued)
                    } catch is CancellationError {
                        return .cancelled
                    } catch { return .other("\(error)") }
                })
            try await yieldUntil { events.count(.queued) + events.count(.rejected) != before }
            if index < queueLimit { clock.advance(by: .seconds(Int64(Int.random(in: 0...3, using: &random)))) }
        }
        #expect(limiter.queued == queueLimit)
        // Random fates for the queued ones: cancel now, cancel as the timeout fires, or let a slot free.
        let queuedTasks = Array(waiters.prefix(queueLimit))
        for task in queuedTasks where Bool.random(using: &random) {
            task.cancel()
        }
        let moveToDeadline = Bool.random(using: &random)
        if moveToDeadline {
            // Cancel one more while the clock passes every queue deadline.
            if let last = queuedTasks.last { last.cancel() }
            clock.advance(by: .seconds(20))
        }
        for gate in holderGates.shuffled(using: &random) {
            gate.open()
            await Task.yield()
        }
        var ends: [CallEnd] = []
        for task in holders + waiters { ends.append(await task.value) }
        #expect(high.highest <= limit, "more than `limit` ran at once")
        #expect(limiter.inFlight == 0)
        #expect(limiter.queued == 0)
        // One `rejected` event per refusal, one `queued` event per queued caller.
        let refusals = ends.filter { if case .rejected = $0 { return true } else { return false } }.count
        #expect(
            events.count(.rejected) == refusals, "rejected events \(events.count(.rejected)) vs refusals \(refusals)")
        #expect(events.count(.queued) == queueLimit)
        for end in ends {
            if case .rejected(let reason, let queued) = end, reason == .queueFull {
                #expect(queued == queueLimit, "a queue-full refusal reports \(String(describing: queued)) queued")
            }
            if case .other(let text) = end { Issue.record("unexpected end: \(text)") }
        }
        #expect(running.value == ends.filter { $0 == .ran }.count)

        // A follow-up burst: exactly `limit` run at once and `queueLimit` queue; the rest are refused.
        let burstGate = Gate()
        let entered = Counter()
        let refusedBefore = events.count(.rejected)
        var burst: [Task<Void, Never>] = []
        for _ in 0..<(limit + queueLimit + 2) {
            burst.append(
                Task {
                    _ = try? await limiter.execute {
                        entered.increment()
                        await burstGate.wait()
                    }
                })
        }
        try await yieldUntil {
            entered.value >= limit && events.count(.rejected) - refusedBefore >= 2 && limiter.queued >= queueLimit
        }
        #expect(limiter.inFlight == limit)
        #expect(entered.value == limit, "a leaked or doubly freed slot: \(entered.value) ran of \(limit)")
        #expect(limiter.queued == queueLimit)
        burstGate.open()
        for task in burst { await task.value }
        #expect(entered.value == limit + queueLimit)
        #expect(limiter.inFlight == 0)
    }

    /// Cancellation of the running operation's task and failures inside it give the slot back once.
    @Test(arguments: 0..<12)
    func bulkheadSlotsComeBackAfterOperationsEndAnyWay(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let limit = Int.random(in: 1...3, using: &random)
        let limiter = try ConcurrencyLimiter(limit: limit, queueLimit: 8)
        var tasks: [Task<Void, Never>] = []
        for _ in 0..<10 {
            let fate = Int.random(in: 0...2, using: &random)
            let task = Task {
                _ = try? await limiter.execute { () async throws -> Int in
                    await Task.yield()
                    switch fate {
                    case 0: return 1
                    case 1: throw TransientError()
                    default:
                        try Task.checkCancellation()
                        return 2
                    }
                }
            }
            if Bool.random(using: &random) { task.cancel() }
            tasks.append(task)
        }
        for task in tasks { await task.value }
        #expect(limiter.inFlight == 0)
        #expect(limiter.queued == 0)
        #expect(limiter.storage.isInUse == false)
    }

    // MARK: Rate limiter

    /// A refusal's retry hint is exact on the test clock: waiting that long finds a permit, waiting a
    /// nanosecond less does not. Waiters that are cancelled take no permit.
    @Test(arguments: 0..<16)
    func rateLimiterRetryHintsAndCancelledWaitersAreExact(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let capacity = Int.random(in: 1...4, using: &random)
        let perPeriod = Int.random(in: 1...capacity, using: &random)
        let useWindow = Bool.random(using: &random)
        let algorithm: RateLimiterAlgorithm =
            useWindow
            ? try .slidingWindow(limit: capacity, window: .seconds(4), segments: 4)
            : try .tokenBucket(capacity: capacity, tokensPerPeriod: perPeriod, period: .seconds(1))
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let limiter = try RateLimiter(algorithm, maximumWait: .zero, observer: events, clock: clock)
        var refusals = 0
        for _ in 0..<(capacity + 2) {
            do { try await limiter.execute {} } catch let rejection as LimiterRejectionError {
                refusals += 1
                #expect(rejection.reason == .noPermit)
                #expect(rejection.retryAfter != nil)
            } catch { Issue.record("\(error)") }
        }
        #expect(refusals == 2)
        #expect(events.count(.rejected) == 2)
        #expect(events.all.allSatisfy { $0.kind != .rejected || $0.retryAfter != nil })
        guard let hint = (events.all.last?.error as? LimiterRejectionError)?.retryAfter else { return }
        #expect(events.all.last?.retryAfter == hint)
        clock.advance(by: hint - .nanoseconds(1))
        #expect(limiter.availablePermits == 0, "a permit freed before the hint said")
        clock.advance(by: .nanoseconds(1))
        #expect(limiter.availablePermits >= 1, "no permit when the hint said one frees")

        // Waiters, some cancelled while asleep: the permits that come back go to the rest, and none are lost.
        let waiting = try RateLimiter(algorithm, maximumWait: .seconds(30), observer: events, clock: clock)
        while waiting.availablePermits > 0 { try await waiting.execute {} }
        let admitted = Counter()
        var tasks: [(Task<Bool, Never>, cancelled: Bool)] = []
        for _ in 0..<4 {
            let task = Task { () -> Bool in
                do {
                    try await waiting.execute { _ = admitted.increment() }
                    return true
                } catch { return false }
            }
            tasks.append((task, false))
        }
        await clock.waitForSleepers(count: 4)
        for index in tasks.indices where Bool.random(using: &random) {
            tasks[index].0.cancel()
            tasks[index].cancelled = true
        }
        // Drive time to each wait's end as the waiters sleep, until every one has ended.
        let driver = Task { while await clock.advanceToNextDeadline(within: .seconds(30)) != nil {} }
        for (task, cancelled) in tasks {
            let ran = await withTaskCancellationHandler {
                await task.value
            } onCancel: {
                task.cancel()
            }
            // Cancelled while asleep in the queue: a waiter cancelled while waiting, or as its wait
            // ends, runs nothing.
            if cancelled { #expect(!ran, "a waiter cancelled while asleep ran its operation (seed \(seed))") }
        }
        driver.cancel()
        #expect(
            admitted.value == tasks.filter { !$0.cancelled }.count, "every waiter left should run once (seed \(seed))")
        // After a long idle time the limiter is back at exactly its full allowance.
        clock.advance(by: .seconds(100))
        #expect(waiting.availablePermits == capacity)
        for _ in 0..<capacity { try await waiting.execute {} }
        #expect(waiting.availablePermits == 0)
    }

    /// The observer docs: a rate limiter's observer "Receives a rejected event for each refusal", and
    /// `waitCutShort` is "a refusal" (LimiterRejectionError's doc). A wait ended by an enclosing Timeout.
    @Test func rateLimiterWaitCutShortIsAnObservedRefusal() async throws {
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(10)), maximumWait: .seconds(20),
            observer: events, clock: clock)
        try await limiter.execute {}
        let timeout = try Timeout(.seconds(1), clock: clock)
        let seen = Lock<(any Error)?>(nil)
        let call = Task {
            try await timeout.execute {
                do { try await limiter.execute {} } catch {
                    seen.withLock { $0 = error }
                    throw error
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        _ = await call.result
        let inner = seen.withLock { $0 } as? LimiterRejectionError
        #expect(inner?.reason == .waitCutShort)
        #expect(
            events.count(.rejected) == 1,
            "the limiter refused the call (\(String(describing: inner))) but sent no rejected event")
    }

    @Test func bulkheadWaitCutShortIsAnObservedRefusal() async throws {
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let limiter = try ConcurrencyLimiter(name: "bulk", limit: 1, queueLimit: 1, observer: events, clock: clock)
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        try await yieldUntil { limiter.inFlight > 0 }
        let timeout = try Timeout(.seconds(1), clock: clock)
        let seen = Lock<(any Error)?>(nil)
        let call = Task {
            try await timeout.execute {
                do { try await limiter.execute {} } catch {
                    seen.withLock { $0 = error }
                    throw error
                }
            }
        }
        try await events.waitForQueued()
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        _ = await call.result
        gate.open()
        _ = try await holder.value
        let inner = seen.withLock { $0 } as? LimiterRejectionError
        #expect(inner?.reason == .waitCutShort)
        #expect(
            events.count(.rejected) == 1,
            "the bulkhead refused the call (\(String(describing: inner))) but sent no rejected event")
    }
}

extension StrategyEventRecorder {
    func waitForQueued() async throws {
        try await yieldUntil { self.count(.queued) > 0 }
    }
}
