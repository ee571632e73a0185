import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A user's batch error that says nothing of the errors it holds.
private enum BatchFailure: Error {
    case items([any Error])
}

/// A 429 among the many errors of one failure: the rules must see it wherever it sits.
@Suite("The rules see a 429 among many errors")
struct WideErrorSeamTests {
    /// `count` transient errors with one 429 after them.
    static func manyFailuresEndingIn429(count: Int) -> [any Error] {
        (0..<count).map { TransientError(id: $0) as any Error } + [StatusError(status: 429, hint: .seconds(9))]
    }

    @Test func a429AfterManyUnderlyingErrorsStopsThePolicy() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let counter = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            counter.increment()
            throw NSError(
                domain: "Sync", code: 1,
                userInfo: ["NSMultipleUnderlyingErrorsKey": Self.manyFailuresEndingIn429(count: 100)])
        }
        #expect(counter.value == 1, "the hundred-and-first error is a 429: nothing may be sent again")
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(9))
    }

    @Test func a429AmongManyItemsOfAUsersEnumStopsThePolicy() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let counter = Counter()
        let outcome = await policy.outcome { () throws -> Int in
            counter.increment()
            throw BatchFailure.items(Self.manyFailuresEndingIn429(count: 50))
        }
        #expect(counter.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
    }

    @Test func a429AmongManyItemsOpensABreakerForItsHint() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "wide", tripRule: .consecutiveFailures(5), clock: clock)
        await #expect(throws: BatchFailure.self) {
            try await breaker.execute { () throws -> Int in
                throw BatchFailure.items(Self.manyFailuresEndingIn429(count: 50))
            }
        }
        #expect(breaker.state == .open, "the 429's hint pushes the breaker open")
        #expect(breaker.snapshot().remainingOpenTime == .seconds(9))
    }

    @Test func anItemAnsweredWith429AmongHundredsEndsTheCloudKitBatch() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        let items = Array(0..<400)
        var perItem: [Int: any Error] = [:]
        for item in items {
            perItem[item] = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.zoneBusy.rawValue)
        }
        perItem[399] = HTTPResponseError(statusCode: 429)
        let calls = Counter()
        let result = try await policy.retryingFailedItems(items) { [perItem] _ in
            calls.increment()
            throw NSError(
                domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                userInfo: [CloudKitErrorCode.partialErrorsKey: perItem])
        }
        #expect(calls.value == 1, "one item was answered 429: the batch is not sent again")
        #expect(result.stopReason == .tooManyRequests)
    }
}
