import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// What a hedged call records and spends: the latency the percentile delay learns from,
/// the budget's tokens, and where a pipeline's Hedging stage starts its attempts.
@Suite("Hedging: latencies, budget and isolation", .timeLimit(.minutes(5)))
struct HedgingAccountingTests {
    // MARK: - The latency the percentile learns from

    @Test func aClockThatGoesBackDuringCallsLeavesThePercentileDelayWhereItWas() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(100))
        let hedging = try Hedging(delay: .percentile(50, ofLast: 10, initial: .seconds(1)), clock: clock)
        for _ in 0..<10 {
            _ = try await hedging.execute { () async throws -> Int in
                clock.rewind(by: .seconds(2))  // a clock re-based during the call, say
                return 1
            }
        }
        // Ten negative readings, left out: the delay is still the initial one, not -2 s
        // (which would hedge every call at once) nor zero (which would too).
        #expect(hedging.currentDelay == .seconds(1))
    }

    @Test func thePercentileLeavesOutANegativeLatency() throws {
        var machine = HedgingStateMachine(try .percentile(50, ofLast: 10, initial: .seconds(1)))
        for _ in 0..<9 { machine.record(.milliseconds(200)) }
        machine.record(.seconds(-5))
        #expect(machine.currentDelay == .seconds(1), "nine samples: no percentile yet")
        machine.record(.milliseconds(200))
        #expect(machine.currentDelay == .milliseconds(200))
    }

    /// A call a hedge won took, from its start, the hedge delay and then the hedge's own time:
    /// that is what the percentile learns, not the hedge's own (shorter) time, which would
    /// pull the delay down with every hedged call and hedge more and more calls.
    @Test func aWinningHedgeRecordsTheTimeFromTheCallsStart() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .percentile(50, ofLast: 10, initial: .seconds(1)), clock: clock)
        for _ in 0..<10 {
            let call = startCallWonByItsHedge(hedging, clock: clock, hedgeTakes: .milliseconds(100))
            await clock.waitForSleepers(count: 2)  // the first attempt, and the hedge's timer
            clock.advance(by: .seconds(1))
            #expect(try await call.value == "hedge")
        }
        #expect(hedging.currentDelay == .milliseconds(1_100))
    }

    // MARK: - The budget

    @Test func aSuccessGivesBackToTheBudgetOncePerCall() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 1)
        for _ in 0..<3 { budget.recordFailure() }
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, budget: budget, clock: clock)
        _ = try await hedging.execute { 1 }  // won by the first attempt, before it suspended
        #expect(budget.tokens == 8)
        let call = startCallWonByItsHedge(hedging, clock: clock)
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        #expect(try await call.value == "hedge")
        // The hedge took a token, and the call's one success gave one back.
        #expect(budget.tokens == 8)
    }

    /// A budget only hedging uses: without a refund for each success it drains, one token
    /// per hedge, and hedging is off for good although every call succeeded.
    @Test func hedgedSuccessesKeepABudgetOnlyHedgingUsesOpen() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 2, tokenRatio: 1)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), budget: budget, clock: clock)
        for _ in 0..<3 {
            let call = startCallWonByItsHedge(hedging, clock: clock)
            await clock.waitForSleepers(count: 2)
            clock.advance(by: .seconds(1))
            #expect(try await call.value == "hedge")
            #expect(budget.tokens == 2)
            // Without the refund the next call would start no hedge, and wait out its first attempt.
            try #require(budget.allowsRetry, "hedging is off for good although every call succeeded")
        }
    }

    @Test(arguments: [
        LocallyRefused.limiter, LocallyRefused.breaker, LocallyRefused.offlineNotSent,
    ])
    func replacingAnAttemptRefusedBeforeItRanCostsNoTokenButCountsAsAHedge(_ refusal: LocallyRefused) async throws {
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 3, budget: budget, clock: TestClock())
        let attempts = Counter()
        await #expect(throws: (any Error).self) {
            try await hedging.execute { () async throws -> Int in
                attempts.increment()
                throw refusal.error
            }
        }
        #expect(attempts.value == 4, "the first attempt and three replacements, started at once")
        #expect(budget.tokens == 10)
    }

    @Test func aSpentBudgetStillStopsTheReplacementOfALocalRejection() async throws {
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        for _ in 0..<5 { budget.recordFailure() }
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 3, budget: budget, clock: TestClock())
        let attempts = Counter()
        await #expect(throws: LimiterRejectionError.self) {
            try await hedging.execute { () async throws -> Int in
                attempts.increment()
                throw LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull, queued: 0)
            }
        }
        #expect(attempts.value == 1, "a RetryPolicy with this budget does not retry it either")
        #expect(budget.tokens == 5)
    }

    /// A 429 the call ends on costs a token, as it costs a ``RetryPolicy`` that stops on it:
    /// server pushback drains the budget that other calls to the same service retry from.
    @Test func a429TheCallEndsOnCostsATokenAsItDoesARetryPolicy() async throws {
        let hedgingBudget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let policyBudget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: 2, budget: hedgingBudget, clock: TestClock())
        let policy = try RetryPolicy(maximumAttempts: 3, budget: policyBudget, clock: TestClock())
        let attempts = Counter()
        await #expect(throws: HTTPResponseError.self) {
            try await hedging.execute { () async throws -> Int in
                attempts.increment()
                throw HTTPResponseError(statusCode: 429)
            }
        }
        await #expect(throws: HTTPResponseError.self) {
            try await policy.execute { () async throws -> Int in throw HTTPResponseError(statusCode: 429) }
        }
        #expect(attempts.value == 1)
        #expect(policyBudget.tokens == 9, "a policy's 429 costs a token")
        #expect(hedgingBudget.tokens == policyBudget.tokens, "hedging: \(hedgingBudget.tokens) tokens left")
    }

    /// A hedge answered 429 while the first attempt runs: the hedge costs a token, and the 429
    /// one more, as a policy's retry answered 429 does.
    @Test func aHedgeAnswered429CostsItsTokenAndOneMore() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, budget: budget, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                if attempts.increment() == 1 {
                    try await clock.sleep(for: .seconds(60))
                    return 1
                }
                throw HTTPResponseError(statusCode: 429)
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt, and the hedge's timer
        clock.advance(by: .seconds(1))
        let result = await call.result
        #expect(result.failureValue is HTTPResponseError, "\(result)")
        #expect(attempts.value == 2)
        #expect(budget.tokens == 8)
    }

    @Test func aLimitersRetryAfterHoldsTheReplacementBackAndItCostsNoToken() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, budget: budget, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                if attempts.increment() == 1 {
                    throw LimiterRejectionError(
                        limiterName: "rate", reason: .noPermit, queued: 0, retryAfter: .milliseconds(500))
                }
                return 2
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(attempts.value == 1)
        clock.advance(by: .milliseconds(500))
        #expect(try await call.value == 2)
        #expect(budget.tokens == 10)
    }

    // MARK: - The pipeline stage

    @Test @MainActor func aPipelinesHedgingStageStartsItsAttemptsOnTheCallersActor() async throws {
        let seen = Recorder<Bool>()
        let pipeline = ResiliencePipeline {
            try! Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
            IsolationProbe(seen: seen)
        }
        #expect(try await pipeline.execute { 1 } == 1)
        #expect(seen.values == [true], "the stage inside Hedging ran off the main actor")
    }
}

/// A failure the library's own gates produce before a request leaves.
enum LocallyRefused: Sendable, CustomTestStringConvertible {
    case limiter, breaker, offlineNotSent

    var error: any Error {
        switch self {
        case .limiter: LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull, queued: 0)
        case .breaker: CircuitBreakerOpenError(breakerName: "api", state: .open, retryAfter: nil)
        case .offlineNotSent: URLError(.notConnectedToInternet)
        }
    }

    var testDescription: String {
        switch self {
        case .limiter: "a full bulkhead"
        case .breaker: "an open breaker"
        case .offlineNotSent: "an offline device"
        }
    }
}

/// A pipeline stage that records whether it runs on the main actor.
private struct IsolationProbe: ResilienceStrategy {
    let seen: Recorder<Bool>

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        self.seen.record(#isolation === MainActor.shared)
        return try await operation.run()
    }
}
