import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A limiter whose one slot or permit is taken, and that lets a caller wait for the next:
/// a bulkhead with a queue whose one slot a parked call holds, or a rate limiter whose one
/// token is spent and that lets a caller wait out the refill.
private struct WaitingLimiter: Sendable {
    enum Kind: CaseIterable, Sendable, CustomStringConvertible {
        case bulkhead
        case rateLimiter

        var description: String {
            switch self {
            case .bulkhead: "bulkhead"
            case .rateLimiter: "rateLimiter"
            }
        }
    }

    /// The rate limiter's period: the time until its spent token comes back.
    static let refill: Duration = .seconds(5)

    let kind: Kind
    let bulkhead: ConcurrencyLimiter?
    let rateLimiter: RateLimiter?
    let events: EventCounter
    let gate: Gate
    let holder: Task<Void, any Error>?

    static func make(_ kind: Kind, clock: TestClock) async throws -> WaitingLimiter {
        let events = EventCounter()
        let gate = Gate()
        switch kind {
        case .bulkhead:
            let limiter = try ConcurrencyLimiter(
                name: "bulkhead", limit: 1, queueLimit: 1, observer: events, clock: clock)
            let holder = Task { try await limiter.execute { await gate.wait() } }
            await gate.waitForWaiters(count: 1)  // the one slot is taken
            return WaitingLimiter(
                kind: kind, bulkhead: limiter, rateLimiter: nil, events: events, gate: gate, holder: holder)
        case .rateLimiter:
            let limiter = try RateLimiter(
                .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: Self.refill), name: "rate",
                maximumWait: .seconds(60), clock: clock)
            _ = try await limiter.execute { 0 }  // the one token is spent
            return WaitingLimiter(
                kind: kind, bulkhead: nil, rateLimiter: limiter, events: events, gate: gate, holder: nil)
        }
    }

    nonisolated(nonsending) func call<Value>(_ operation: () async throws -> Value) async throws -> Value {
        switch self.kind {
        case .bulkhead: try await self.bulkhead!.execute(operation: operation)
        case .rateLimiter: try await self.rateLimiter!.execute(operation: operation)
        }
    }

    /// Returns once the `queued`th caller since the start waits for the limiter, and `sleepers`
    /// time limits and the one caller waiting sleep on `clock`.
    func waitForWaiting(queued: Int = 1, sleepers: Int, clock: TestClock) async {
        switch self.kind {
        case .bulkhead:
            await self.events.waitFor(.queued, count: queued)
            await clock.waitForSleepers(count: sleepers)
        case .rateLimiter:
            await clock.waitForSleepers(count: sleepers + 1)  // the waiting caller sleeps to the refill
        }
    }

    /// Frees the limiter for the next caller: the held slot, or (the test moves the clock) the refill.
    func free() async throws {
        self.gate.open()
        try await self.holder?.value
    }
}

/// Whether the breaker sits outside the time limit or inside it, with the limiter innermost.
enum BreakerPlacement: String, CaseIterable, Sendable {
    case outsideTheTimeLimit
    case insideTheTimeLimit
}

/// A breaker counts what says something about its dependency's health, and nothing else.
@Suite("What a breaker counts: waits cut short, refusals, partial failures", .timeLimit(.minutes(5)))
struct CircuitBreakerHealthCountingTests {
    /// Runs `operation` through `breaker` and `timeout`, the breaker placed as `placement` says.
    static func run<Value: Sendable>(
        _ placement: BreakerPlacement, breaker: CircuitBreaker, timeout: Timeout,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        switch placement {
        case .outsideTheTimeLimit:
            try await breaker.execute { try await timeout.execute(operation: operation) }
        case .insideTheTimeLimit:
            try await timeout.execute { try await breaker.execute(operation: operation) }
        }
    }

