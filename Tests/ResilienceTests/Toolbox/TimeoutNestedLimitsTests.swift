import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// Waits until its task is cancelled, then throws `CancellationError`: a call that hangs.
private func hangUntilCancelled() async throws {
    let (stream, continuation) = AsyncStream<Int>.makeStream()
    for await _ in stream {}  // ends when the task is cancelled
    continuation.finish()  // held until here, so the stream stays open
    throw CancellationError()
}

/// A concurrency limiter on `clock` whose one slot a held call takes, with a queue that
/// times out after `queueTimeout`; `finish()` lets the held call go.
private struct HeldLimiter {
    let limiter: ConcurrencyLimiter
    let events: EventCounter
    let gate: Gate
    let holder: Task<Void, any Error>

    static func start(queueTimeout: Duration, clock: some Clock<Duration>) async throws -> HeldLimiter {
        let events = EventCounter()
        let limiter = try ConcurrencyLimiter(
            limit: 1, queueLimit: 4, queueTimeout: queueTimeout, observer: events, clock: clock)
        let gate = Gate()
        let holder = Task { try await limiter.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)
        return HeldLimiter(limiter: limiter, events: events, gate: gate, holder: holder)
    }

    /// Returns once a caller waits in the queue.
    func waitForQueuedCaller() async {
        await self.events.waitFor(.queued, count: 1)
    }

    func finish() async throws {
        self.gate.open()
        try await self.holder.value
        #expect(self.limiter.inFlight == 0 && self.limiter.queued == 0)
    }
}

/// Limits nested in one another, when a clock passes several of their deadlines in one move
/// (a test clock's advance, a device that slept): the earliest deadline decides, as when the
/// clock moves in steps. The limits wake in no set order; the one whose deadline came later
/// must not claim the call.
extension TimeoutTests {
    @Test func aJumpPastNestedTimeoutsEndsTheCallWithTheInnerEarlierOne() async throws {
        for _ in 0..<10 {
            let clock = TestClock()
            let (outerEvents, innerEvents) = (EventLog(), EventLog())
            let outer = try Timeout(.seconds(5), name: "outer", observer: outerEvents, clock: clock)
            let inner = try Timeout(.seconds(2), name: "inner", observer: innerEvents, clock: clock)
            let call = Task {
                try await outer.execute { try await inner.execute { try await hangUntilCancelled() } }
            }
            await clock.waitForSleepers(count: 2)  // the two watchers
            clock.advance(by: .seconds(10))
            let error = await #expect(throws: TimeoutError.self) { try await call.value }
            #expect(error?.timeoutName == "inner", "\(String(describing: error))")
            #expect(error?.operationError == nil)
            // Only the limit that decided reports a time-out.
            #expect(innerEvents.kinds.values == [.timedOut])
            #expect(outerEvents.kinds.values.isEmpty)
        }
    }

