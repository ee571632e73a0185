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
@Suite("What a breaker counts: waits cut short, refusals, partial failures", .timeLimit(.minutes(1)))
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
