import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// One of the library's own limiters, made full, so that every call through it is refused
/// without running: a bulkhead whose one slot a parked call holds, or a rate limiter whose
/// one token is spent on a clock that does not move until the test moves it.
struct FullLimiter: Sendable {
    /// Which limiter.
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
    /// The bulkhead's gate, which the call holding its slot waits on.
    let gate: Gate?
    /// The call holding the bulkhead's slot.
    let holder: Task<Void, any Error>?

    /// A limiter of `kind`, full by the time this returns.
    static func make(_ kind: Kind, clock: TestClock) async throws -> FullLimiter {
        switch kind {
        case .bulkhead:
            let limiter = try ConcurrencyLimiter(name: "bulkhead", limit: 1, clock: clock)
            let gate = Gate()
            let holder = Task { try await limiter.execute { await gate.wait() } }
            await gate.waitForWaiters(count: 1)  // the one slot is taken
            return FullLimiter(kind: kind, bulkhead: limiter, rateLimiter: nil, gate: gate, holder: holder)
        case .rateLimiter:
            let limiter = try RateLimiter(
                .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: Self.refill), name: "rate", clock: clock)
            _ = try await limiter.execute { 0 }  // the one token is spent
            return FullLimiter(kind: kind, bulkhead: nil, rateLimiter: limiter, gate: nil, holder: nil)
        }
    }

    /// Calls `operation` through the limiter.
    nonisolated(nonsending) func call<Value>(_ operation: () async throws -> Value) async throws -> Value {
        switch self.kind {
        case .bulkhead: try await self.bulkhead!.execute(operation: operation)
        case .rateLimiter: try await self.rateLimiter!.execute(operation: operation)
        }
    }

    /// Calls `operation` through a pipeline of `breaker`, then a stage of the user's that
    /// wraps what it sees in `shape`, then the limiter: the breaker outside the limiter.
    func callThroughPipeline<Value: Sendable>(
        breaker: CircuitBreaker, shape: LocalRejectionShape,
        _ operation: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        switch self.kind {
        case .bulkhead:
            let pipeline = ResiliencePipeline {
                breaker
                WrappingStage(shape: shape)
                self.bulkhead!
            }
            return try await pipeline.execute(operation: operation)
        case .rateLimiter:
            let pipeline = ResiliencePipeline {
                breaker
                WrappingStage(shape: shape)
                self.rateLimiter!
            }
            return try await pipeline.execute(operation: operation)
        }
    }

    /// Lets the parked call finish, for a bulkhead.
    func release() async throws {
        self.gate?.open()
        try await self.holder?.value
    }
}

/// How a limiter's rejection reaches a breaker: as it is, or wrapped one level the ways real
/// code wraps errors (an `NSError`'s `NSUnderlyingErrorKey`, an app's enum with the error as
/// its payload, the library's own ``RESTServiceError`` and ``SQLiteRollbackError``, ...).
enum LocalRejectionShape: Sendable, CustomStringConvertible {
    case direct
    case wrapped(ErrorShape)

    static let all: [LocalRejectionShape] = [.direct] + ErrorShape.allCases.map { .wrapped($0) }

    func wrap(_ error: any Error) -> any Error {
        switch self {
        case .direct: error
        case .wrapped(let shape): shape.wrap(error)
        }
    }

    var description: String {
        switch self {
        case .direct: "direct"
        case .wrapped(let shape): "\(shape)"
        }
    }
}

/// A pipeline stage of a user's own that wraps whatever the stages inside it throw.
struct WrappingStage: ResilienceStrategy {
    let shape: LocalRejectionShape

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        do {
            return try await operation.run()
        } catch {
            throw self.shape.wrap(error)
        }
    }
}

/// A call that one of the library's own limiters refused never reached the dependency, so
/// a breaker never counts it: not in any error shape, not at any entry point where a
/// breaker meets a limiter, whatever the breaker's classifier says.
@Suite("A breaker never counts a call the library's own limiter refused")
struct LocalRejectionSeamTests {
    /// How many rejections pass through the breaker: more than its trip rule allows failures.
    static let rejections = 6

