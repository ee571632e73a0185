import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// What a task an attempt started and that outlived it (`Task { }`, which takes the attempt's
/// task-local scope) tells the limits, hedged calls and policies around that attempt.
///
/// Who cancels such a task is read only across attempts still running: no limit around an ended
/// attempt cancels it, so a time-out it meets is its own (see `TaskOutlivingNestedAttemptTests`).
/// What it sent is told past ended attempts: a `POST` it sent, a request that may have left, a
/// success of a call that may not run twice and a stop at a policy's own deadline reach every
/// limit around, and a retry-after hint it heard holds the hedged call around back, as the same
/// facts from a task inside the attempt do. Each test here fails when that walk stops at an
/// attempt that has ended.
@Suite("What a task outliving an attempt tells the strategies around it", .timeLimit(.minutes(5)))
struct TaskOutlivingAttemptFactsTests {
    /// A plain policy around `timeout`, two attempts, no wait between them.
    static func retrying(on clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
    }

    // MARK: - Who ended the call: a limit around an ended attempt did not

    /// Where the limit around the timed task sits, as the task outlives an attempt inside it.
    enum Nesting: CaseIterable, Sendable {
        /// `outer { Task { inner { … } } }`: the outer limit's operation returned at once.
        case outerReturned
        /// `outer { middle { Task { inner { … } } }; deaf work }`: the outer limit fired and its
        /// operation runs on.
        case nestedTimeoutEnded
        /// `outer { Hedging { first: Task { inner { … } }, fails; hedge: deaf work } }`: the outer
        /// limit fired and the hedge runs on.
        case hedgedAttemptEnded
    }

