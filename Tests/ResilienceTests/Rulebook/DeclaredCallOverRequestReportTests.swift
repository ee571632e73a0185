import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A call declared not idempotent is never run twice, whatever a request inside it says of itself.
@Suite(.timeLimit(.minutes(5))) struct DeclaredCallOverRequestReportTests {
    private func policy() throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
    }

    /// The call places an order (a POST that succeeds), then reads the receipt with a GET that the
    /// server answers 503, validated with its request as the docs show. The GET is idempotent; the call is not.
    @Test func aCallDeclaredNotIdempotentIsNotRunAgainBecauseItsLastRequestWasAGet() async throws {
        let receipt = URLRequest(url: URL(string: "https://shop.example/receipts/42")!)  // GET
        let orders = Counter()
        let policy = try self.policy()
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () async throws -> Data in
            orders.increment()  // POST /orders: placed
            let response = HTTPURLResponse(url: receipt.url!, statusCode: 503, httpVersion: nil, headerFields: nil)!
            return try HTTPResponseValidation.validate(Data(), response, for: receipt).data
        }
        #expect(orders.value == 1, "the order was placed \(orders.value) times (stop: \(outcome.stopReason))")
        #expect(outcome.stopReason == .notIdempotent)
    }

    /// The same with the core error type and no URLSession.
    @Test func aCallDeclaredNotIdempotentIsNotRunAgainForAnIdempotentInnerRequestsError() async throws {
        let orders = Counter()
        let policy = try self.policy()
        let outcome = await policy.outcome(idempotency: .notIdempotent) { () async throws -> Int in
            orders.increment()
            throw HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET"))
        }
        #expect(orders.value == 1, "the order was placed \(orders.value) times (stop: \(outcome.stopReason))")
    }

    /// And through a pipeline declared not idempotent, with the standard preset's retry stage.
    @Test func aPipelineCallDeclaredNotIdempotentIsNotRunAgainForAnIdempotentInnerRequestsError() async throws {
        let clock = TestClock()
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: HTTPRetryClassifier(),
                clock: clock)
        }
        let orders = Counter()
        await #expect(throws: HTTPResponseError.self) {
            try await pipeline.execute(idempotency: .notIdempotent) { () async throws -> Int in
                orders.increment()
                throw HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET"))
            }
        }
        #expect(orders.value == 1, "the order was placed \(orders.value) times")
    }

    /// With no declaration at all: one failure that reports two requests, a GET and a POST, both answered
    /// 503. The most cautious reading should win, as it does for delivery; the outermost report wins instead.
    @Test func aFailureThatReportsAPostIsNotRetriedBecauseAGetBesideItWasIdempotent() async throws {
        let orders = Counter()
        let policy = try self.policy()
        let outcome = await policy.outcome { () async throws -> Int in
            orders.increment()
            throw NSError(
                domain: "Checkout", code: 1,
                userInfo: [
                    "NSMultipleUnderlyingErrorsKey": [
                        HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET")),
                        HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST")),
                    ]
                ])
        }
        #expect(orders.value == 1, "the POST was sent \(orders.value) times (stop: \(outcome.stopReason))")
    }

    /// The same with the policy's classifier made for a POST (`HTTPRetryClassifier(method: "POST")`).
    @Test func aPolicyClassifiedForAPostDoesNotRunTheCallAgainForAnIdempotentInnerRequestsError() async throws {
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: HTTPRetryClassifier(method: "POST"),
            clock: TestClock())
        let orders = Counter()
        _ = await policy.outcome { () async throws -> Int in
            orders.increment()
            throw HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET"))
        }
        #expect(orders.value == 1, "the order was placed \(orders.value) times")
    }

    /// The public rule agrees: a report tightens the call's reading and never loosens it.
    @Test func theRulebookLetsAReportTightenTheCallsReadingButNeverLoosenIt() {
        let get = FailureAnalysis(HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET")))
        let post = FailureAnalysis(HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST")))
        #expect(Rulebook.stopReason(for: get, idempotency: .notIdempotent) == .notIdempotent)
        #expect(Rulebook.stopReason(for: get, idempotency: .idempotent) == nil)
        #expect(Rulebook.stopReason(for: post, idempotency: .idempotent) == .notIdempotent)
        let advice = RetryAdvice(
            for: HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET")),
            idempotency: .notIdempotent)
        #expect(!advice.isRetryUseful)
    }

    /// The strictest report in a chain counts, whichever comes first.
    @Test(arguments: [false, true])
    func theStrictestReportInAChainCounts(postFirst: Bool) {
        let get = HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "GET"))
        let post = HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST"))
        let reports: [any Error] = postFirst ? [post, get] : [get, post]
        let analysis = FailureAnalysis(
            NSError(domain: "Checkout", code: 1, userInfo: ["NSMultipleUnderlyingErrorsKey": reports]))
        #expect(analysis.requestIdempotency?.isIdempotent == false)
        #expect(analysis.requestIdempotency?.method == "POST")
    }
}