    /// A breaker that opens after three consecutive failures, for ten seconds.
    static func breaker(
        clock: TestClock, classifier: any CircuitBreakerFailureClassifier = DefaultCircuitBreakerFailureClassifier()
    ) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "dependency", tripRule: .consecutiveFailures(3), openDuration: .fixed(.seconds(10)),
            classifier: classifier, clock: clock)
    }

    /// Whether `error` is a limiter's rejection in `shape`: the rejection itself, or a wrapper
    /// with the rejection below it.
    static func isTheRejection(_ error: any Error, shape: LocalRejectionShape) -> Bool {
        let below = ErrorChain.first(in: error) { $0 as? LimiterRejectionError } != nil
        guard case .direct = shape else { return below && !(error is LimiterRejectionError) }
        return error is LimiterRejectionError
    }

    @Test(
        "Rejections through a closure a breaker runs leave it closed",
        arguments: FullLimiter.Kind.allCases, LocalRejectionShape.all)
    func rejectionsInsideExecuteLeaveTheBreakerClosed(kind: FullLimiter.Kind, shape: LocalRejectionShape)
        async throws
    {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let breaker = try Self.breaker(clock: clock)
        let runs = Counter()
        for call in 1...Self.rejections {
            do {
                _ = try await breaker.execute {
                    do {
                        return try await limiter.call { runs.increment() }
                    } catch {
                        throw shape.wrap(error)
                    }
                }
                Issue.record("call \(call) went through a full \(kind)")
            } catch {
                #expect(Self.isTheRejection(error, shape: shape), "call \(call): \(error)")
            }
        }
        #expect(runs.value == 0, "the limiter refused every call")
        #expect(breaker.state == .closed, "\(kind), \(shape)")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        #expect(try await breaker.execute { 7 } == 7, "a healthy dependency is still called")
        try await limiter.release()
    }

    @Test(
        "Rejections from a limiter inside a pipeline's breaker leave it closed",
        arguments: FullLimiter.Kind.allCases, LocalRejectionShape.all)
    func rejectionsInsideAPipelinesBreakerLeaveItClosed(kind: FullLimiter.Kind, shape: LocalRejectionShape)
        async throws
    {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let breaker = try Self.breaker(clock: clock)
        let runs = Counter()
        for call in 1...Self.rejections {
            do {
                _ = try await limiter.callThroughPipeline(breaker: breaker, shape: shape) { runs.increment() }
                Issue.record("call \(call) went through a full \(kind)")
            } catch {
                #expect(Self.isTheRejection(error, shape: shape), "call \(call): \(error)")
            }
        }
        #expect(runs.value == 0, "the limiter refused every call")
        #expect(breaker.state == .closed, "\(kind), \(shape)")
        #expect(breaker.snapshot().consecutiveFailures == 0)
        try await limiter.release()
    }

    @Test(
        "A classifier that counts everything still does not count a limiter's rejection",
        arguments: FullLimiter.Kind.allCases)
    func aClassifierThatCountsEverythingStillDoesNotCountTheRejection(kind: FullLimiter.Kind) async throws {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let breaker = try Self.breaker(clock: clock, classifier: .closure { _ in true })
        for _ in 1...Self.rejections {
            _ = try? await breaker.execute { try await limiter.call { 1 } }
        }
        #expect(breaker.state == .closed)
        await breaker.fail()
        await breaker.fail()
        await breaker.fail()
        #expect(breaker.state == .open, "the classifier still counts the dependency's own failures")
        try await limiter.release()
    }

    @Test(
        "A half-open probe a limiter refused frees its slot for the next probe",
        arguments: FullLimiter.Kind.allCases,
        [LocalRejectionShape.direct, .wrapped(.nsUnderlying), .wrapped(.silentEnum)])
    func aProbeALimiterRefusedFreesItsSlot(kind: FullLimiter.Kind, shape: LocalRejectionShape) async throws {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let breaker = try CircuitBreaker(
            name: "dependency", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(1)),
            maximumProbes: 1, clock: clock)
        await breaker.fail()
        #expect(breaker.state == .open)
        clock.advance(by: .seconds(1))  // the rate limiter's token is still five seconds away
        do {
            _ = try await breaker.execute {
                do {
                    return try await limiter.call { 1 }
                } catch {
                    throw shape.wrap(error)
                }
            }
            Issue.record("the probe went through a full \(kind)")
        } catch {
            #expect(Self.isTheRejection(error, shape: shape), "\(error)")
        }
        let snapshot = breaker.snapshot()
        #expect(snapshot.state == .halfOpen, "the refused probe neither failed nor succeeded")
        #expect(snapshot.probesInFlight == 0, "its slot is free")
        #expect(try await breaker.execute { 2 } == 2, "the next probe is admitted")
        #expect(breaker.state == .closed)
        try await limiter.release()
    }

    @Test("A limiter's rejection through nested breakers leaves both closed", arguments: FullLimiter.Kind.allCases)
    func aRejectionThroughNestedBreakersLeavesBothClosed(kind: FullLimiter.Kind) async throws {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let outer = try Self.breaker(clock: clock)
        let inner = try Self.breaker(clock: clock)
        for _ in 1...Self.rejections {
            await #expect(throws: LimiterRejectionError.self) {
                try await outer.execute { try await inner.execute { try await limiter.call { 1 } } }
            }
        }
        #expect(inner.state == .closed)
        #expect(outer.state == .closed)
        try await limiter.release()
    }

    /// The decision the rule leaves alone: an inner breaker refuses because the dependency
    /// behind it is known to be failing, so the default classifier of the outer one counts it.
    @Test func anInnerBreakersRejectionStillCountsInTheOuterBreaker() async throws {
        let clock = TestClock()
        let outer = try Self.breaker(clock: clock)
        let inner = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: clock)
        await inner.fail()
        #expect(inner.state == .open)
        for _ in 1...3 {
            await #expect(throws: CircuitBreakerOpenError.self) {
                try await outer.execute { try await inner.execute { 1 } }
            }
        }
        #expect(outer.state == .open)
    }

    @Test("A breaker's own throttle does not count a limiter's rejection", arguments: FullLimiter.Kind.allCases)
    func aBreakersThrottleDoesNotCountTheRejection(kind: FullLimiter.Kind) async throws {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(kind, clock: clock)
        let throttle = try AdaptiveThrottle(clock: clock)
        let breaker = try CircuitBreaker(name: "dependency", throttle: throttle, clock: clock)
        for _ in 1...Self.rejections {
            _ = try? await breaker.execute {
                do {
                    return try await limiter.call { 1 }
                } catch {
                    throw SilentAppError.transport(error)
                }
            }
            _ = try? await limiter.callThroughPipeline(breaker: breaker, shape: .direct) { 1 }
        }
        #expect(throttle.counts.requests == 0, "no request reached the dependency")
        #expect(breaker.state == .closed)
        try await limiter.release()
    }

    /// What a retry policy does with a limiter's rejection: it retries it (the request never
    /// left), waits at least the rejection's hint (a rate limiter's time to the next permit;
    /// a bulkhead gives none, so the policy's backoff), and spends no token of its budget.
    @Test("A retry of a limiter's rejection waits for the permit and costs no budget token")
    func aRetryOfARateLimitersRejectionWaitsForThePermitAndCostsNoToken() async throws {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(.rateLimiter, clock: clock)
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock)
        let runs = Counter()
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome { try await limiter.call { runs.increment() } }
        }
        #expect(outcome.attempts == 2)
        #expect(outcome.stopReason == .succeeded)
        #expect(runs.value == 1)
        #expect(clock.sleepRequests == [FullLimiter.refill], "the policy waited for the next permit")
        #expect(budget.tokens == 10, "the rejection put no load on the dependency")
    }

    @Test("Retries of a full bulkhead's rejections wait the backoff and cost no budget token")
    func retriesOfAFullBulkheadsRejectionsCostNoToken() async throws {
        let clock = TestClock()
        let limiter = try await FullLimiter.make(.bulkhead, clock: clock)
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, budget: budget, clock: clock)
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome {
                do {
                    return try await limiter.call { 1 }
                } catch {
                    throw NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
                }
            }
        }
        #expect(outcome.attempts == 3)
        #expect(outcome.stopReason == .exhausted)
        #expect(clock.sleepRequests == [.seconds(1), .seconds(1)])
        #expect(budget.tokens == 10, "the rejections put no load on the dependency")
        try await limiter.release()
    }
}