    /// The same two limits the other way round: the outer one came first, and decides.
    @Test func aJumpPastNestedTimeoutsEndsTheCallWithTheOuterOneWhenItCameFirst() async throws {
        for _ in 0..<10 {
            let clock = TestClock()
            let outer = try Timeout(.seconds(2), name: "outer", clock: clock)
            let inner = try Timeout(.seconds(5), name: "inner", clock: clock)
            let call = Task {
                try await outer.execute { try await inner.execute { try await hangUntilCancelled() } }
            }
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(10))
            let error = await #expect(throws: TimeoutError.self) { try await call.value }
            #expect(error?.timeoutName == "outer", "\(String(describing: error))")
        }
    }

    /// A time-out a call held when the outer limit cut it short did not end the call: a policy
    /// waiting to retry it was ended by the outer limit, which reports it, keeping the held
    /// time-out as the operation's error. The inner deadline came first, but the call went on.
    @Test func aTimeOutAPolicyWasWaitingToRetryStaysTheOuterLimitsLateError() async throws {
        let clock = TestClock()
        let outer = try Timeout(.seconds(5), name: "outer", clock: clock)
        let inner = try Timeout(.seconds(2), name: "inner", clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(10)), jitter: .none, clock: clock)
        let call = Task {
            try await outer.execute {
                try await policy.execute { try await inner.execute { try await hangUntilCancelled() } }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))  // the inner limit ends the first attempt
        // The outer watcher, the inner one and the policy's wait: the inner watcher's sleeper
        // may still be parked, so only the requests tell that the wait has begun.
        await clock.waitForSleepRequests(count: 3)
        clock.advance(by: .seconds(3))  // to the outer deadline, while the policy waits until 12 s
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(error?.timeoutName == "outer")
        #expect((error?.operationError as? TimeoutError)?.timeoutName == "inner")
    }

    /// The comparison itself, on limits whose clocks were made at different times: moved onto
    /// one clock, the earlier deadline decides, unless its limit ended the call before the other's
    /// deadline; limits on different clocks are never ordered.
    @Test func aNestedLimitDecidesOnlyWhenItsDeadlineCameFirstAndItEndedTheCallAfterTheOther() {
        let clock = TestClock()
        let outer = ElapsedClock(clock)
        clock.advance(by: .seconds(100))
        let inner = ElapsedClock(clock)  // its origin is 100 s later than the outer one's
        clock.advance(by: .seconds(10))  // now 110 s on the outer clock, 10 s on the inner one
        let end = TimeLimitEnd(clock: inner, deadline: .seconds(2))  // 102 s on the outer clock
        #expect(end.decided(beforeDeadline: .seconds(105), on: outer))
        #expect(end.decided(beforeDeadline: .seconds(102), on: outer))  // a tie: the inner one
        #expect(!end.decided(beforeDeadline: .seconds(101), on: outer))  // the outer one came first
        #expect(!end.decided(beforeDeadline: .seconds(111), on: outer))  // it ended before that
        // Another test clock that reads what the outer one reads, from the same origin.
        let otherClock = TestClock()
        let elsewhere = ElapsedClock(otherClock)
        otherClock.advance(by: .seconds(110))
        #expect(!end.decided(beforeDeadline: .seconds(105), on: elsewhere))
    }

    /// What a queue timeout's rejection keeps for an enclosing limit costs the error chain nothing:
    /// the rejection is still proved to hold no error, and no walk looks into it.
    @Test func aQueueTimeoutsRejectionStillHoldsNoErrorForTheChain() {
        let rejection = LimiterRejectionError(
            limiterName: "bulkhead", reason: .queueTimedOut, queued: 0,
            limitEnd: TimeLimitEnd(clock: ElapsedClock(TestClock()), deadline: .seconds(2)))
        #expect(ErrorChain.Reflection.holdsNothing(rejection))
        #expect(rejection == LimiterRejectionError(limiterName: "bulkhead", reason: .queueTimedOut, queued: 0))
    }

    /// A bulkhead's queue timeout and an enclosing ``Timeout``, jumped past together: whichever
    /// came first decides, as when the clock steps to it.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func aJumpPastATimeoutAndAQueueTimeoutEndsTheCallWithTheEarlierOne(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<10 {
            let clock = TestClock()
            let timeoutFirst = Bool.random(using: &generator)
            let held = try await HeldLimiter.start(
                queueTimeout: timeoutFirst ? .seconds(5) : .seconds(2), clock: clock)
            let timeout = try Timeout(timeoutFirst ? .seconds(2) : .seconds(5), clock: clock)
            let call = Task { try await timeout.execute { try await held.limiter.execute { 1 } } }
            await held.waitForQueuedCaller()
            await clock.waitForSleepers(count: 2)  // the watcher and the queue's timer
            clock.advance(by: .seconds(Int64.random(in: 6...100, using: &generator)))
            let result = await call.result
            switch result {
            case .failure(is TimeoutError) where timeoutFirst:
                break
            case .failure(let rejection as LimiterRejectionError) where !timeoutFirst:
                #expect(rejection.reason == .queueTimedOut)
            default:
                Issue.record("seed \(seed): \(timeoutFirst ? "the timeout" : "the queue") came first, got \(result)")
            }
            try await held.finish()
        }
    }

    /// The wake order the jumps above leave to chance, fixed: the outer limit's deadline came
    /// first, but its timer wakes an hour late, so the inner limit, due later, ends the call
    /// before the outer one has fired. The outer limit still claims the call: the inner limit's
    /// error says that it ended the call after the outer deadline had passed.
    @Test func anOuterLimitThatCameFirstClaimsTheCallThoughTheLaterInnerOneWokeFirst() async throws {
        for inner in InnerLimit.allCases {
            for outer in OuterLimit.allCases {
                let clock = TestClock()
                let (late, onTime) = (LateWakingClock(clock: clock), LateWakingClock(clock: clock, lag: .zero))
                let held =
                    inner == .queueTimeout ? try await HeldLimiter.start(queueTimeout: .seconds(5), clock: onTime) : nil
                let innerTimeout = try Timeout(.seconds(5), name: "inner", clock: onTime)
                let innerPolicy = try RetryPolicy(maximumAttempts: 1, clock: onTime)
                let outerEvents = EventLog()
                let outerTimeout = try Timeout(.seconds(2), name: "outer", observer: outerEvents, clock: late)
                let outerPolicy = try RetryPolicy(maximumAttempts: 1, clock: late)
                let operation: @Sendable () async throws -> Void = {
                    switch inner {
                    case .timeout:
                        try await innerTimeout.execute { try await hangUntilCancelled() }
                    case .queueTimeout:
                        _ = try await held?.limiter.execute { 1 }
                    case .attemptLimit:
                        try await innerPolicy.execute(attemptTimeout: .seconds(5)) { try await hangUntilCancelled() }
                    }
                }
                let call = Task {
                    switch outer {
                    case .timeout: try await outerTimeout.execute { try await operation() }
                    case .attemptLimit:
                        try await outerPolicy.execute(attemptTimeout: .seconds(2)) { try await operation() }
                    }
                }
                if let held { await held.waitForQueuedCaller() }
                await clock.waitForSleepers(count: 2)  // the outer limit's timer and the inner one's
                clock.advance(by: .seconds(10))  // the inner timer wakes; the outer one sleeps on
                let result = await call.result
                let context = "\(inner) in \(outer): got \(result)"
                switch result {
                case .failure(let error as TimeoutError) where outer == .timeout:
                    #expect(error.timeoutName == "outer", "\(context)")
                    #expect(outerEvents.kinds.values == [.timedOut], "\(context)")
                case .failure(let error as AttemptTimeoutError) where outer == .attemptLimit:
                    #expect(error.timeout == .seconds(2), "\(context)")
                default:
                    Issue.record("\(context)")
                }
                try await held?.finish()
            }
        }
    }

    /// A policy's own deadline nested in an outer limit, and a clock that jumps past both: the
    /// outer limit's timer wakes an hour late, so the policy's wait wakes first and the policy
    /// stops at its deadline with the failure it waited on, before the outer limit has fired.
    /// When the outer deadline came first (2 s against the policy's 5 s), the outer limit still
    /// claims the call, as it would have had the clock stepped, and keeps that failure as its
    /// late error; when the policy's came first (1.5 s), its failure goes on as it is.
    @Test(arguments: [Duration.seconds(5), .milliseconds(1_500)])
    func anOuterLimitThatCameFirstClaimsTheCallThoughANestedPolicysDeadlineWokeFirst(policyDeadline: Duration)
        async throws
    {
        struct OwnError: Error {}
        let outerFirst = policyDeadline > .seconds(2)
        for outer in OuterLimit.allCases {
            let clock = TestClock()
            let (late, onTime) = (LateWakingClock(clock: clock), LateWakingClock(clock: clock, lag: .zero))
            let innerPolicy = try RetryPolicy(
                maximumAttempts: 5, backoff: .constant(.seconds(1)), jitter: .none, deadline: policyDeadline,
                clock: onTime)
            let outerEvents = EventLog()
            let outerTimeout = try Timeout(.seconds(2), name: "outer", observer: outerEvents, clock: late)
            let outerPolicy = try RetryPolicy(maximumAttempts: 1, clock: late)
            let operation: @Sendable () async throws -> Void = {
                try await innerPolicy.execute { () throws -> Void in throw OwnError() }
            }
            let call = Task {
                switch outer {
                case .timeout: try await outerTimeout.execute { try await operation() }
                case .attemptLimit:
                    try await outerPolicy.execute(attemptTimeout: .seconds(2)) { try await operation() }
                }
            }
            await clock.waitForSleepers(count: 2)  // the outer limit's timer and the policy's wait
            clock.advance(by: .seconds(10))  // the policy's wait wakes; the outer timer sleeps on
            let result = await call.result
            let context = "the policy's deadline \(policyDeadline) in \(outer): got \(result)"
            switch result {
            case .failure(let error as TimeoutError) where outerFirst && outer == .timeout:
                #expect(error.timeoutName == "outer", "\(context)")
                #expect(error.operationError is OwnError, "\(context)")
                #expect(outerEvents.kinds.values == [.timedOut], "\(context)")
            case .failure(let error as AttemptTimeoutError) where outerFirst && outer == .attemptLimit:
                #expect(error.timeout == .seconds(2), "\(context)")
            case .failure(is OwnError) where !outerFirst:
                #expect(outerEvents.kinds.values.isEmpty, "\(context)")
            default:
                Issue.record("\(context)")
            }
        }
    }

    /// The comparison the claim rests on: an enclosing limit whose deadline had passed when a
    /// nested limit due later ended the call is the one that came first; a nested limit due no
    /// later, or one that ended the call before the enclosing deadline, or one on another clock,
    /// is not outrun.
    @Test func anEnclosingLimitOutranAnInnerOneOnlyWhenItsDeadlinePassedFirst() {
        let clock = TestClock()
        let elapsed = ElapsedClock(clock)
        clock.advance(by: .seconds(10))
        let end = TimeLimitEnd(clock: elapsed, deadline: .seconds(5))  // ended the call at 10 s
        let error = AppTransportError.transport(
            TimeoutError(
                timeoutName: "inner", timeout: .seconds(5), requestIdempotency: nil, operationError: nil,
                operationErrorAge: nil, limitEnd: end) as NSError)
        #expect(TimeLimitEnd.passedEarlier(error, than: .seconds(2), on: elapsed))
        #expect(!TimeLimitEnd.passedEarlier(error, than: .seconds(5), on: elapsed))  // a tie: the inner one
        #expect(!TimeLimitEnd.passedEarlier(error, than: .seconds(7), on: elapsed))
        #expect(!TimeLimitEnd.passedEarlier(error, than: .seconds(2), on: ElapsedClock(TestClock())))
        #expect(!TimeLimitEnd.passedEarlier(TransientError(), than: .seconds(2), on: elapsed))
        // An end made before its own deadline (not one a limit makes): the enclosing deadline
        // had not passed when it ended the call.
        let early = TimeoutError(
            timeoutName: "inner", timeout: .seconds(20), requestIdempotency: nil, operationError: nil,
            operationErrorAge: nil, limitEnd: TimeLimitEnd(clock: elapsed, deadline: .seconds(20)))
        #expect(TimeLimitEnd.passedEarlier(early, than: .seconds(10), on: elapsed))
        #expect(!TimeLimitEnd.passedEarlier(early, than: .seconds(11), on: elapsed))
    }

    /// A policy's attempt limit and a ``Timeout`` nested in either order, jumped past: the
    /// earlier one decides.
    @Test func aJumpPastAnAttemptLimitAndATimeoutEndsTheCallWithTheEarlierOne() async throws {
        for attemptLimitFirst in [true, false] {
            let clock = TestClock()
            let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
            let early: Duration = .seconds(2)
            let late: Duration = .seconds(5)
            // The attempt limit outside the timeout.
            let timeout = try Timeout(attemptLimitFirst ? late : early, clock: clock)
            let outside = Task {
                try await policy.execute(attemptTimeout: attemptLimitFirst ? early : late) {
                    try await timeout.execute { try await hangUntilCancelled() }
                }
            }
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(10))
            let outsideResult = await outside.result
            // The attempt limit inside the timeout.
            let inside = Task {
                try await timeout.execute {
                    try await policy.execute(attemptTimeout: attemptLimitFirst ? early : late) {
                        try await hangUntilCancelled()
                    }
                }
            }
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(10))
            let insideResult = await inside.result
            for result in [outsideResult, insideResult] {
                switch result {
                case .failure(is AttemptTimeoutError) where attemptLimitFirst: break
                case .failure(is TimeoutError) where !attemptLimitFirst: break
                default:
                    Issue.record("\(attemptLimitFirst ? "the attempt limit" : "the timeout") came first, got \(result)")
                }
            }
        }
    }

    /// A queue timeout inside a policy's attempt limit, jumped past: the queue's came first.
    @Test func aJumpPastAnAttemptLimitAndAQueueTimeoutEndsTheCallWithTheQueues() async throws {
        let clock = TestClock()
        let held = try await HeldLimiter.start(queueTimeout: .seconds(2), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let call = Task {
            try await policy.execute(attemptTimeout: .seconds(5)) { try await held.limiter.execute { 1 } }
        }
        await held.waitForQueuedCaller()
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        let rejection = await #expect(throws: LimiterRejectionError.self) { try await call.value }
        #expect(rejection?.reason == .queueTimedOut)
        try await held.finish()
    }

    /// A breaker outside reads the call as it reads it when the clock steps: the bulkhead's
    /// queue timeout as a local rejection it does not count, an inner time-out as a failure.
    @Test func aBreakerOutsideCountsAJumpPastNestedLimitsAsItCountsSteps() async throws {
        func queueCall(jump: Bool) async throws -> (LimiterRejectionError.Reason?, Int) {
            let clock = TestClock()
            let breaker = try CircuitBreaker(name: "b", tripRule: .consecutiveFailures(5), clock: clock)
            let held = try await HeldLimiter.start(queueTimeout: .seconds(2), clock: clock)
            let timeout = try Timeout(.seconds(5), clock: clock)
            let call = Task {
                try await breaker.execute { try await timeout.execute { try await held.limiter.execute { 1 } } }
            }
            await held.waitForQueuedCaller()
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(jump ? 10 : 2))
            let rejection = await #expect(throws: LimiterRejectionError.self) { try await call.value }
            try await held.finish()
            return (rejection?.reason, breaker.snapshot().consecutiveFailures)
        }
        func nestedCall(jump: Bool) async throws -> (String?, Int) {
            let clock = TestClock()
            let breaker = try CircuitBreaker(name: "b", tripRule: .consecutiveFailures(5), clock: clock)
            let outer = try Timeout(.seconds(5), name: "outer", clock: clock)
            let inner = try Timeout(.seconds(2), name: "inner", clock: clock)
            let call = Task {
                try await breaker.execute {
                    try await outer.execute { try await inner.execute { try await hangUntilCancelled() } }
                }
            }
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(jump ? 10 : 2))
            let error = await #expect(throws: TimeoutError.self) { try await call.value }
            return (error?.timeoutName, breaker.snapshot().consecutiveFailures)
        }
        let (steppedQueue, jumpedQueue) = (try await queueCall(jump: false), try await queueCall(jump: true))
        #expect(steppedQueue.0 == .queueTimedOut && jumpedQueue.0 == .queueTimedOut)
        #expect(steppedQueue.1 == 0 && jumpedQueue.1 == 0)
        let (steppedNested, jumpedNested) = (try await nestedCall(jump: false), try await nestedCall(jump: true))
        #expect(steppedNested.0 == "inner" && jumpedNested.0 == "inner")
        #expect(steppedNested.1 == 1 && jumpedNested.1 == 1)
    }
}

