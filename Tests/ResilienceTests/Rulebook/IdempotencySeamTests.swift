import Foundation
import Resilience
import ResilienceTesting
import Testing

/// What makes a request safe to send twice, read as the server will read it.
@Suite("Idempotency at the seams")
struct IdempotencySeamTests {
    @Test(arguments: ["", " ", "\t", "  \t "])
    func aBlankIdempotencyKeyDoesNotMakeAPOSTSafeToRepeat(_ blank: String) async throws {
        // HTTP strips a field value's surrounding whitespace (RFC 9110, section 5.5):
        // the server sees an empty key and cannot deduplicate by it.
        let posted = Idempotency.http(method: "POST", headers: ["Idempotency-Key": blank])
        #expect(!posted.isIdempotent)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let counter = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            counter.increment()
            throw HTTPResponseError(statusCode: 503, requestIdempotency: posted)
        }
        #expect(counter.value == 1, "the POST reached the server; it must not be sent again")
        #expect(outcome.stopReason == .notIdempotent)
    }

    @Test func aKeyWithSurroundingSpaceStillMakesAPOSTSafeToRepeat() {
        #expect(Idempotency.http(method: "POST", headers: ["X-Idempotency-Key": " order-42 "]).isIdempotent)
    }
}
