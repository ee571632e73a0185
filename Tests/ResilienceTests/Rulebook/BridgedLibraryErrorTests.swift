import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// The library's errors keep what a caller needs when bridged `as NSError` (a plain
/// `NSError` on Linux): a stable domain and code, the description, the retry-after hint;
/// and the failure analysis still reads the bridged error as the same kind of failure.
@Suite("The library's errors survive bridging to NSError")
struct BridgedLibraryErrorTests {
    @Test func anOpenBreakersRefusalKeepsItsDomainCodeDescriptionAndHint() {
        let error = CircuitBreakerOpenError(breakerName: "orders", state: .open, retryAfter: .milliseconds(4_500))
        let bridged = error as NSError
        #expect(bridged.domain == "Resilience.CircuitBreakerOpenError")
        #expect(bridged.domain == CircuitBreakerOpenError.errorDomain)
        #expect(bridged.code == 1)
        #expect(bridged.localizedDescription == error.description)
        #expect(bridged.localizedDescription.contains("orders"))
        #expect(bridged.userInfo["Retry-After"] as? Double == 4.5)
        #expect(error.localizedDescription == error.description)

        #expect((CircuitBreakerOpenError(breakerName: "b", state: .halfOpen, retryAfter: nil) as NSError).code == 2)
        let isolated = CircuitBreakerOpenError(breakerName: "b", state: .isolated, retryAfter: nil) as NSError
        #expect(isolated.code == 3)
        #expect(isolated.userInfo["Retry-After"] == nil, "no hint, no entry")
    }

    @Test func aLimitersRefusalKeepsItsDomainCodeDescriptionAndHint() {
        let reasons: [(LimiterRejectionError.Reason, Int)] = [(.queueFull, 1), (.queueTimedOut, 2), (.noPermit, 3)]
        for (reason, code) in reasons {
            let error = LimiterRejectionError(limiterName: "api", reason: reason, queued: 2, retryAfter: .seconds(2))
            let bridged = error as NSError
            #expect(bridged.domain == "Resilience.LimiterRejectionError")
            #expect(bridged.code == code, "\(reason)")
            #expect(bridged.localizedDescription == error.description)
            #expect(bridged.userInfo["Retry-After"] as? Double == 2)
        }
    }

    @Test func aThrottlesRefusalKeepsItsDomainCodeAndDescription() {
        let error = AdaptiveThrottleRejection(rejectionProbability: 0.75)
        let bridged = error as NSError
        #expect(bridged.domain == "Resilience.AdaptiveThrottleRejection")
        #expect(bridged.code == 1)
        #expect(bridged.localizedDescription == error.description)
    }

    @Test func timeLimitErrorsKeepTheirDomainCodeDescriptionAndIdempotency() {
        let post = Idempotency.http(method: "POST")
        let timeout = TimeoutError(timeoutName: "total", timeout: .seconds(3), requestIdempotency: post) as NSError
        #expect(timeout.domain == "Resilience.TimeoutError")
        #expect(timeout.code == 1)
        #expect(timeout.localizedDescription == "total timed out after 3.0 seconds")
        #expect(timeout.userInfo[ErrorHints.requestIdempotencyKey] as? Idempotency == post)

        let attempt = AttemptTimeoutError(timeout: .seconds(1)) as NSError
        #expect(attempt.domain == "Resilience.AttemptTimeoutError")
        #expect(attempt.code == 1)
        #expect(attempt.localizedDescription == AttemptTimeoutError(timeout: .seconds(1)).description)
    }

    // MARK: - The chain walk reads the bridged errors as the same kind of failure

    @Test(arguments: [
        LimiterRejectionError(limiterName: "api", reason: .noPermit, retryAfter: .seconds(2)) as any Error,
        AdaptiveThrottleRejection(rejectionProbability: 0.9),
    ])
    func aBridgedLocalRefusalIsStillALocalRefusal(refusal: any Error) {
        for shape in LocalRejectionShape.all {
            let analysis = FailureAnalysis(shape.wrap(refusal as NSError))
            let original = FailureAnalysis(shape.wrap(refusal))
            #expect(analysis.delivery == .notSent, "\(shape)")
            #expect(analysis.isLocalRejection, "\(shape)")
            #expect(Rulebook.countsAsFailure(analysis) == false, "\(shape)")
            #expect(analysis.retryAfter == original.retryAfter, "\(shape)")
            #expect(FallbackContext(error: refusal as NSError, analysis: analysis).isRejection)
        }
    }

    @Test func aBridgedOpenBreakerIsStillABreakersRefusalWithItsHint() {
        let open = CircuitBreakerOpenError(breakerName: "inner", state: .open, retryAfter: .seconds(5)) as NSError
        let analysis = FailureAnalysis(NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: open]))
        #expect(analysis.delivery == .notSent)
        #expect(analysis.retryAfter == .seconds(5))
        #expect(!analysis.isLocalRejection, "it speaks for the dependency, as the Swift value does")
        #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == nil, "a POST may go again")
        #expect(FallbackContext(error: open, analysis: analysis).isRejection)
    }

    @Test func aBridgedTimeLimitErrorIsStillATimeLimitsEnd() {
        let post = Idempotency.http(method: "POST")
        let sent = FailureAnalysis(AttemptTimeoutError(timeout: .seconds(1), requestIdempotency: post) as NSError)
        #expect(sent.interruption == .timeLimit)
        #expect(sent.delivery == .mayHaveBeenSent)
        #expect(sent.requestIdempotency == post)
        #expect(Rulebook.countsAsFailure(sent) == true)
        #expect(Rulebook.stopReason(for: sent, idempotency: .idempotent) == .notIdempotent)
    }

    @Test func aBreakerDoesNotCountALimitersRefusalItsCallerBridged() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "dependency", tripRule: .consecutiveFailures(1), clock: clock)
        let refusal = LimiterRejectionError(limiterName: "api", reason: .queueFull, queued: 0)
        for _ in 1...3 {
            await #expect(throws: NSError.self) {
                try await breaker.execute { () async throws -> Int in throw refusal as NSError }
            }
        }
        #expect(breaker.state == .closed)
    }

    @Test func theSwiftValuesAreReadAsBeforeBridging() {
        let open = CircuitBreakerOpenError(breakerName: "b", state: .open, retryAfter: .seconds(5))
        #expect(FailureAnalysis(open).retryAfter == .seconds(5))
        #expect(FailureAnalysis(open).delivery == .notSent)
        let timeout = TimeoutError(timeoutName: "t", timeout: .seconds(1))
        #expect(FailureAnalysis(timeout).delivery == .mayHaveBeenSent)
        #expect(FailureAnalysis(timeout).httpStatus == nil)
    }
}