/// An app's error that keeps what its transport threw.
private enum AppTransportError: Error {
    case transport(any Error)
}

/// How an app's code passes on the error of a limit nested in its call, before an enclosing
/// limit sees it: first as thrown, bridged to `NSError` or copied from that, then inside zero
/// or more of the wrappers the failure analysis reads through (``ErrorShape``).
private struct LimitErrorWrapping: CustomStringConvertible {
    enum First: CaseIterable {
        case asThrown
        /// `as NSError`: a plain `NSError` on Linux, which no longer holds the Swift value.
        case bridged
        /// A plain `NSError` made from the bridged one's domain, code and `userInfo`.
        case copied
    }

    var first: First
    var shapes: [ErrorShape]

    static func draw(using generator: inout SeededRandomNumberGenerator) -> LimitErrorWrapping {
        LimitErrorWrapping(
            first: First.allCases.randomElement(using: &generator)!,
            shapes: ErrorShape.draw(depth: Int.random(in: 0...3, using: &generator), using: &generator))
    }

    func wrap(_ error: any Error) -> any Error {
        let first: any Error
        switch self.first {
        case .asThrown:
            first = error
        case .bridged:
            first = error as NSError
        case .copied:
            let bridged = error as NSError
            first = NSError(domain: bridged.domain, code: bridged.code, userInfo: bridged.userInfo)
        }
        return ErrorShape.wrap(first, in: self.shapes)
    }

