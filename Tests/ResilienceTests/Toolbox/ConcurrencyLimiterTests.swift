import ResilienceTesting
import Testing

@testable import Resilience

// Under ThreadSanitizer its 10,000-task stress tests share two cores with the whole sanitized run
// and wait for the pool longer than a minute; they run there all the same, with more room.
@Suite("Concurrency limiter", .timeLimit(.minutes(5)))
struct ConcurrencyLimiterTests {
    @Test func rejectsTheCallPastTheLimitWhenThereIsNoQueue() async throws {
        let limiter = try ConcurrencyLimiter(name: "uploads", limit: 2, clock: TestClock())
        let gate = Gate()
        let running = (0..<2).map { _ in Task { try await limiter.execute { await gate.wait() } } }
        await gate.waitForWaiters(count: 2)
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 1 } }
        #expect(error?.reason == .queueFull)
        #expect(error?.queued == 0)
        #expect(FailureAnalysis(try #require(error)).delivery == .notSent)
        gate.open()
        for task in running { try await task.value }
        #expect(limiter.inFlight == 0)
        #expect(try await limiter.execute { 3 } == 3)
    }

    @Test func servesQueuedCallersInArrivalOrder() async throws {
        let events = EventCounter()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 3, observer: events, clock: TestClock())
        let gate = Gate()
        let order = Recorder<Int>()
        let first = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        var queued: [Task<Void, any Error>] = []
        for index in 1...3 {
            queued.append(Task { try await limiter.execute { order.record(index) } })
            await events.waitFor(.queued, count: index)  // in the queue before the next one arrives
        }
        let error = await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 0 } }
        #expect(error?.queued == 3)
        gate.open()
        try await first.value
        for task in queued { try await task.value }
        #expect(order.values == [1, 2, 3])
        #expect(limiter.inFlight == 0 && limiter.queued == 0)
    }

    @Test func aQueuedCallerThatWaitsPastTheQueueTimeoutIsRefused() async throws {
        let queue = try await QueuedBehindAHeldSlot.start()
        let (clock, limiter, second) = (queue.clock, queue.limiter, queue.second)
        clock.advance(by: .seconds(4))
        #expect(limiter.queued == 1)
        clock.advance(by: .seconds(1))
        let error = await #expect(throws: LimiterRejectionError.self) { try await second.value }
        #expect(error?.reason == .queueTimedOut)
        #expect(limiter.queued == 0)
        try await queue.finish()
        #expect(limiter.inFlight == 0)
    }

    /// A caller cancelled once its queue timeout has passed, before or after the timer woke, is
    /// refused as timed out, as it would have been a moment earlier: a fallback or a breaker sees
    /// the time-out, not the caller's own cancellation.
    @Test func aQueuedCallerCancelledAfterItsQueueTimeoutPassedIsRefusedAsTimedOut() async throws {
        let queue = try await QueuedBehindAHeldSlot.start()
        let (clock, limiter, second) = (queue.clock, queue.limiter, queue.second)
        clock.advance(by: .seconds(5))
        second.cancel()
        let error = await #expect(throws: LimiterRejectionError.self) { try await second.value }
        #expect(error?.reason == .queueTimedOut)
        #expect(limiter.queued == 0)
        try await queue.finish()
        #expect(limiter.inFlight == 0)
    }

    /// Cancelled before its queue timeout, a queued caller still gets its own cancellation, even
    /// when its task runs again only after the timeout has passed: the clock is read at the
    /// cancellation, not when the caller wakes.
    @Test func aQueuedCallerCancelledBeforeItsQueueTimeoutGetsCancellation() async throws {
        let queue = try await QueuedBehindAHeldSlot.start()
        let (clock, limiter, second) = (queue.clock, queue.limiter, queue.second)
        clock.advance(by: .seconds(4))
        second.cancel()
        clock.advance(by: .seconds(2))
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(limiter.queued == 0)
        try await queue.finish()
    }

    @Test func aCancelledQueuedCallerLeavesTheQueueAtOnceAndTakesNoSlot() async throws {
        let events = EventCounter()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 5, observer: events, clock: TestClock())
        let gate = Gate()
        let ran = Counter()
        let first = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        let second = Task { try await limiter.execute { ran.increment() } }
        await events.waitFor(.queued, count: 1)
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(limiter.queued == 0)
        gate.open()
        try await first.value
        #expect(ran.value == 0)
        #expect(limiter.inFlight == 0)
    }

    /// The slot held by a call that hangs, one caller waiting for it, and 200 callers queued
    /// and cancelled one after another: the queue forgets each one that left instead of
    /// keeping its ticket until the queue is empty, which it never is.
    @Test func callersThatLeftAreForgottenWhileAnotherStillWaitsForAHeldSlot() async throws {
        let events = EventCounter()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 2, observer: events, clock: TestClock())
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        let waiter = Task { try await limiter.execute { 1 } }
        await events.waitFor(.queued, count: 1)
        for round in 0..<200 {
            let leaver = Task { try await limiter.execute { 2 } }
            await events.waitFor(.queued, count: round + 2)
            leaver.cancel()
            _ = await leaver.result
        }
        #expect(limiter.queued == 1)
        let kept = limiter.storage.state.withLock { $0.machine.ticketsKept }
        #expect(kept <= 64, "\(kept) tickets kept for one caller waiting")
        gate.open()
        try await holder.value
        #expect(try await waiter.value == 1)
        #expect(limiter.inFlight == 0 && limiter.queued == 0)
    }

    @Test func aCallerCancelledBeforeItQueuesIsAnsweredToo() async throws {
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 5, clock: TestClock())
        let gate = Gate()
        let first = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        let second = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await limiter.execute { 2 }
        }
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(limiter.queued == 0)
        gate.open()
        try await first.value
    }

    @Test func theSlotIsReturnedWhenTheOperationThrows() async throws {
        let limiter = try ConcurrencyLimiter(limit: 1, clock: TestClock())
        await #expect(throws: TransientError.self) { try await limiter.execute { throw TransientError() } }
        #expect(limiter.inFlight == 0)
    }

    @Test func rejectsInvalidSettingsNamingEach() {
        #expect(rejectedSetting { _ = try ConcurrencyLimiter(limit: 0) } == "limit")
        #expect(rejectedSetting { _ = try ConcurrencyLimiter(limit: 2_000_000) } == "limit")
        #expect(rejectedSetting { _ = try ConcurrencyLimiter(limit: 1, queueLimit: -1) } == "queueLimit")
        #expect(rejectedSetting { _ = try ConcurrencyLimiter(limit: 1, queueLimit: Int.max) } == "queueLimit")
        #expect(rejectedSetting { _ = try ConcurrencyLimiter(limit: 1, queueTimeout: .zero) } == "queueTimeout")
        #expect(
            rejectedSetting { _ = try ConcurrencyLimiter(limit: 1, queueTimeout: .seconds(Int64.max)) }
                == "queueTimeout")
        #expect(rejectedSetting { _ = try ConcurrencyLimiter(limit: 1_000_000, queueLimit: 1_000_000) } == nil)
    }

    @Test func tenThousandTasksNeverRunMoreThanTheLimitAndEveryQueuedCallerIsAnswered() async throws {
        let limiter = try ConcurrencyLimiter(limit: 8, queueLimit: 10_000, clock: TestClock())
        let inFlight = HighWaterMark()
        let violations = Counter()
        let completed = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<10_000 {
                group.addTask {
                    try await limiter.execute {
                        if inFlight.enter() > 8 { violations.increment() }
                        await Task.yield()
                        inFlight.leave()
                        return 1
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(completed == 10_000)
        #expect(violations.value == 0)
        #expect(inFlight.highest <= 8)
        #expect(limiter.inFlight == 0 && limiter.queued == 0)
    }

    @Test func tenThousandTasksWithASmallQueueAreEachAdmittedOrRefusedAndNothingLeaks() async throws {
        let limiter = try ConcurrencyLimiter(limit: 4, queueLimit: 50, clock: TestClock())
        let inFlight = HighWaterMark()
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<10_000 {
                group.addTask {
                    let task = Task {
                        try await limiter.execute {
                            inFlight.enter()
                            await Task.yield()
                            inFlight.leave()
                        }
                    }
                    if index.isMultiple(of: 7) { task.cancel() }
                    do {
                        try await task.value
                        return true
                    } catch {
                        return false
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.count == 10_000)  // every caller answered
        #expect(inFlight.highest <= 4)
        #expect(limiter.inFlight == 0 && limiter.queued == 0)
    }
}

/// A limiter of one slot, a queue of one and a 5 s queue timeout on a test clock: the first
/// caller holds the slot until ``finish()``, the second waits in the queue, its timer parked.
private struct QueuedBehindAHeldSlot {
    let clock: TestClock
    let limiter: ConcurrencyLimiter
    let gate: Gate
    let first: Task<Void, any Error>
    let second: Task<Int, any Error>

    static func start() async throws -> Self {
        let clock = TestClock()
        let limiter = try ConcurrencyLimiter(limit: 1, queueLimit: 1, queueTimeout: .seconds(5), clock: clock)
        let gate = Gate()
        let first = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        let second = Task { try await limiter.execute { 2 } }
        await clock.waitForSleepers(count: 1)  // the queue timer
        return Self(clock: clock, limiter: limiter, gate: gate, first: first, second: second)
    }

    /// Frees the slot and waits for the first caller to end.
    func finish() async throws {
        self.gate.open()
        try await self.first.value
    }
}
