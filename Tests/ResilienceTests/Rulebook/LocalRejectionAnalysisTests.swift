import Foundation
import Testing

@testable import Resilience

/// What ``FailureAnalysis/isLocalRejection`` reads, and how ``Rulebook/countsAsFailure(_:)``
/// orders it among the other rules on counting.
@Suite struct LocalRejectionAnalysisTests {
    static let bulkhead = LimiterRejectionError(limiterName: "bulkhead", reason: .queueFull, queued: 0)
    static let rate = LimiterRejectionError(limiterName: "rate", reason: .noPermit, retryAfter: .seconds(2))
    static let throttled = AdaptiveThrottleRejection(rejectionProbability: 0.9)

    @Test(arguments: [bulkhead, rate] as [any Error] + [throttled])
    func aLimitersRejectionIsLocalInEveryShape(rejection: any Error) {
        for shape in LocalRejectionShape.all {
            let analysis = FailureAnalysis(shape.wrap(rejection))
            #expect(analysis.isLocalRejection, "\(shape)")
            #expect(Rulebook.countsAsFailure(analysis) == false, "\(shape)")
        }
    }

    @Test func aRejectionBesideAFailureThatMayHaveLeftIsNotLocal() {
        // One item of a batch was refused locally; another may have reached the server.
        let batch = SilentAppError.server(
            code: 1,
            cause: NSError(
                domain: "Batch", code: 2,
                userInfo: [ErrorChain.multipleUnderlyingErrorsKey: [Self.bulkhead, URLError(.timedOut)]]))
        let analysis = FailureAnalysis(batch)
        #expect(analysis.delivery == .mayHaveBeenSent)
        #expect(!analysis.isLocalRejection)
        #expect(Rulebook.countsAsFailure(analysis) == nil, "the classifier decides")
    }

    @Test func anInnerBreakersRejectionIsNotALimitersEvenBesideOne() {
        let open = CircuitBreakerOpenError(breakerName: "inner", state: .open, retryAfter: .seconds(5))
        #expect(!FailureAnalysis(open).isLocalRejection)
        #expect(Rulebook.countsAsFailure(FailureAnalysis(open)) == nil)
        #expect(DefaultCircuitBreakerFailureClassifier().countsAsFailure(open), "it says the dependency is failing")
        let both = SilentAppError.server(
            code: 1,
            cause: NSError(
                domain: "Batch", code: 2, userInfo: [ErrorChain.multipleUnderlyingErrorsKey: [Self.rate, open]]))
        #expect(!FailureAnalysis(both).isLocalRejection)
    }

    @Test func theRulesOnCountingPutCancellationAndTimeLimitsBeforeALocalRejection() {
        let cancelled = FailureAnalysis(Self.bulkhead, isCancelled: true, timeLimitFired: false)
        #expect(Rulebook.countsAsFailure(cancelled) == false)
        // The time limit's end, which may follow a request sent before the gate; but the
        // operation ended at the bulkhead, in front of the dependency: no breaker counts it.
        let timedOut = FailureAnalysis(Self.bulkhead, isCancelled: true, timeLimitFired: true)
        #expect(!timedOut.isLocalRejection, "a time limit says the request may have left")
        #expect(timedOut.delivery == .mayHaveBeenSent)
        #expect(Rulebook.countsAsFailure(timedOut) == false)
        #expect(Rulebook.countsAsFailure(FailureAnalysis(ServiceFailure())) == nil)
    }

    @Test func theDefaultClassifierAnswersADirectQuestionAboutALimitersRejectionAlike() {
        #expect(!DefaultCircuitBreakerFailureClassifier().countsAsFailure(Self.bulkhead))
        #expect(!DefaultCircuitBreakerFailureClassifier().countsAsFailure(Self.throttled))
    }
}