    var description: String { "\(self.first) in \(self.shapes)" }
}

/// The same rule when the operation wraps what the inner limit throws, as an app's transport
/// layer does: the inner limit's error keeps when its deadline was and when it ended the call,
/// as the Swift value and in its `NSError` form, and the outer limit finds it along the chain
/// the failure analysis walks.
extension TimeoutTests {
    /// Runs a two-second `Timeout` around a hung call, and throws what it throws inside an
    /// error of the app's (`"enum"`) or under an `NSError`'s `NSUnderlyingErrorKey`, bridged.
    private static func wrappedInnerCall(_ inner: Timeout, wrap: String) async throws {
        do {
            try await inner.execute { try await hangUntilCancelled() }
        } catch {
            if wrap == "enum" { throw AppTransportError.transport(error) }
            throw NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error as NSError])
        }
    }

    /// Whether `error` is the inner two-second time-out, wrapped as `wrap` says.
    private static func isWrappedInnerTimeout(_ error: any Error, wrap: String) -> Bool {
        let inner: any Error
        if wrap == "enum" {
            guard case .transport(let transported)? = error as? AppTransportError else { return false }
            inner = transported
        } else {
            guard let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? any Error else {
                return false
            }
            inner = underlying
        }
        if let timeout = inner as? TimeoutError { return timeout.timeoutName == "inner" }
        let bridged = inner as NSError
        return bridged.domain == TimeoutError.errorDomain && bridged.localizedDescription.hasPrefix("inner ")
    }

    @Test(arguments: ["enum", "nsError"], [false, true])
    func aJumpPastNestedTimeoutsEndsAsStepsDoWhenTheOperationWrapsTheInnerError(wrap: String, steps: Bool)
        async throws
    {
        for _ in 0..<20 {
            let clock = TestClock()
            let outerEvents = EventLog()
            let outer = try Timeout(.seconds(5), name: "outer", observer: outerEvents, clock: clock)
            let inner = try Timeout(.seconds(2), name: "inner", clock: clock)
            let call = Task { try await outer.execute { try await Self.wrappedInnerCall(inner, wrap: wrap) } }
            await clock.waitForSleepers(count: 2)
            // In steps the inner limit ends the call at two seconds and the outer one never fires.
            clock.advance(by: .seconds(steps ? 2 : 10))
            let result = await call.result
            guard case .failure(let error) = result else {
                Issue.record("no error")
                continue
            }
            #expect(Self.isWrappedInnerTimeout(error, wrap: wrap), "steps: \(steps), got \(error)")
            #expect(outerEvents.kinds.values.isEmpty)
        }
    }

    /// The same through a policy's per-attempt limit of five seconds.
    @Test(arguments: ["enum", "nsError"])
    func aJumpPastAnAttemptLimitEndsWithTheInnerTimeoutTheOperationWrapped(wrap: String) async throws {
        for _ in 0..<20 {
            let clock = TestClock()
            let policy = try RetryPolicy(maximumAttempts: 1, backoff: .constant(.zero), jitter: .none, clock: clock)
            let inner = try Timeout(.seconds(2), name: "inner", clock: clock)
            let call = Task {
                try await policy.execute(attemptTimeout: .seconds(5)) {
                    try await Self.wrappedInnerCall(inner, wrap: wrap)
                }
            }
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(10))
            let result = await call.result
            guard case .failure(let error) = result else {
                Issue.record("no error")
                continue
            }
            #expect(Self.isWrappedInnerTimeout(error, wrap: wrap), "got \(error)")
        }
    }

    /// A limit nested in the call.
    private enum InnerLimit: CaseIterable {
        case timeout, queueTimeout, attemptLimit
    }

    /// A limit enclosing the call.
    private enum OuterLimit: CaseIterable {
        case timeout, attemptLimit
    }

    /// Random nestings of the three kinds of limit, their deadlines in either order, the inner
    /// limit's error wrapped in random shapes: a jump past both when the inner deadline comes
    /// first leaves the call to the inner limit; the outer limit claims it when its deadline
    /// comes first, the jump then stopping short of the inner one, where no wake order is left to
    /// chance (the comparison that keeps a later inner limit from deciding is checked for every
    /// shape above).
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func nestedLimitsEndTheCallWithTheEarlierOneHoweverTheInnerErrorIsWrapped(seed: UInt64)
        async throws
    {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for round in 0..<12 {
            let inner = InnerLimit.allCases.randomElement(using: &generator)!
            let outer = OuterLimit.allCases.randomElement(using: &generator)!
            let innerFirst = Bool.random(using: &generator)
            let wrapping = LimitErrorWrapping.draw(using: &generator)
            let early = Int64.random(in: 1...2, using: &generator)
            let late = Int64.random(in: 3...5, using: &generator)
            let jump = Duration.seconds(
                innerFirst
                    ? Int64.random(in: 6...100, using: &generator) : Int64.random(in: early..<late, using: &generator))
            let (innerLimit, outerLimit) =
                innerFirst ? (Duration.seconds(early), Duration.seconds(late)) : (.seconds(late), .seconds(early))
            let context = "seed \(seed) round \(round): \(inner) in \(outer), \(wrapping), inner first: \(innerFirst)"

            let clock = TestClock()
            let held =
                inner == .queueTimeout ? try await HeldLimiter.start(queueTimeout: innerLimit, clock: clock) : nil
            let innerTimeout = try Timeout(innerLimit, name: "inner", clock: clock)
            let innerPolicy = try RetryPolicy(maximumAttempts: 1, clock: clock)
            let outerEvents = EventLog()
            let outerTimeout = try Timeout(outerLimit, name: "outer", observer: outerEvents, clock: clock)
            let outerPolicy = try RetryPolicy(maximumAttempts: 1, clock: clock)
            let operation: @Sendable () async throws -> Void = {
                do {
                    switch inner {
                    case .timeout:
                        try await innerTimeout.execute { try await hangUntilCancelled() }
                    case .queueTimeout:
                        _ = try await held?.limiter.execute { 1 }
                    case .attemptLimit:
                        try await innerPolicy.execute(attemptTimeout: innerLimit) { try await hangUntilCancelled() }
                    }
                } catch {
                    throw wrapping.wrap(error)
                }
            }
            let call = Task {
                switch outer {
                case .timeout: try await outerTimeout.execute { try await operation() }
                case .attemptLimit: try await outerPolicy.execute(attemptTimeout: outerLimit) { try await operation() }
                }
            }
            if let held { await held.waitForQueuedCaller() }
            await clock.waitForSleepers(count: 2)  // the outer limit's timer and the inner one's
            clock.advance(by: jump)
            let result = await call.result
            let outerClaimed: Bool
            switch result {
            case .success:
                Issue.record("\(context): no error")
                outerClaimed = false
            case .failure(let error as TimeoutError) where outer == .timeout && error.timeoutName == "outer":
                outerClaimed = true
            case .failure(let error as AttemptTimeoutError) where outer == .attemptLimit && error.timeout == outerLimit:
                outerClaimed = true
            case .failure:
                outerClaimed = false
            }
            #expect(outerClaimed == !innerFirst, "\(context): got \(result)")
            if outer == .timeout {
                #expect(outerEvents.kinds.values == (innerFirst ? [] : [.timedOut]), "\(context)")
            }
            try await held?.finish()
        }
    }

    /// Where the inner limit's end is looked for: its error as thrown or in its `NSError` form,
    /// inside each of the shapes an app wraps it in, on the same clock only. A copy of the
    /// `NSError` whose `userInfo` lost the end (archived, rebuilt from plain values) has nothing
    /// to compare, and the enclosing limit keeps the call, as on another clock.
    @Test func aNestedLimitsEndIsFoundWhereverTheAppWrapsItsErrorOnTheSameClockOnly() {
        let clock = TestClock()
        let elapsed = ElapsedClock(clock)
        let otherClock = ElapsedClock(TestClock())
        clock.advance(by: .seconds(10))
        let end = TimeLimitEnd(clock: elapsed, deadline: .seconds(2))
        let limitErrors: [any Error] = [
            TimeoutError(
                timeoutName: "inner", timeout: .seconds(2), requestIdempotency: nil, operationError: nil,
                operationErrorAge: nil, limitEnd: end),
            AttemptTimeoutError(
                timeout: .seconds(2), requestIdempotency: nil, operationError: TransientError(),
                operationErrorAge: nil, limitEnd: end),
            LimiterRejectionError(limiterName: "bulkhead", reason: .queueTimedOut, queued: 0, limitEnd: end),
        ]
        for limitError in limitErrors {
            for first in LimitErrorWrapping.First.allCases {
                for shape in [nil] + ErrorShape.allCases.map(Optional.some) {
                    let wrapped = LimitErrorWrapping(first: first, shapes: shape.map { [$0] } ?? []).wrap(limitError)
                    let context = "\(type(of: limitError)), \(first) in \(String(describing: shape))"
                    #expect(TimeLimitEnd.decidedEarlier(wrapped, than: .seconds(5), on: elapsed), "\(context)")
                    #expect(!TimeLimitEnd.decidedEarlier(wrapped, than: .seconds(1), on: elapsed), "\(context)")
                    #expect(!TimeLimitEnd.decidedEarlier(wrapped, than: .seconds(5), on: otherClock), "\(context)")
                }
            }
            // The `NSError` form without the end, as a copy made of its plain values would be.
            let bridged = limitError as NSError
            var userInfo = bridged.userInfo
            #expect(userInfo["ResilienceTimeLimitEnd"] is TimeLimitEnd)
            userInfo["ResilienceTimeLimitEnd"] = nil
            let lost = NSError(domain: bridged.domain, code: bridged.code, userInfo: userInfo)
            #expect(!TimeLimitEnd.decidedEarlier(lost, than: .seconds(5), on: elapsed))
            #expect(!TimeLimitEnd.decidedEarlier(SilentAppError.transport(lost), than: .seconds(5), on: elapsed))
        }
        // An error of the library's made with a public initializer keeps no end.
        let plain = TimeoutError(timeoutName: "inner", timeout: .seconds(2))
        #expect(
            !TimeLimitEnd.decidedEarlier(SilentAppError.transport(plain as NSError), than: .seconds(5), on: elapsed))
    }
}
