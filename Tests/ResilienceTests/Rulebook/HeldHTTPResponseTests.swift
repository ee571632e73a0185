import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The error most app code writes: the response it failed with, kept as a value.
private enum APIError: Error {
    case http(HTTPURLResponse, Data)
    case decoding(HTTPURLResponse, DecodingError)
}

/// An app's wrapper one level up, adopting nothing.
private enum AppError: Error {
    case api(APIError)
}

/// A struct that keeps the response among other stored values.
private struct FailureWithAResponse: Error {
    let attempt: Int
    let response: HTTPURLResponse?
    let body: Data
}

/// An HTTP client's own response type, adopting the protocol itself.
private struct ClientResponse: HTTPResponseReporting, Sendable {
    var statusCode: Int
    var headers: [String: String]

    func value(forHTTPHeaderField field: String) -> String? {
        self.headers.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }
}

private enum ClientError: Error {
    case failed(ClientResponse)
}

/// A response held as a value, not as an error, is still seen by the rules: a 429 in it is
/// never retried, whatever a classifier says, and its hint is the server's.
@Suite("The rules see an HTTP response an error holds")
struct HeldHTTPResponseTests {
    static func response(_ status: Int, _ headers: [String: String] = [:]) -> HTTPURLResponse {
        HTTPURLResponse(
            url: URL(string: "http://127.0.0.1/orders")!, statusCode: status, httpVersion: "HTTP/1.1",
            headerFields: headers)!
    }

    /// An SDK that puts the response under a `userInfo` key of its own.
    static func sdkError(_ response: HTTPURLResponse) -> NSError {
        NSError(domain: "com.example.sdk", code: 7, userInfo: ["com.example.sdk.response": response])
    }

    /// Every shape, each holding `response`.
    static func shapes(of response: HTTPURLResponse) -> [any Error] {
        [
            APIError.http(response, Data("slow down".utf8)),
            AppError.api(.http(response, Data())),
            FailureWithAResponse(attempt: 1, response: response, body: Data()),
            Self.sdkError(response),
            NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: Self.sdkError(response)]),
        ]
    }

    static let tooManyRequests = Self.response(429, ["Retry-After": "7"])

    /// A classifier that would retry anything: the rules must win over it.
    static let retryEverything = ClosureRetryClassifier { _, _ in .retry }

    static func policy(maximumAttempts: Int = 3) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none,
            classifier: Self.retryEverything, clock: TestClock())
    }

    @Test(arguments: 0..<5)
    func a429HeldInAnErrorIsReadAsOne(shape: Int) {
        let error = Self.shapes(of: Self.tooManyRequests)[shape]
        let analysis = FailureAnalysis(error)
        #expect(analysis.isTooManyRequests)
        #expect(analysis.httpStatus == 429)
        #expect(analysis.retryAfter == .seconds(7))
        #expect(analysis.delivery == .answered)
        #expect(ErrorHints.isTooManyRequests(error))
        #expect(ErrorHints.retryAfter(of: error) == .seconds(7))
        #expect(ErrorHints.httpStatus(of: error) == 429)
        #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == .tooManyRequests)
    }

    @Test func aSpentRateLimitQuotaInAHeldResponseIsTheServersHint() {
        let response = Self.response(429, ["RateLimit": #""default";r=0;t=20"#])
        #expect(FailureAnalysis(APIError.http(response, Data())).retryAfter == .seconds(20))
        #expect(FailureAnalysis(Self.sdkError(response)).retryAfter == .seconds(20))
    }

    @Test func aResponseTypeOfTheAppsOwnIsReadToo() {
        let error = ClientError.failed(ClientResponse(statusCode: 429, headers: ["retry-after": "3"]))
        let analysis = FailureAnalysis(error)
        #expect(analysis.isTooManyRequests)
        #expect(analysis.retryAfter == .seconds(3))
    }

    /// A held success says the request succeeded: the failure is the decoding, judged as such.
    @Test func aHeldResponseWithASuccessStatusIsNotAFailingStatus() {
        let decoding = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not JSON"))
        let analysis = FailureAnalysis(APIError.decoding(Self.response(200), decoding))
        #expect(analysis.httpStatus == nil)
        #expect(!analysis.isTooManyRequests)
        let decision = DefaultRetryClassifier().decision(
            for: APIError.decoding(Self.response(200), decoding), context: RetryContext(attempt: 1))
        #expect(decision == .doNotRetry)
    }

    /// A held failing status is judged as the same status thrown by ``HTTPResponseValidation``.
    @Test(arguments: [(503, true), (404, false)])
    func aHeldResponseIsJudgedByItsStatus(status: Int, isRetried: Bool) async throws {
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let counter = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            counter.increment()
            throw APIError.http(Self.response(status), Data())
        }
        #expect(counter.value == (isRetried ? 2 : 1))
        #expect(outcome.stopReason == (isRetried ? .exhausted : .notRetryable))
    }

    @Test(arguments: 0..<5)
    func executeStopsAfterOneAttemptWhateverTheClassifierSays(shape: Int) async throws {
        let policy = try Self.policy()
        let counter = Counter()
        await #expect(throws: (any Error).self) {
            try await policy.execute { () throws -> Int in
                counter.increment()
                throw Self.shapes(of: Self.tooManyRequests)[shape]
            }
        }
        #expect(counter.value == 1, "a 429 is never sent again")
        #expect(await policy.statistics.stopReasons[.tooManyRequests] == 1)
    }

    @Test(arguments: 0..<5)
    func outcomeStopsAfterOneAttemptAndReportsTheHint(shape: Int) async throws {
        let policy = try Self.policy()
        let counter = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            counter.increment()
            throw Self.shapes(of: Self.tooManyRequests)[shape]
        }
        #expect(counter.value == 1)
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(7))
    }

    @Test(arguments: 0..<5)
    func aBreakerAroundAPolicyMakesOneAttempt(shape: Int) async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "held", tripRule: .consecutiveFailures(5), clock: clock)
        let policy = try Self.policy()
        let counter = Counter()
        await #expect(throws: (any Error).self) {
            try await breaker.execute {
                try await policy.execute { () throws -> Int in
                    counter.increment()
                    throw Self.shapes(of: Self.tooManyRequests)[shape]
                }
            }
        }
        #expect(counter.value == 1)
        #expect(breaker.state == .open, "the 429's hint pushes the breaker open")
        #expect(breaker.snapshot().remainingOpenTime == .seconds(7))
    }

    @Test(arguments: 0..<5)
    func aPolicyInsideAPolicyMakesOneAttempt(shape: Int) async throws {
        let outer = try Self.policy()
        let inner = try Self.policy()
        let counter = Counter()
        let outcome = await outer.outcome { () throws -> Int in
            try await inner.execute { () throws -> Int in
                counter.increment()
                throw Self.shapes(of: Self.tooManyRequests)[shape]
            }
        }
        #expect(counter.value == 1)
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .tooManyRequests)
    }

    /// The `Date` field sets the origin of a date in a held response's `Retry-After`, as for
    /// an ``HTTPResponseError``: the local clock is an hour behind the server's here.
    @Test func aHeldResponsesDateHintIsMeasuredAgainstItsDateField() {
        let serverNow = Date().addingTimeInterval(3_600)
        let response = Self.response(
            429,
            [
                "Date": Self.httpDate(serverNow),
                "Retry-After": Self.httpDate(serverNow.addingTimeInterval(120)),
            ])
        #expect(FailureAnalysis(APIError.http(response, Data())).retryAfter == .seconds(120))
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
