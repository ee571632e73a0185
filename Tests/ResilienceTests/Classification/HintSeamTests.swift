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
}
