import Foundation
import Resilience
import ResilienceTesting
import ResilienceURLSession
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct HTTPResponseErrorTests {
    private let url = URL(string: "http://127.0.0.1:1/orders")!

    private func response(_ status: Int, headers: [String: String] = [:]) -> HTTPURLResponse {
        HTTPURLResponse(url: self.url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    @Test func acceptableStatusReturnsTheBodyAndResponse() throws {
        let body = Data("fine".utf8)
        let validated = try HTTPResponseValidation.validate(body, self.response(204))
        #expect(validated.data == body)
        #expect(validated.response.statusCode == 204)
    }

    @Test func unacceptableStatusThrowsWithStatusHeadersAndParsedRetryAfter() throws {
        let error = try #require(throws: HTTPResponseError.self) {
            try HTTPResponseValidation.validate(
                Data("down for maintenance".utf8),
                self.response(503, headers: ["Retry-After": "120", "X-Request-Id": "abc"])
            )
        }
        #expect(error.statusCode == 503)
        #expect(error.httpStatusCode == 503)
        #expect(error.retryAfter == .seconds(120))
        #expect(error.headerValue(named: "x-request-id") == "abc")
        #expect(error.bodyExcerpt == "down for maintenance")
        #expect(error.url == self.url)
    }

    @Test func callerChosenStatusesCountAsSuccess() throws {
        let validated = try HTTPResponseValidation.validate(
            Data(), self.response(304), acceptableStatusCodes: 200..<400)
        #expect(validated.response.statusCode == 304)
        #expect(throws: HTTPResponseError.self) {
            try HTTPResponseValidation.validate(Data(), self.response(200), acceptableStatusCodes: 300..<400)
        }
    }

    @Test func nonHTTPResponseIsABadServerResponse() {
        let plain = URLResponse(url: self.url, mimeType: nil, expectedContentLength: 0, textEncodingName: nil)
        #expect(throws: URLError(.badServerResponse)) {
            try HTTPResponseValidation.validate(Data(), plain)
        }
    }

    @Test func bodyExcerptIsBoundedAndRemembersTheFullLength() {
        let body = Data(repeating: UInt8(ascii: "x"), count: 10_000)
        let error = HTTPResponseError(statusCode: 500, body: body)
        #expect(error.bodyExcerpt.utf8.count == HTTPResponseError.defaultBodyExcerptLimit)
        #expect(error.bodyByteCount == 10_000)
        #expect(error.description.hasSuffix("…"))

        let short = HTTPResponseError(statusCode: 500, body: body, bodyExcerptLimit: 8)
        #expect(short.bodyExcerpt == "xxxxxxxx")
        #expect(HTTPResponseError(statusCode: 500, body: body, bodyExcerptLimit: -1).bodyExcerpt.isEmpty)
    }

    /// The cut at 1,024 bytes splits the two bytes of "é": the excerpt ends in a replacement
    /// character, whose three UTF-8 bytes make the excerpt look as long as the body. It is
    /// still marked as cut; a body that ends exactly at the limit is not.
    @Test func aBodyCutInsideACharacterIsStillMarkedAsCut() {
        let cut = HTTPResponseError(statusCode: 503, body: Data((String(repeating: "x", count: 1_023) + "é").utf8))
        #expect(cut.bodyByteCount == 1_025)
        #expect(cut.description.hasSuffix("…"), "description ends \(cut.description.suffix(3).debugDescription)")

        let whole = HTTPResponseError(statusCode: 503, body: Data((String(repeating: "x", count: 1_022) + "é").utf8))
        #expect(whole.bodyByteCount == 1_024)
        #expect(whole.description.hasSuffix("é"))
    }

    @Test func retryAfterHeaderNameIsCaseInsensitiveAndAcceptsHTTPDates() {
        let receivedAt = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        let error = HTTPResponseError(
            statusCode: 503,
            headers: ["retry-after": "Sun, 06 Nov 1994 08:50:07 GMT"],
            receivedAt: receivedAt
        )
        #expect(error.retryAfter == .seconds(30))
    }

    /// The server made its response at 08:49:37 and asks to come back at 08:51:37: two
    /// minutes, whatever this device's clock says (RFC 9110, section 10.2.3, with the `Date`
    /// field of section 6.6.1). Here the local clock is an hour behind, then an hour ahead.
    @Test(arguments: [-3_600.0, 3_600.0, 0.5, -86_400.0])
    func anHTTPDateRetryAfterIsMeasuredAgainstTheResponsesDateField(localClockSkew: Double) throws {
        let serverNow = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        let headers = ["Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Retry-After": "Sun, 06 Nov 1994 08:51:37 GMT"]
        let receivedAt = serverNow.addingTimeInterval(localClockSkew)
        let error = HTTPResponseError(statusCode: 503, headers: headers, receivedAt: receivedAt)
        #expect(error.retryAfter == .seconds(120))
        // Through the URLSession validation, from a real `HTTPURLResponse`.
        let validation = try #require(throws: HTTPResponseError.self) {
            try HTTPResponseValidation.validate(
                Data(), self.response(503, headers: headers), acceptableStatusCodes: 200..<300, receivedAt: receivedAt)
        }
        #expect(validation.retryAfter == .seconds(120))
    }

    /// Without a `Date` field, or with one that is not an HTTP date, the local clock is all
    /// there is: the date is measured from the moment the response arrived, and the hint stands.
    @Test(arguments: [nil, "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 GMT, again"])
    func withoutAWellFormedDateFieldAnHTTPDateIsMeasuredFromReceipt(dateField: String?) {
        let receivedAt = Date(timeIntervalSince1970: 784_111_777 - 60)  // a minute before the server's date
        var headers = ["Retry-After": "Sun, 06 Nov 1994 08:51:37 GMT"]
        headers["Date"] = dateField
        let error = HTTPResponseError(statusCode: 503, headers: headers, receivedAt: receivedAt)
        #expect(error.retryAfter == .seconds(180))
    }

    /// A number of seconds counts from receipt: the `Date` field changes nothing.
    @Test func aRetryAfterInSecondsIgnoresTheDateField() {
        let error = HTTPResponseError(
            statusCode: 503, headers: ["Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Retry-After": "45"],
            receivedAt: Date(timeIntervalSince1970: 2_000_000_000))
        #expect(error.retryAfter == .seconds(45))
    }

    @Test func malformedRetryAfterIsIgnored() {
        let error = HTTPResponseError(statusCode: 503, headers: ["Retry-After": "soon"])
        #expect(error.retryAfter == nil)
        #expect(error.statusCode == 503)
    }

    @Test func describesStatusURLHintAndExcerpt() {
        let error = HTTPResponseError(
            statusCode: 503, headers: ["Retry-After": "1"], body: Data("busy".utf8), url: self.url)
        #expect(error.description == "HTTP 503 from http://127.0.0.1:1/orders (retry after 1.0 seconds): busy")
    }

    @Test func policyHonoursTheRetryAfterOfA503() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.milliseconds(10)), jitter: .none, clock: clock)
        let attempts = Counter()
        let call = Task {
            try await policy.execute {
                if attempts.increment() == 1 {
                    throw HTTPResponseError(statusCode: 503, headers: ["Retry-After": "7"])
                }
                return "ok"
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(7)])
        clock.advance(by: .seconds(7))
        #expect(try await call.value == "ok")
        #expect(attempts.value == 2)
    }

    @Test func policyStopsOnA429AndSurfacesItsHint() async throws {
        let policy = try RetryPolicy(maximumAttempts: 5, clock: TestClock())
        let attempts = Counter()
        let outcome = await policy.outcome {
            attempts.increment()
            throw HTTPResponseError(statusCode: 429, headers: ["Retry-After": "30"])
        }
        #expect(outcome.attempts == 1)
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(30))
    }
}
