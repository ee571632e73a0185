import Foundation
import Resilience
import Testing

@Suite("Error hints")
struct ErrorHintsTests {
    @Test func statusComesFromTheProtocolFirst() {
        #expect(ErrorHints.httpStatus(of: StatusError(status: 503)) == 503)
        #expect(ErrorHints.httpStatus(of: TransientError()) == nil)
    }

    @Test(arguments: ErrorHints.httpStatusKeys)
    func statusComesFromAnyKnownUserInfoKey(key: String) {
        let error = NSError(domain: "SDK", code: 1, userInfo: [key: 429])
        #expect(ErrorHints.httpStatus(of: error) == 429)
        #expect(ErrorHints.isTooManyRequests(error))
    }

    @Test func nsErrorCodeIsNotMistakenForAStatus() {
        // Kii Cloud reports "duplicate entry" as code 503 with HTTP status 409.
        let error = NSError(domain: "KiiCloud", code: 503, userInfo: ["kiiHttpStatus": 409])
        #expect(ErrorHints.httpStatus(of: error) == 409)
        #expect(ErrorHints.httpStatus(of: NSError(domain: "KiiCloud", code: 503)) == nil)
    }

    @Test func statusIsFoundOnAnUnderlyingError() {
        let underlying = NSError(domain: "HTTP", code: 0, userInfo: ["statusCode": "502"])
        let error = NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: underlying])
        #expect(ErrorHints.httpStatus(of: error) == 502)
    }

    @Test(arguments: [-1, 0, 99, 600, 10_000])
    func outOfRangeStatusesAreIgnored(status: Int) {
        #expect(ErrorHints.httpStatus(of: NSError(domain: "SDK", code: 1, userInfo: ["statusCode": status])) == nil)
        #expect(ErrorHints.httpStatus(of: StatusError(status: status)) == nil)
    }

    @Test func cloudKitRetryAfterIsReadInSecondsFromAnyNumericForm() {
        let values: [Any] = [7, 7.0, Int64(7), "7", NSNumber(value: 7)]
        for value in values {
            let error = NSError(domain: "CKErrorDomain", code: 7, userInfo: ["CKRetryAfter": value])
            #expect(ErrorHints.retryAfter(of: error) == .seconds(7), "\(type(of: value))")
        }
        let fractional = NSError(domain: "CKErrorDomain", code: 7, userInfo: ["CKRetryAfter": 2.5])
        #expect(ErrorHints.retryAfter(of: fractional) == .milliseconds(2_500))
    }

    @Test func absurdRetryAfterValuesAreIgnoredOrClamped() throws {
        let absurd: [Any] = [-1.0, Double.nan, Double.infinity, -Double.infinity, "", "soon", [1]]
        for value in absurd {
            let error = NSError(domain: "CKErrorDomain", code: 6, userInfo: ["CKRetryAfter": value])
            #expect(ErrorHints.retryAfter(of: error) == nil, "\(value)")
        }
        let huge = NSError(domain: "CKErrorDomain", code: 6, userInfo: ["CKRetryAfter": 1e300])
        let clamped = try #require(ErrorHints.retryAfter(of: huge))
        #expect(clamped > .seconds(1_000_000_000))
        #expect(ErrorHints.retryAfter(of: StatusError(status: 503, hint: .seconds(-5))) == nil)
    }
}

@Suite("Classifiers")
struct ClassifierTests {
    let context = RetryContext(attempt: 1)

    @Test(arguments: [408, 500, 502, 503, 504])
    func defaultRetriesTransientStatuses(status: Int) {
        #expect(DefaultRetryClassifier().decision(for: StatusError(status: status), context: self.context) == .retry)
    }

    // 401 and 407 stop too, with their own reason: see HTTPRetryClassifierTests.
    @Test(arguments: [400, 403, 404, 409, 422, 501, 505])
    func defaultStopsOnOtherStatuses(status: Int) {
        #expect(
            DefaultRetryClassifier().decision(for: StatusError(status: status), context: self.context) == .doNotRetry)
    }

    @Test func defaultNeverRetriesCancellationOrDecodingFailures() {
        let classifier = DefaultRetryClassifier()
        #expect(classifier.decision(for: CancellationError(), context: self.context) == .doNotRetry)
        let decoding = DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad"))
        #expect(classifier.decision(for: decoding, context: self.context) == .doNotRetry)
        #expect(classifier.decision(for: PermanentError(), context: self.context) == .doNotRetry)
        #expect(classifier.decision(for: TransientError(), context: self.context) == .retry)
    }

    @Test func chainAsksInOrderAndTheFirstOpinionWins() {
        let calls = Counter()
        let first = ClosureRetryClassifier { error, _ in error is TransientError ? .doNotRetry : nil }
        let second = ClosureRetryClassifier { _, _ in
            calls.increment()
            return .retry(after: .seconds(2))
        }
        let chain = first.fallingBack(to: second)
        #expect(chain.decision(for: TransientError(), context: self.context) == .doNotRetry)
        #expect(calls.value == 0)
        #expect(chain.decision(for: PermanentError(), context: self.context) == .retry(after: .seconds(2)))
        #expect(calls.value == 1)
        #expect(chain.fallingBack(to: .default).classifiers.count == 3)
    }
}