    /// A time limit that ends a call while it waits in a bulkhead's queue or for a rate
    /// limiter's permit ends a call that never reached the dependency: the breaker does not
    /// count it, wherever it sits around the limit. The time-out still reads as one that may have
    /// been sent: the operation might have sent a request before it waited.
    @Test(arguments: WaitingLimiter.Kind.allCases, BreakerPlacement.allCases)
    fileprivate func aWaitForALimiterCutShortByATimeLimitIsNotCounted(
        kind: WaitingLimiter.Kind, placement: BreakerPlacement
    ) async throws {
        let clock = TestClock()
        let limiter = try await WaitingLimiter.make(kind, clock: clock)
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let call = Task {
            try await Self.run(placement, breaker: breaker, timeout: timeout) { try await limiter.call { 1 } }
        }
        await limiter.waitForWaiting(sleepers: 1, clock: clock)
        clock.advance(by: .seconds(2))
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        let late = try #require(error?.operationError as? LimiterRejectionError)
        #expect(late.reason == .waitCutShort)
        let analysis = FailureAnalysis(try #require(error))
        #expect(analysis.delivery == .mayHaveBeenSent)
        #expect(analysis.endedWaitingAtAGate)
        #expect(breaker.snapshot().recentFailures == 0)
        #expect(breaker.state == .closed)
        try await limiter.free()
        clock.advance(by: WaitingLimiter.refill)
        #expect(try await Self.run(placement, breaker: breaker, timeout: timeout) { 2 } == 2)
    }

    /// A time limit that ends a call that did get its slot or permit and ran still counts.
    @Test(arguments: BreakerPlacement.allCases)
    func aTimeOutOfACallThatRanIsStillCounted(placement: BreakerPlacement) async throws {
        let clock = TestClock()
        let limiter = try ConcurrencyLimiter(name: "bulkhead", limit: 1, queueLimit: 1, clock: clock)
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let call = Task {
            try await Self.run(placement, breaker: breaker, timeout: timeout) {
                try await limiter.execute { () async throws -> Int in
                    try await clock.sleep(for: .seconds(3_600))
                    return 0
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the hung dependency and the time limit
        clock.advance(by: .seconds(2))
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(FailureAnalysis(try #require(error)).delivery == .mayHaveBeenSent)
        #expect(breaker.state == .open)
    }

    /// The caller's own cancellation of a call waiting for a limiter under a time limit still
    /// ends it with `CancellationError`, which the breaker does not count.
    @Test(arguments: WaitingLimiter.Kind.allCases)
    fileprivate func theCallersCancellationWhileWaitingIsUnchanged(kind: WaitingLimiter.Kind) async throws {
        let clock = TestClock()
        let limiter = try await WaitingLimiter.make(kind, clock: clock)
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let call = Task {
            try await Self.run(.outsideTheTimeLimit, breaker: breaker, timeout: timeout) {
                try await limiter.call { 1 }
            }
        }
        await limiter.waitForWaiting(sleepers: 1, clock: clock)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.snapshot().recentFailures == 0)
        try await limiter.free()
    }

    /// A `POST` whose attempt timed out while it waited for a limiter is not sent again: the
    /// wait proves only that the request behind that limiter never left, not that the attempt
    /// sent nothing before it (see `TimeLimitAroundGatesTests`). The breaker does not count it.
    @Test(arguments: WaitingLimiter.Kind.allCases)
    fileprivate func aPOSTWhoseWaitForALimiterWasCutShortIsNotSentAgainNorCounted(
        kind: WaitingLimiter.Kind
    ) async throws {
        let clock = TestClock()
        let limiter = try await WaitingLimiter.make(kind, clock: clock)
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let sent = Recorder<Int>()
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(3), idempotency: .notIdempotent) {
                try await breaker.execute {
                    try await limiter.call { () -> Int in
                        sent.record(1)
                        return 7
                    }
                }
            }
        }
        await limiter.waitForWaiting(sleepers: 1, clock: clock)  // the attempt waits; its time limit sleeps
        clock.advance(by: .seconds(3))
        let outcome = await call.value
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(sent.values.isEmpty)
        #expect(breaker.snapshot().recentFailures == 0)
        #expect(breaker.state == .closed)
        try await limiter.free()
    }

    @Test func aPOSTWhoseAttemptRanAndTimedOutIsNotSentAgain() async throws {
        let clock = TestClock()
        let limiter = try ConcurrencyLimiter(name: "bulkhead", limit: 1, queueLimit: 1, clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(3), idempotency: .notIdempotent) {
                try await limiter.execute { () async throws -> Int in
                    try await clock.sleep(for: .seconds(3_600))
                    return 0
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(3))
        let outcome = await call.value
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// The analysis behind it: a wait cut short is not a limiter's refusal (no load shedding);
    /// as the time limit's outcome, in the task it cancelled or as the late error a limit keeps
    /// (nested limits included), Swift value or bridged, it is a time-out that ended in front of
    /// the dependency: not counted, and still not sent again when it may not run twice.
    @Test func aWaitCutShortIsATimeOutNoBreakerCounts() {
        let cut = LimiterRejectionError(limiterName: "bulkhead", reason: .waitCutShort, queued: 0)
        for error in [cut] + BridgedLibraryErrorTests.BridgedShape.allCases.map({ $0.shape(cut) }) {
            let analysis = FailureAnalysis(error, isCancelled: false, timeLimitFired: false)
            #expect(analysis.delivery == .notSent, "\(error)")
            #expect(!analysis.isLocalRejection, "\(error)")
            #expect(Rulebook.countsAsFailure(analysis) == false, "\(error)")
            // In the task the time limit cancelled, it is the time limit's outcome, still not sent.
            let inTask = FailureAnalysis(error, isCancelled: true, timeLimitFired: true)
            #expect(inTask.interruption == .timeLimit)
            #expect(inTask.delivery == .mayHaveBeenSent, "\(error)")
            #expect(inTask.endedWaitingAtAGate, "\(error)")
            #expect(Rulebook.countsAsFailure(inTask) == false, "\(error)")
            #expect(Rulebook.stopReason(for: inTask, idempotency: .notIdempotent) == .notIdempotent)
        }
        let nested = TimeoutError(timeoutName: "inner", timeout: .seconds(1), operationError: cut)
        for late in [cut, nested] as [any Error] {
            for limit in LateOperationErrorMeaningTests.limits(keeping: late) {
                for error in [limit] + BridgedLibraryErrorTests.BridgedShape.allCases.map({ $0.shape(limit) }) {
                    let analysis = FailureAnalysis(error)
                    #expect(analysis.interruption == .timeLimit, "still a time-out")
                    #expect(analysis.delivery == .mayHaveBeenSent, "\(error)")
                    #expect(analysis.endedWaitingAtAGate, "\(error)")
                    #expect(Rulebook.countsAsFailure(analysis) == false, "\(error)")
                    #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == .notIdempotent)
                }
            }
        }
        // In the task the time limit cancelled, a wait cut short beside anything that says the
        // request may have left is a time-out like any other.
        let mixed = NSError(
            domain: "App", code: 1,
            userInfo: ["NSMultipleUnderlyingErrorsKey": [cut, URLError(.networkConnectionLost)] as [any Error]])
        let analysis = FailureAnalysis(mixed, isCancelled: true, timeLimitFired: true)
        #expect(!analysis.endedWaitingAtAGate)
        #expect(Rulebook.countsAsFailure(analysis) == true)
    }

    // MARK: - The same count whatever the nesting

    /// A time limit that ends a call while a policy inside it waits for the network, after an
    /// attempt that never left the offline device, ended a call that never reached the
    /// dependency: the breaker does not count it, whether it sits outside the time limit (it
    /// reads the time-out) or inside it (it reads the policy's offline failure in the task the
    /// limit cancelled).
    @Test(arguments: BreakerPlacement.allCases)
    func anOfflineWaitCutShortByATimeLimitIsNotCountedWhereverTheBreakerSits(placement: BreakerPlacement)
        async throws
    {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(10), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let call = Task {
            try await Self.run(placement, breaker: breaker, timeout: timeout) {
                try await policy.execute(waitingFor: wait) { () throws -> Int in
                    throw URLError(.notConnectedToInternet)
                }
            }
        }
        await network.waitForObservers(count: 1)  // the attempt failed offline; the policy waits
        await clock.waitForSleepers(count: 2)  // the time limit and the wait's own limit
        clock.advance(by: .seconds(10))
        let error = await #expect(throws: (any Error).self) { try await call.value }
        let analysis = FailureAnalysis(try #require(error))
        #expect(analysis.delivery == .notSent, "\(String(describing: error))")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        #expect(breaker.state == .closed)
    }

    /// The same time-out after an attempt that did send a request and lost the connection
    /// before the next one found the network down: the time-limited attempt may have reached
    /// the dependency, so the time-out reads as maybe sent and the breaker counts it, wherever
    /// it sits. The policy says so to the time limits around it when the attempt fails.
    @Test(arguments: BreakerPlacement.allCases)
    func anOfflineTimeOutAfterARequestLeftInTheSameAttemptIsCounted(placement: BreakerPlacement) async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(10), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let attempts = Counter()
        let call = Task {
            try await Self.run(placement, breaker: breaker, timeout: timeout) {
                try await policy.execute(waitingFor: wait) { () throws -> Int in
                    attempts.increment()
                    // The first request leaves and loses its connection; then the network is down.
                    throw attempts.value == 1 ? URLError(.networkConnectionLost) : URLError(.notConnectedToInternet)
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the time limit and the backoff after the lost connection
        clock.advance(by: .seconds(1))
        await network.waitForObservers(count: 1)  // the second attempt failed offline; the policy waits
        await clock.waitForSleepers(count: 2)  // the time limit and the wait's own limit
        clock.advance(by: .seconds(9))
        let error = await #expect(throws: (any Error).self) { try await call.value }
        #expect(attempts.value == 2)
        if placement == .outsideTheTimeLimit {
            let limit = try #require(error as? TimeoutError)
            #expect((limit.operationError as? URLError)?.code == .notConnectedToInternet)
            #expect(FailureAnalysis(limit).delivery == .mayHaveBeenSent)
            #expect(Rulebook.stopReason(for: FailureAnalysis(limit), idempotency: .notIdempotent) == .notIdempotent)
        }
        #expect(breaker.state == .open)
    }

    /// A bulkhead's own queue timeout that ends a wait before a policy inside a time limit could
    /// try again is a local rejection, kept as the time limit's late error (or met in the task the
    /// limit cancelled): the request never left, so the breaker does not count it, wherever it sits.
    @Test(arguments: BreakerPlacement.allCases)
    func aQueueTimeoutKeptByATimeLimitIsNotCounted(placement: BreakerPlacement) async throws {
        let clock = TestClock()
        let events = EventCounter()
        let gate = Gate()
        let bulkhead = try ConcurrencyLimiter(
            name: "bulkhead", limit: 1, queueLimit: 1, queueTimeout: .seconds(1), observer: events, clock: clock)
        let holder = Task { try await bulkhead.execute { await gate.wait() } }
        await gate.waitForWaiters(count: 1)  // the one slot is taken
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let timeout = try Timeout(.seconds(3), clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(5)), jitter: .none, clock: clock)
        let call = Task {
            try await Self.run(placement, breaker: breaker, timeout: timeout) {
                try await policy.execute { try await bulkhead.execute { 1 } }
            }
        }
        await events.waitFor(.queued, count: 1)
        await clock.waitForSleepers(count: 2)  // the time limit and the queue timeout
        clock.advance(by: .seconds(1))  // the queue timeout: the policy backs off
        await clock.waitForSleepers(count: 2)  // the time limit and the backoff
        clock.advance(by: .seconds(2))  // the time limit ends the wait
        let error = await #expect(throws: (any Error).self) { try await call.value }
        let late = (error as? TimeoutError)?.operationError as? LimiterRejectionError
        #expect(late?.reason == .queueTimedOut, "\(String(describing: error))")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        #expect(breaker.state == .closed)
        gate.open()
        try await holder.value
    }

    /// The analysis behind it: a limiter's refusal that a time limit keeps as its late error, or
    /// that ends the task the limit cancelled, is a time-out that ended in front of the
    /// dependency, as a wait cut short is; it still reads as maybe sent.
    @Test func aLocalRejectionUnderATimeLimitIsNotCounted() {
        let rejections: [any Error] = [
            LimiterRejectionError(limiterName: "bulkhead", reason: .queueTimedOut, queued: 0),
            LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull, queued: 1),
            LimiterRejectionError(limiterName: "rate", reason: .noPermit, retryAfter: .seconds(1)),
            AdaptiveThrottleRejection(rejectionProbability: 0.5),
        ]
        for rejection in rejections {
            let inTask = FailureAnalysis(rejection, isCancelled: true, timeLimitFired: true)
            #expect(inTask.interruption == .timeLimit)
            #expect(inTask.endedWaitingAtAGate, "\(rejection)")
            #expect(Rulebook.countsAsFailure(inTask) == false, "\(rejection)")
            for limit in LateOperationErrorMeaningTests.limits(keeping: rejection) {
                for error in [limit] + BridgedLibraryErrorTests.BridgedShape.allCases.map({ $0.shape(limit) }) {
                    let analysis = FailureAnalysis(error)
                    #expect(analysis.delivery == .mayHaveBeenSent, "\(error)")
                    #expect(!analysis.isLocalRejection, "\(error)")
                    #expect(Rulebook.countsAsFailure(analysis) == false, "\(error)")
                    #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == .notIdempotent)
                }
            }
        }
        // An inner breaker's refusal still speaks for the dependency: the time-out counts.
        let open = CircuitBreakerOpenError(breakerName: "inner", state: .open, retryAfter: .seconds(1))
        for limit in LateOperationErrorMeaningTests.limits(keeping: open) {
            #expect(Rulebook.countsAsFailure(FailureAnalysis(limit)) == true)
        }
    }

    /// The analysis behind the count after a request left: a time limit that saw a request of its
    /// attempt leave keeps that fact in its error (the Swift value and the `NSError` forms), and a
    /// late failure that never left, offline or at a gate, then proves nothing for the attempt.
    /// In the task the limit cancelled, the limit's record says the same.
    @Test func aTryThatNeverLeftDoesNotSpeakForAnAttemptWhoseEarlierRequestMayHaveLeft() {
        let lates: [any Error] = [
            URLError(.notConnectedToInternet),
            LimiterRejectionError(limiterName: "bulkhead", reason: .waitCutShort, queued: 0),
            LimiterRejectionError(limiterName: "bulkhead", reason: .queueTimedOut, queued: 0),
        ]
        for late in lates {
            let limits: [any Error] = [
                AttemptTimeoutError(
                    timeout: .seconds(5), requestIdempotency: nil, operationError: late, operationErrorAge: nil,
                    earlierRequestMayHaveLeft: true),
                TimeoutError(
                    timeoutName: "t", timeout: .seconds(5), requestIdempotency: nil, operationError: late,
                    operationErrorAge: nil, earlierRequestMayHaveLeft: true),
            ]
            let nested = limits.map { TimeoutError(timeoutName: "outer", timeout: .seconds(9), operationError: $0) }
            for limit in limits + nested {
                for error in [limit] + BridgedLibraryErrorTests.BridgedShape.allCases.map({ $0.shape(limit) }) {
                    let analysis = FailureAnalysis(error)
                    #expect(analysis.delivery == .mayHaveBeenSent, "\(error)")
                    #expect(!analysis.endedWaitingAtAGate, "\(error)")
                    #expect(Rulebook.countsAsFailure(analysis) == true, "\(error)")
                    #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == .notIdempotent)
                }
            }
            let inTask = FailureAnalysis(late, isCancelled: true, timeLimitFired: true, requestLeftEarlier: true)
            #expect(inTask.delivery == .mayHaveBeenSent, "\(late)")
            #expect(Rulebook.countsAsFailure(inTask) == true, "\(late)")
            let alone = FailureAnalysis(late, isCancelled: true, timeLimitFired: true)
            #expect(Rulebook.countsAsFailure(alone) == false, "\(late)")
        }
    }

    /// A rate limiter knows when the permit a caller waited for frees: a time limit that cuts the
    /// wait short gets that time as the rejection's hint, the time-out reads it, and a policy
    /// around the limit waits for the permit rather than its shorter backoff.
    @Test func aWaitForAPermitCutShortSaysWhenThePermitFrees() async throws {
        let clock = TestClock()
        let limiter = try await WaitingLimiter.make(.rateLimiter, clock: clock)
        let timeout = try Timeout(.seconds(2), clock: clock)
        let call = Task { try await timeout.execute { try await limiter.call { 1 } } }
        await limiter.waitForWaiting(sleepers: 1, clock: clock)
        clock.advance(by: .seconds(2))
        let error = await #expect(throws: TimeoutError.self) { try await call.value }
        let late = try #require(error?.operationError as? LimiterRejectionError)
        #expect(late.reason == .waitCutShort)
        #expect(late.retryAfter == .seconds(3))
        #expect(FailureAnalysis(try #require(error)).retryAfter == .seconds(3))
    }

    @Test func aPolicyWaitsForThePermitAWaitCutShortWasFor() async throws {
        let clock = TestClock()
        let limiter = try await WaitingLimiter.make(.rateLimiter, clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.milliseconds(100)), jitter: .none, clock: clock)
        let call = Task { await policy.outcome(attemptTimeout: .seconds(2)) { try await limiter.call { 1 } } }
        await clock.waitForSleepers(count: 2)  // the attempt's time limit and the wait for the refill
        clock.advance(by: .seconds(2))
        await clock.waitForSleepRequests(count: 3)
        #expect(try clock.sleepRequest(2) == .seconds(3), "the policy waits for the permit: \(clock.sleepRequests)")
        clock.advance(by: .seconds(3))  // the permit frees
        let outcome = await call.value
        #expect(try outcome.get() == 1)
        #expect(outcome.attempts == 2)
    }

    /// A CloudKit partial failure whose items say the service is busy or unavailable (with their
    /// `CKRetryAfter`) is heard as the same error on the whole request is: it counts, and a breaker
    /// that honours any hint opens for the longest of them.
    @Test(arguments: [CloudKitErrorCode.zoneBusy, .serviceUnavailable, .requestRateLimited])
    func aPartialFailureWhoseItemsSayTheServiceIsBusyIsHeard(code: CloudKitErrorCode) async throws {
        let partial = Self.cloudKit(
            .partialFailure,
            userInfo: [
                CloudKitErrorCode.partialErrorsKey: [
                    "a": Self.cloudKit(.serverRecordChanged), "b": Self.cloudKit(code, userInfo: ["CKRetryAfter": 20]),
                ]
            ])
        let whole = Self.cloudKit(code, userInfo: ["CKRetryAfter": 20])
        for error in [partial, whole] {
            #expect(DefaultCircuitBreakerFailureClassifier().countsAsFailure(error), "\(error)")
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "cloudkit", tripRule: .consecutiveFailures(5), pushback: .anyRetryAfter(), clock: clock)
            await #expect(throws: NSError.self) { try await breaker.execute { () throws -> Int in throw error } }
            #expect(breaker.state == .open, "\(error)")
            #expect(breaker.snapshot().remainingOpenTime == .seconds(20))
            let counting = try CircuitBreaker(name: "cloudkit", tripRule: .consecutiveFailures(5), clock: clock)
            await #expect(throws: NSError.self) { try await counting.execute { () throws -> Int in throw error } }
            #expect(counting.snapshot().consecutiveFailures == 1, "counted under the default pushback too")
            #expect(counting.state == .closed, "no 429: the default pushback does not open it")
        }
    }

    // MARK: - Refusals and partial failures

    static func cloudKit(_ code: CloudKitErrorCode, userInfo: [String: Any] = [:]) -> NSError {
        NSError(domain: CloudKitErrorCode.domain, code: code.rawValue, userInfo: userInfo)
    }

    /// What the dependency refused before acting on it, for a reason of the app's own (its
    /// credential, its setup, another item of its atomic batch), and a CloudKit partial
    /// failure, which CloudKit answered, say nothing of the service's health.
    @Test func refusalsAndPartialFailuresDoNotCount() {
        let partial = Self.cloudKit(
            .partialFailure,
            userInfo: [
                CloudKitErrorCode.partialErrorsKey: [
                    "a": Self.cloudKit(.serverRecordChanged), "b": Self.cloudKit(.zoneNotFound),
                    "c": Self.cloudKit(.batchRequestFailed),
                ]
            ])
        let notCounted: [(String, any Error)] = [
            ("userDeletedZone", Self.cloudKit(.userDeletedZone)),
            ("zoneNotFound", Self.cloudKit(.zoneNotFound)),
            ("batchRequestFailed", Self.cloudKit(.batchRequestFailed)),
            ("partialFailure", partial),
            ("notAuthenticated", Self.cloudKit(.notAuthenticated)),
            ("401", HTTPResponseError(statusCode: 401)),
            ("407", HTTPResponseError(statusCode: 407)),
            ("userAuthenticationRequired", URLError(.userAuthenticationRequired)),
            ("userCancelledAuthentication", URLError(.userCancelledAuthentication)),
            ("failed refresh: invalid_grant", RESTServiceError(serverErrorCode: "invalid_grant")),
            ("failed refresh: 400 invalid_grant", RESTServiceError(httpStatus: 400, serverErrorCode: "invalid_grant")),
            (
                "wrapped zoneNotFound",
                NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: Self.cloudKit(.zoneNotFound)])
            ),
        ]
        for (name, error) in notCounted {
            #expect(!DefaultCircuitBreakerFailureClassifier().countsAsFailure(error), "\(name)")
        }
        let counted: [(String, any Error)] = [
            ("serviceUnavailable", Self.cloudKit(.serviceUnavailable)),
            ("zoneBusy", Self.cloudKit(.zoneBusy)),
            ("networkFailure", Self.cloudKit(.networkFailure)),
            ("503", HTTPResponseError(statusCode: 503)),
            (
                "a 429 among a partial failure's items",
                Self.cloudKit(
                    .partialFailure,
                    userInfo: [
                        CloudKitErrorCode.partialErrorsKey: [
                            "a": Self.cloudKit(.zoneNotFound), "b": HTTPResponseError(statusCode: 429),
                        ]
                    ])
            ),
            (
                "zoneNotFound beside a lost connection",
                NSError(
                    domain: "App", code: 1,
                    userInfo: [
                        "NSMultipleUnderlyingErrorsKey": [
                            Self.cloudKit(.zoneNotFound), URLError(.networkConnectionLost),
                        ] as [any Error]
                    ])
            ),
        ]
        for (name, error) in counted {
            #expect(DefaultCircuitBreakerFailureClassifier().countsAsFailure(error), "\(name)")
        }
    }

    /// A breaker around CloudKit calls that find their zone gone stays closed, and lets the
    /// call that follows the app's setup through.
    @Test func aMissingZoneDoesNotOpenTheBreaker() async throws {
        let breaker = try CircuitBreaker(name: "cloudkit", tripRule: .consecutiveFailures(1), clock: TestClock())
        for code in [CloudKitErrorCode.zoneNotFound, .userDeletedZone, .batchRequestFailed] {
            await #expect(throws: NSError.self) {
                try await breaker.execute { () throws -> Int in throw Self.cloudKit(code) }
            }
        }
        #expect(breaker.state == .closed)
        #expect(breaker.snapshot().recentFailures == 0)
        #expect(try await breaker.execute { 1 } == 1)
    }
}
