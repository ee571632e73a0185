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

    // MARK: - A time limit's late failure survives bridging

    /// A late error that bridges to nothing that says its facts: a Swift value reporting a 429
    /// and a hint through protocols only.
    struct LateTooManyRequests: Error, HTTPStatusReporting, RetryAfterProviding {
        var httpStatusCode: Int? { 429 }
        var retryAfter: Duration? { .seconds(30) }
    }

    /// The forms a time limit's error reaches a caller in once bridged.
    enum BridgedShape: String, CaseIterable, Sendable {
        /// `error as NSError`.
        case bridged
        /// A plain `NSError` made with the bridged one's domain, code and `userInfo`, as an
        /// SDK's callback or an Objective-C boundary makes.
        case plainCopy
        /// That copy below `NSUnderlyingErrorKey` of an app's own `NSError`.
        case underlyingCopy

        func shape(_ limit: any Error) -> any Error {
            let bridged = limit as NSError
            let copy = NSError(domain: bridged.domain, code: bridged.code, userInfo: bridged.userInfo)
            switch self {
            case .bridged: return bridged
            case .plainCopy: return copy
            case .underlyingCopy: return NSError(domain: "App", code: 3, userInfo: [NSUnderlyingErrorKey: copy])
            }
        }
    }

    static func limits(keeping late: any Error) -> [any Error] {
        [
            AttemptTimeoutError(timeout: .seconds(5), operationError: late),
            TimeoutError(timeoutName: "t", timeout: .seconds(5), operationError: late),
        ]
    }

    /// Reads `limit` in `shape` and checks it is the time-out the Swift value is, with the same
    /// four facts read from its late error.
    static func expectTheSameReading(of limit: any Error, in shape: BridgedShape) {
        let original = FailureAnalysis(limit)
        let analysis = FailureAnalysis(shape.shape(limit))
        #expect(analysis.isTooManyRequests == original.isTooManyRequests, "\(shape): \(limit)")
        #expect(analysis.retryAfter == original.retryAfter, "\(shape): \(limit)")
        #expect(analysis.isOffline == original.isOffline, "\(shape): \(limit)")
        #expect(analysis.requestIdempotency == original.requestIdempotency, "\(shape): \(limit)")
        #expect(analysis.interruption == .timeLimit, "\(shape): \(limit)")
        // A time-out's own delivery, unless its late failure is an offline one that never left.
        #expect(analysis.delivery == original.delivery, "\(shape): \(limit)")
        #expect(
            analysis.delivery == (original.isOffline ? .notSent : .mayHaveBeenSent), "\(shape): \(limit)")
        #expect(analysis.httpStatus == nil, "\(shape): a time-out's status is its own")
        #expect(!analysis.isLocalRejection, "\(shape): \(limit)")
        // A breaker counts a time-out, unless it provably never reached the dependency.
        #expect(
            Rulebook.countsAsFailure(analysis) == (analysis.delivery != .notSent), "\(shape): \(limit)")
    }

    @Test(arguments: BridgedShape.allCases)
    func aLate429AndItsHintSurviveBridging(_ shape: BridgedShape) {
        for limit in Self.limits(keeping: LateTooManyRequests()) {
            let analysis = FailureAnalysis(shape.shape(limit))
            #expect(analysis.isTooManyRequests, "\(shape): \(limit)")
            #expect(analysis.retryAfter == .seconds(30), "\(shape): \(limit)")
            #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == .tooManyRequests)
            #expect(ErrorHints.isTooManyRequests(shape.shape(limit)), "\(shape): \(limit)")
            #expect(ErrorHints.retryAfter(of: shape.shape(limit)) == .seconds(30), "\(shape): \(limit)")
            Self.expectTheSameReading(of: limit, in: shape)
        }
    }

    @Test(arguments: BridgedShape.allCases)
    func aLateOfflineDeviceSurvivesBridging(_ shape: BridgedShape) {
        for limit in Self.limits(keeping: URLError(.notConnectedToInternet)) {
            #expect(FailureAnalysis(shape.shape(limit)).isOffline, "\(shape): \(limit)")
            Self.expectTheSameReading(of: limit, in: shape)
        }
    }

    /// A late `POST` the limit's error was made without (its public initializer takes the
    /// late error as it comes): the report is read from the late error in the bridged form too.
    @Test(arguments: BridgedShape.allCases)
    func aLatePOSTSurvivesBridging(_ shape: BridgedShape) {
        let post = Idempotency.http(method: "POST")
        for limit in Self.limits(keeping: HTTPResponseError(statusCode: 503, requestIdempotency: post)) {
            let analysis = FailureAnalysis(shape.shape(limit))
            #expect(analysis.requestIdempotency == post, "\(shape): \(limit)")
            #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == .notIdempotent)
            Self.expectTheSameReading(of: limit, in: shape)
        }
    }

    /// Nested limits: an outer limit whose late error is an inner limit's error with a late
    /// 429, with either or both bridged.
    @Test(arguments: BridgedShape.allCases)
    func aLate429UnderNestedLimitsSurvivesBridging(_ shape: BridgedShape) {
        let inner = TimeoutError(timeoutName: "inner", timeout: .seconds(1), operationError: LateTooManyRequests())
        let nested: [any Error] = [
            AttemptTimeoutError(timeout: .seconds(5), operationError: shape.shape(inner)),
            shape.shape(AttemptTimeoutError(timeout: .seconds(5), operationError: inner)),
            shape.shape(AttemptTimeoutError(timeout: .seconds(5), operationError: shape.shape(inner))),
        ]
        for error in nested {
            let analysis = FailureAnalysis(error)
            #expect(analysis.isTooManyRequests, "\(shape): \(error)")
            #expect(analysis.retryAfter == .seconds(30), "\(shape): \(error)")
            #expect(analysis.interruption == .timeLimit, "\(shape): \(error)")
            #expect(analysis.httpStatus == nil, "\(shape): \(error)")
            #expect(ErrorHints.isTooManyRequests(error), "\(shape): \(error)")
            #expect(ErrorHints.retryAfter(of: error) == .seconds(30), "\(shape): \(error)")
        }
    }

    /// A time-out surfaced as an `NSError` (an SDK's callback, an Objective-C boundary) whose
    /// operation answered 429, or reported a `POST`, after the limit fired: the policy around it
    /// sends the request once.
    @Test(arguments: [
        (HTTPResponseError(statusCode: 429, headers: ["Retry-After": "0"]), RetryStopReason.tooManyRequests),
        (HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST")), .notIdempotent),
    ])
    func aPolicyDoesNotRepeatABridgedTimeOutsLateFailure(late: HTTPResponseError, stop: RetryStopReason) async throws {
        for shape in BridgedShape.allCases {
            let clock = TestClock()
            let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
            let sent = Counter()
            let outcome = await policy.outcome { () async throws -> Int in
                sent.increment()
                throw shape.shape(TimeoutError(timeoutName: "sdk", timeout: .seconds(5), operationError: late))
            }
            #expect(outcome.stopReason == stop, "\(shape)")
            #expect(sent.value == 1, "\(shape): sent \(sent.value) times")
        }
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
