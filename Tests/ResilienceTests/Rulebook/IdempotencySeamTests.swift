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

    /// Methods are case-sensitive (RFC 9110, section 9.1): the reading keeps the spelling it was given.
    @Test(arguments: ["get", "Get", "head", "options", "put", "delete", "trace"])
    func aStandardMethodSpelledInOtherCaseIsAnUnknownMethod(_ method: String) {
        let idempotency = Idempotency.http(method: method)
        #expect(!idempotency.isIdempotent)
        #expect(idempotency.method == method)
        #expect(idempotency.description == "\(method) (notIdempotent)")
        // An idempotency key still makes it safe to repeat, as for any method.
        #expect(Idempotency.http(method: method, headers: ["Idempotency-Key": "k-1"]).isIdempotent)
    }

    @Test func aKeyWithSurroundingSpaceStillMakesAPOSTSafeToRepeat() {
        #expect(Idempotency.http(method: "POST", headers: ["X-Idempotency-Key": " order-42 "]).isIdempotent)
    }
}