    /// A ``Timeout`` (10 s) in a task that outlived an attempt inside an outer ``Timeout`` (5 s):
    /// the outer limit's deadline came first, and has passed, but it cancels nothing in the task,
    /// so the inner limit's time-out is its own, and its observer hears of it. Before, the inner
    /// limit left the event to the outer one, which never reports it.
    @Test(arguments: Nesting.allCases)
    func aTimeoutInATaskOutlivingAnAttemptReportsItsOwnTimeOut(nesting: Nesting) async throws {
        let clock = TestClock()
        let innerEvents = EventLog()
        let outer = try Timeout(.seconds(5), name: "outer", clock: clock)
        let middle = try Timeout(.seconds(30), name: "middle", clock: clock)
        let inner = try Timeout(.seconds(10), name: "inner", observer: innerEvents, clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let attempts = Counter()
        let workCancelled = Counter()
        let background = Slot<Task<Int, any Error>>()
        let startBackground: @Sendable () -> Void = {
            background.set(
                Task {
                    try await inner.execute { () async throws -> Int in
                        try await clock.sleep(for: .seconds(60))
                        return 1
                    }
                })
        }
        let deafWork: @Sendable () async -> Void = {
            await TaskOutlivingNestedAttemptTests.deafWork(for: .seconds(100), on: clock, cancelled: workCancelled)
        }
        let call = Task { () async throws -> Int in
            try await outer.execute { () async throws -> Int in
                switch nesting {
                case .outerReturned:
                    startBackground()
                case .nestedTimeoutEnded:
                    try await middle.execute { startBackground() }
                    await deafWork()
                case .hedgedAttemptEnded:
                    return try await hedging.execute { () async throws -> Int in
                        if attempts.increment() == 1 {
                            startBackground()
                            throw TransientError()  // the first attempt ends; the hedge starts at once
                        }
                        await deafWork()
                        return 2
                    }
                }
                return 0
            }
        }
        try await yieldUntil("the inner limit's timer and its operation's sleep, and the deaf work's") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(10)) && requests.contains(.seconds(60))
                && (nesting == .outerReturned || requests.contains(.seconds(100)))
        }
        clock.advance(by: .seconds(5))  // the outer deadline passes: it fires, unless its operation returned
        if nesting != .outerReturned {
            try await yieldUntil("the outer limit cancelled the work") { workCancelled.value == 1 }
        }
        clock.advance(by: .seconds(5))  // the inner deadline passes
        let task = try #require(background.get)
        let result = await task.result  // the inner limit cancelled its operation's sleep
        #expect((result.failureValue as? TimeoutError)?.timeoutName == "inner", "\(nesting): \(result)")
        #expect(innerEvents.kinds.values == [.timedOut], "\(nesting): the inner time-out went unreported")
        clock.advance(by: .seconds(90))  // the deaf work ends
        _ = await call.result
    }

    // MARK: - What was sent: told past ended attempts

    /// A ``Timeout`` around a nested ``Timeout`` whose operation starts a task and returns; the
    /// task then sends a `POST` through a policy that declares it, and the request is in flight
    /// when the outer limit fires. The request left from inside the outer limit: its time-out
    /// reports the attempt as not idempotent, and the policy around it does not run the attempt
    /// (and the `POST`) again.
    @Test func aPostATaskOutlivingANestedTimeoutSentKeepsThePolicyAroundFromSendingItAgain() async throws {
        let clock = TestClock()
        let outer = try Self.retrying(on: clock)
        let timeout = try Timeout(.seconds(5), name: "outer", clock: clock)
        let nested = try Timeout(.seconds(30), name: "nested", clock: clock)
        let poster = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let attempts = Counter()
        let sends = Counter()
        let backgrounds = Recorder<Task<Int, any Error>>()
        let call = Task {
            await outer.outcome { () async throws -> Int in
                attempts.increment()
                return try await timeout.execute { () async throws -> Int in
                    try await nested.execute {
                        backgrounds.record(
                            Task {
                                try await clock.sleep(for: .seconds(1))  // the nested limit's operation has returned
                                return try await poster.execute(idempotency: .notIdempotent) {
                                    () async throws -> Int in
                                    sends.increment()
                                    try await clock.sleep(for: .seconds(100))  // in flight
                                    return 1
                                }
                            })
                    }
                    try await clock.sleep(for: .seconds(100))
                    return 0
                }
            }
        }
        try await yieldUntil("the limit's timer, the task's wait and the operation's sleep") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(5)) && requests.contains(.seconds(1)) && requests.contains(.seconds(100))
        }
        clock.advance(by: .seconds(1))  // the task sends its POST
        try await yieldUntil("the POST left") { sends.value == 1 }
        clock.advance(by: .seconds(4))  // t = 5: the outer limit fires
        // Had the policy tried again, its second attempt's task sends the POST a second time.
        let outcome = await driveThroughEveryWait(clock) { await call.value }
        for background in backgrounds.values { background.cancel() }
        #expect(sends.value == 1, "the POST was sent again")
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .notIdempotent, "\(outcome.stopReason as Any)")
        let limit = try #require(outcome.result.failureValue as? TimeoutError)
        #expect(limit.requestIdempotency == .notIdempotent)
    }

    /// A ``Timeout`` around a nested ``Timeout`` whose operation starts a task and returns; the
    /// task's `POST`, declared so, succeeds; then the outer limit's operation fails with a
    /// transient failure. The `POST` reached the dependency from inside the outer limit: the
    /// plain policy around it, told through the limit, does not run the attempt again.
    @Test func aPostATaskOutlivingANestedTimeoutGotThroughKeepsThePolicyAroundFromRetrying() async throws {
        let clock = TestClock()
        let outer = try Self.retrying(on: clock)
        let timeout = try Timeout(.seconds(30), name: "outer", clock: clock)
        let nested = try Timeout(.seconds(30), name: "nested", clock: clock)
        let poster = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let attempts = Counter()
        let sends = Counter()
        let answered = Counter()
        let call = Task {
            await outer.outcome { () async throws -> Int in
                attempts.increment()
                return try await timeout.execute { () async throws -> Int in
                    _ = try await nested.execute {
                        Task {
                            try await clock.sleep(for: .seconds(1))  // the nested limit's operation has returned
                            let value = try await poster.execute(idempotency: .notIdempotent) { () throws -> Int in
                                sends.increment()
                                return 1
                            }
                            answered.increment()
                            return value
                        }
                    }
                    try await clock.sleep(for: .seconds(2))
                    throw TransientError()
                }
            }
        }
        try await yieldUntil("the task's wait and the operation's sleep") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(1)) && requests.contains(.seconds(2))
        }
        clock.advance(by: .seconds(1))  // the task's POST succeeds
        try await yieldUntil("the POST was answered") { answered.value == 1 }
        clock.advance(by: .seconds(1))  // t = 2: the operation fails
        let outcome = await driveThroughEveryWait(clock) { await call.value }
        #expect(sends.value == 1, "the POST was sent again")
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .notIdempotent, "\(outcome.stopReason as Any)")
        #expect(outcome.result.failureValue is TransientError, "\(outcome.result)")
    }

    /// A policy declared not idempotent around a ``Timeout`` (10 s) whose operation starts, in a
    /// nested ``Timeout``, a task that sends a request and loses the connection, then waits for
    /// the network with a request that never left an offline device, until the limit fires. The
    /// task's request may have reached the dependency from inside the limit: the time-out does not
    /// read as one whose request never left, and the policy does not send the attempt again.
    @Test func aRequestATaskOutlivingANestedTimeoutSentSpeaksForTheLimitsAttempt() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let outer = try Self.retrying(on: clock)
        let timeout = try Timeout(.seconds(10), name: "outer", clock: clock)
        let nested = try Timeout(.seconds(30), name: "nested", clock: clock)
        let background = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let attempts = Counter()
        let backgroundSends = Counter()
        let backgroundEnded = Counter()
        let call = Task {
            await outer.outcome(idempotency: .notIdempotent) { () async throws -> Int in
                attempts.increment()
                return try await timeout.execute { () async throws -> Int in
                    _ = try await nested.execute {
                        Task {
                            defer { backgroundEnded.increment() }
                            try await clock.sleep(for: .seconds(1))  // the nested limit's operation has returned
                            return try await background.execute(idempotency: .idempotent) { () throws -> Int in
                                backgroundSends.increment()
                                throw URLError(.networkConnectionLost)  // it left, and lost its connection
                            }
                        }
                    }
                    return try await inner.execute(waitingFor: wait, idempotency: .idempotent) { () throws -> Int in
                        throw URLError(.notConnectedToInternet)
                    }
                }
            }
        }
        await network.waitForObservers(count: 1)  // the operation's request failed offline; it waits
        try await yieldUntil("the limit's timer and the task's wait") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(10)) && requests.contains(.seconds(1))
        }
        clock.advance(by: .seconds(1))  // the task's request loses its connection
        try await yieldUntil("the task's policy ended") { backgroundEnded.value == 1 }
        clock.advance(by: .seconds(9))  // t = 10: the limit fires while the operation waits
        // Had the policy tried again, its second attempt's task sends its request a second time.
        let outcome = await driveThroughEveryWait(clock) { await call.value }
        #expect(backgroundSends.value == 1, "the attempt was sent again")
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .notIdempotent, "\(outcome.stopReason as Any)")
        let limit = try #require(outcome.result.failureValue as? TimeoutError)
        #expect((limit.operationError as? URLError)?.code == .notConnectedToInternet)
        #expect(FailureAnalysis(limit).delivery == .mayHaveBeenSent)
    }

    /// A ``Timeout`` (2 s) whose watcher wakes an hour late, around a nested ``Timeout`` whose
    /// operation starts a task and returns; the limit's operation awaits the task, in which a
    /// policy with a deadline of 5 s fails and waits. The clock jumps 10 s: the policy's wait
    /// wakes, and it stops at its deadline with its failure, which the operation hands on. The
    /// limit's deadline came first: it claims the call, as it would have had the clock stepped.
    @Test func aPolicyInATaskOutlivingANestedTimeoutStoppingAtItsDeadlineLeavesTheEarlierLimitItsClaim()
        async throws
    {
        struct OwnError: Error {}
        let clock = TestClock()
        let (late, onTime) = (LateWakingClock(clock: clock), LateWakingClock(clock: clock, lag: .zero))
        let policy = try RetryPolicy(
            maximumAttempts: 5, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(5), clock: onTime,
            generator: SeededRandomNumberGenerator(seed: 1))
        let events = EventLog()
        let outer = try Timeout(.seconds(2), name: "outer", observer: events, clock: late)
        let nested = try Timeout(.seconds(30), name: "nested", clock: onTime)
        let call = Task {
            try await outer.execute { () async throws -> Int in
                let background = try await nested.execute {
                    Task { try await policy.execute { () throws -> Int in throw OwnError() } }
                }
                return try await background.value
            }
        }
        try await yieldUntil("the outer watcher's sleep and the policy's wait") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(3_602)) && requests.contains(.seconds(1))
        }
        clock.advance(by: .seconds(10))  // the policy's wait wakes past its deadline; the watcher sleeps on
        let result = await call.result
        let limit = try #require(result.failureValue as? TimeoutError, "\(result)")
        #expect(limit.timeoutName == "outer")
        #expect(limit.operationError is OwnError, "\(String(describing: limit.operationError))")
        #expect(events.kinds.values == [.timedOut])
    }

    // MARK: - A retry-after hint: heard past ended attempts

    /// A hedged call whose first attempt starts a task and fails at once; its replacement runs a
    /// policy whose request fails at t = 2 with no hint. The task's request fails at t = 1 with a
    /// 503 asking for 30 s: the same dependency asked the call for quiet, and the policy in the
    /// running attempt sends again only once the hint has passed.
    @Test func aHintATaskOutlivingAHedgedAttemptHeardHoldsTheRunningAttemptBack() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(60)), maximumHedges: 1, clock: clock)
        let background = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let patient = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(60),
            clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let runs = Counter()
        let backgroundEnded = Counter()
        let sends = Recorder<Duration>()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                if runs.increment() == 1 {
                    Task {
                        defer { backgroundEnded.increment() }
                        try await clock.sleep(for: .seconds(1))  // its attempt has ended
                        return try await background.execute { () throws -> Int in
                            throw StatusError(status: 503, hint: .seconds(30))
                        }
                    }
                    throw TransientError()  // the first attempt ends; its replacement starts at once
                }
                return try await patient.execute { () async throws -> Int in
                    sends.record(clock.now.offset)
                    if sends.values.count == 1 {
                        try await clock.sleep(for: .seconds(2))
                        throw StatusError(status: 503)
                    }
                    return 7
                }
            }
        }
        try await yieldUntil("the task's wait and the running attempt's request") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(1)) && requests.contains(.seconds(2))
        }
        clock.advance(by: .seconds(1))  // t = 1: the task's request asks for 30 s
        try await yieldUntil("the task's policy ended") { backgroundEnded.value == 1 }
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(1))  // t = 2: the running attempt's request fails
        await clock.waitForSleepRequests(count: requests + 1)  // its policy waits
        #expect(clock.sleepRequests.last == .seconds(29), "the policy waited its backoff, not the hint")
        clock.advance(by: clock.sleepRequests.last ?? .zero)
        #expect(try await call.value == 7)
        #expect(sends.values == [.zero, .seconds(31)])
    }

    /// A hedged call whose first attempt starts a task and fails at once; its replacement fails
    /// at t = 1 with a 503 asking for 30 s, and the call ends with it. The task's policy, whose
    /// request fails at t = 2 with no hint, sends to the dependency that asked the call for quiet:
    /// it sends again only once that hint has passed, not after its own 1 s backoff.
    @Test func aPolicyInATaskOutlivingAHedgedAttemptWaitsOutTheHintTheCallHeard() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(60)), maximumHedges: 1, clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(60),
            clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let runs = Counter()
        let ended = Counter()
        let sends = Recorder<Duration>()
        let background = Slot<Task<Int, any Error>>()
        let call = Task { () async -> Result<Int, any Error> in
            defer { ended.increment() }
            return await Result {
                try await hedging.execute { () async throws -> Int in
                    if runs.increment() == 1 {
                        background.set(
                            Task {
                                try await clock.sleep(for: .seconds(2))  // its attempt, and the call, have ended
                                return try await policy.execute { () throws -> Int in
                                    sends.record(clock.now.offset)
                                    if sends.values.count == 1 { throw StatusError(status: 503) }
                                    return 7
                                }
                            })
                        throw TransientError()  // the first attempt ends; its replacement starts at once
                    }
                    try await clock.sleep(for: .seconds(1))
                    throw StatusError(status: 503, hint: .seconds(30))
                }
            }
        }
        try await yieldUntil("the task's wait and the replacement's request") {
            let requests = clock.sleepRequests
            return requests.contains(.seconds(2)) && requests.contains(.seconds(1))
        }
        clock.advance(by: .seconds(1))  // t = 1: the replacement fails, asking for 30 s
        try await yieldUntil("the hedged call ended") { ended.value == 1 }
        await #expect(throws: StatusError.self) { try await call.value.get() }
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(1))  // t = 2: the task's request fails
        await clock.waitForSleepRequests(count: requests + 1)  // its policy waits
        #expect(clock.sleepRequests.last == .seconds(29), "the policy waited its backoff, not the hint")
        clock.advance(by: clock.sleepRequests.last ?? .zero)
        let task = try #require(background.get)
        #expect(try await task.value == 7)
        #expect(sends.values == [.seconds(2), .seconds(31)])
    }
}
