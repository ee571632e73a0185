import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Retry-after hints from hostile or careless servers and SDKs.
@Suite("Retry-after hints at the seams")
struct HintSeamTests {
    @Test(arguments: [Double.nan, -Double.infinity, Double.infinity, -5])
    func aMalformedCloudKitHintDoesNotHideAWellFormedRetryAfter(_ malformed: Double) async throws {
        let error = NSError(
            domain: "SDK", code: 503,
            userInfo: [ErrorHints.cloudKitRetryAfterKey: NSNumber(value: malformed), "Retry-After": "30"])
        #expect(ErrorHints.retryAfter(of: error) == .seconds(30))
        #expect(FailureAnalysis(error).retryAfter == .seconds(30))
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let call = Task { await policy.outcome { () throws -> Int in throw error } }
        await clock.waitForSleepers()
        #expect(clock.sleepRequests == [.seconds(30)], "the server asked for thirty seconds")
        clock.advance(by: clock.sleepRequests.max() ?? .zero)
        _ = await call.value
    }

    @Test func aMalformedRetryAfterEntryDoesNotHideAWellFormedOne() {
        let error = NSError(domain: "SDK", code: 503, userInfo: ["Retry-After": "soon", "retryAfter": 12])
        #expect(ErrorHints.retryAfter(of: error) == .seconds(12))
    }

    @Test func aDuplicatedRetryAfterJoinedIntoOneValueAsksForTheLongestWait() {
        // A recipient that joins the two field lines of a singleton field gets a list,
        // which RFC 9110 (section 5.3) does not allow for `Retry-After`; dropping it would
        // let the client come back at once, so the longest wait of a well-formed list counts.
        #expect(RetryAfterHeader.delay(parsing: "120, 120") == .seconds(120))
        #expect(RetryAfterHeader.delay(parsing: "120,60") == .seconds(120))
        let receivedAt = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        let joinedDates = "Sun, 06 Nov 1994 08:50:37 GMT, Sun, 06 Nov 1994 08:50:37 GMT"
        #expect(RetryAfterHeader.delay(parsing: joinedDates, receivedAt: receivedAt) == .seconds(60))
        #expect(HTTPResponseError(statusCode: 503, headers: ["Retry-After": "120, 120"]).retryAfter == .seconds(120))
        // A list with a member that does not parse is still ignored.
        #expect(HTTPResponseError(statusCode: 503, headers: ["Retry-After": "120, soon"]).retryAfter == nil)
    }

    // MARK: - Several hints on one error

    /// An SDK error that carries CloudKit's key beside an HTTP `Retry-After`, or two spellings of
    /// `Retry-After`: the longest hint sets the wait, as it does along a chain, whichever is read first.
    @Test(arguments: [
        ["CKRetryAfter": 1, "Retry-After": "120"] as [String: any Sendable],
        ["Retry-After": "5", "retryAfter": 120],
        ["RetryAfter": 2, "retryAfter": "120"],
    ])
    func theLongestOfSeveralHintsOnOneErrorCounts(userInfo: [String: any Sendable]) {
        let error = NSError(domain: "SDK", code: 503, userInfo: userInfo)
        #expect(ErrorHints.retryAfter(of: error) == .seconds(120))
        #expect(FailureAnalysis(error).retryAfter == .seconds(120))
    }

    /// An error whose `retryAfter` gives no hint, or a shorter one, than its `errorUserInfo` does.
    struct ProvidingAndBridgedHint: Error, RetryAfterProviding, CustomNSError {
        var retryAfter: Duration?
        var errorUserInfo: [String: Any] { ["Retry-After": "120"] }
    }

    @Test(arguments: [nil, Duration.seconds(1)])
    func aProvidedHintDoesNotHideALongerOneInTheErrorsUserInfo(provided: Duration?) {
        let error = ProvidingAndBridgedHint(retryAfter: provided)
        #expect(ErrorHints.retryAfter(of: error) == .seconds(120))
        #expect(FailureAnalysis(error).retryAfter == .seconds(120))
    }

    /// At the policy: a 503 that asks for 120 s under one key and 1 s under another waits 120 s.
    @Test func aPolicyWaitsTheLongestOfSeveralHintsOnOneError() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, maximumRetryAfter: .seconds(600),
            clock: clock)
        let attempts = Counter()
        let call = Task {
            try await policy.execute { () throws -> String in
                if attempts.increment() == 1 {
                    throw NSError(
                        domain: "SDK", code: 503,
                        userInfo: ["HTTPStatusCode": 503, "CKRetryAfter": 1, "Retry-After": "120"])
                }
                return "ok"
            }
        }
        await clock.waitForSleepers()
        #expect(clock.sleepRequests == [.seconds(120)])
        clock.advance(by: .seconds(120))
        #expect(try await call.value == "ok")
    }

    // MARK: - A hint text too large for a Double

    /// "1e400" reads as infinity in a `Double`; like "1e30" it is clamped to the longest wait, which
    /// the policy's `maximumRetryAfter` refuses, rather than dropped (the call then retried at once).
    @Test func aHintTextTooLargeForADoubleIsClampedNotDropped() async throws {
        func cloudKitError(_ value: any Sendable) -> NSError {
            NSError(
                domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.serviceUnavailable.rawValue,
                userInfo: [ErrorHints.cloudKitRetryAfterKey: value])
        }
        let longest = ErrorHints.retryAfter(of: cloudKitError(Double.greatestFiniteMagnitude))
        #expect(longest != nil)
        #expect(ErrorHints.retryAfter(of: cloudKitError("1e30")) == longest)
        #expect(ErrorHints.retryAfter(of: cloudKitError("1e400")) == longest)
        #expect(ErrorHints.retryAfter(of: cloudKitError(" 1E400 ")) == longest)
        for word in ["inf", "Infinity", "+inf", "nan", "-1e400"] {
            #expect(ErrorHints.retryAfter(of: cloudKitError(word)) == nil, "\(word)")
        }

        let overflowing = cloudKitError("1e400")
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let outcome = await policy.outcome { () throws -> Void in throw overflowing }
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(outcome.attempts == 1)
    }
}
