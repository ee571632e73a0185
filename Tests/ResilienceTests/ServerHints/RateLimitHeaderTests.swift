import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite("RateLimit header fields")
struct RateLimitHeaderTests {
    @Test func readsTheDraftsExamples() throws {
        let limits = try #require(RateLimitHeader.serviceLimits(parsing: #""default";r=0;t=10"#))
        #expect(limits == [.init(policy: "default", remaining: 0, reset: .seconds(10))])
        let policies = try #require(
            RateLimitHeader.policies(parsing: #""burst";q=100;w=60,"daily";q=1000;w=86400;qu="request""#))
        #expect(policies.map(\.name) == ["burst", "daily"])
        #expect(policies.map(\.quota) == [100, 1_000])
        #expect(policies.map(\.window) == [.seconds(60), .seconds(86_400)])
        #expect(policies[1].quotaUnit == "request")
    }

    @Test func acceptsTokensPartitionKeysAndUnknownParameters() throws {
        let limits = try #require(RateLimitHeader.serviceLimits(parsing: #"day;r=5;t=3600;pk=:cHJvamVjdC0x:;x-ext=?1"#))
        #expect(limits == [.init(policy: "day", remaining: 5, reset: .seconds(3_600), partitionKey: "cHJvamVjdC0x")])
    }

    @Test(arguments: [
        "", "   ", #""a";r=1,"#, #""a";r=1,,"b";r=2"#, #""a";r=1 x"#, #""a;r=1"#, #""a";R=1"#,
        #""a";r=1234567890123456"#,
        #""a";r=1.;t=2"#, #""a";r=1;t=:abc"#, "\"\u{7F}\";r=1", #""a";r=?2"#, #""a";r="#, "(\"a\" ;r=1",
    ])
    func ignoresAMalformedFieldWhole(value: String) {
        #expect(RateLimitHeader.serviceLimits(parsing: value) == nil)
    }

    @Test func skipsMembersThatAreNotQuotaItemsAndKeepsTheRest() throws {
        let value = #"1;r=1, "neg";r=-1, "noq";t=3, ("x" "y");r=1, "dec";r=1.5, "bad";r=1;t="2", "ok";r=2;t=7"#
        let limits = try #require(RateLimitHeader.serviceLimits(parsing: value))
        #expect(limits == [.init(policy: "ok", remaining: 2, reset: .seconds(7))])
    }

    @Test func lastValueOfARepeatedParameterWins() throws {
        let limits = try #require(RateLimitHeader.serviceLimits(parsing: #""a";r=1;r=0;t=4"#))
        #expect(limits.first?.remaining == 0)
    }

    /// A reset of the largest size a structured field integer allows (15 digits of seconds, about 32
    /// million years) is clamped as a `Retry-After` of that size is: the same hint whichever field
    /// carries it.
    @Test func aHugeResetIsClampedLikeEveryOtherHint() {
        let huge = RateLimitHeader.exhaustedFor(parsing: #""day";r=0;t=999999999999999"#)
        #expect(huge == RetryAfterHeader.delay(parsing: "999999999999999"))
        #expect(huge == ErrorHints.retryAfter(of: NSError(domain: "d", code: 1, userInfo: ["Retry-After": 1e15])))
        let error = HTTPResponseError(statusCode: 503, headers: ["RateLimit": #""day";r=0;t=999999999999999"#])
        #expect(error.retryAfter == ErrorHints.retryAfter(of: error))
        #expect(error.retryAfter == huge)
    }

    @Test func exhaustedForIsTheLongestResetAmongSpentQuotas() {
        #expect(RateLimitHeader.exhaustedFor(parsing: #""a";r=0;t=10, "b";r=0;t=30, "c";r=5;t=90"#) == .seconds(30))
        #expect(RateLimitHeader.exhaustedFor(parsing: #""a";r=3;t=10"#) == nil)
        #expect(RateLimitHeader.exhaustedFor(parsing: #""a";r=0"#) == nil)
        #expect(RateLimitHeader.exhaustedFor(parsing: "garbage;;") == nil)
    }

    @Test func rawBytesAndStringAgree() {
        let value = #""default";r=0;t=10, other;r=4"#
        #expect(RateLimitHeader.serviceLimits(utf8: Array(value.utf8)) == RateLimitHeader.serviceLimits(parsing: value))
        #expect(RateLimitHeader.serviceLimits(utf8: [0x22, 0xFF, 0x22, 0x3B, 0x72, 0x3D, 0x31]) == nil)
    }

    @Test func anExhaustedQuotaIsAServerHintOnAFailure() {
        let error = HTTPResponseError(statusCode: 503, headers: ["ratelimit": #""default";r=0;t=12"#])
        #expect(FailureAnalysis(error).retryAfter == .seconds(12))
        #expect(error.serviceLimits.first?.remaining == 0)
        let withRetryAfter = HTTPResponseError(
            statusCode: 503, headers: ["Retry-After": "3", "RateLimit": #""default";r=0;t=12"#])
        #expect(FailureAnalysis(withRetryAfter).retryAfter == .seconds(12))
        let quotaLeft = HTTPResponseError(statusCode: 503, headers: ["RateLimit": #""default";r=9;t=12"#])
        #expect(FailureAnalysis(quotaLeft).retryAfter == nil)
    }

    /// The hint reads the same from the error alone, through every helper, as the policy reads it.
    @Test func everyReaderOfTheErrorAgreesOnAnExhaustedQuota() async throws {
        let error = HTTPResponseError(statusCode: 429, headers: ["RateLimit": #""default";r=0;t=30"#])
        let policy = try RetryPolicy(maximumAttempts: 3, clock: TestClock())
        let outcome = await policy.outcome { () async throws -> Int in throw error }
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(30))
        #expect(error.retryAfter == .seconds(30))
        #expect(ErrorHints.isTooManyRequests(error))
        #expect(ErrorHints.retryAfter(of: error) == .seconds(30))
        #expect(RetryAdvice(for: error).retryAfter == .seconds(30))
        let wrapped = NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
        #expect(ErrorHints.retryAfter(of: wrapped) == .seconds(30))
        // The longer of the two fields wins, whichever it is.
        let longerRetryAfter = HTTPResponseError(
            statusCode: 503, headers: ["Retry-After": "40", "RateLimit": #""default";r=0;t=30"#])
        #expect(longerRetryAfter.retryAfter == .seconds(40))
        #expect(FailureAnalysis(longerRetryAfter).retryAfter == .seconds(40))
        let malformed = HTTPResponseError(statusCode: 503, headers: ["RateLimit": #""default";r=0;t=-3"#])
        #expect(malformed.retryAfter == nil)
    }

    @Test func policyWaitsForTheResetOnAFailureWithNoQuotaLeft() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.milliseconds(1)), clock: clock)
        let attempts = Counter()
        let call = Task {
            await policy.outcome {
                if attempts.increment() == 1 {
                    throw HTTPResponseError(statusCode: 503, headers: ["RateLimit": #""default";r=0;t=5"#])
                }
            }
        }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(5)])
        clock.advance(by: .seconds(5))
        #expect(await call.value.stopReason == .succeeded)
    }

    @Test func breakerPushbackOpensForAnExhaustedQuota() async throws {
        let clock = TestClock()
        let breaker = try CircuitBreaker(name: "api", pushback: .anyRetryAfter(), clock: clock)
        _ = try? await breaker.execute {
            throw HTTPResponseError(statusCode: 503, headers: ["RateLimit": #""default";r=0;t=8"#])
        }
        await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute {} }
        clock.advance(by: .seconds(8))
        try await breaker.execute {}
    }
}

@Suite("RateLimit gate")
struct RateLimitGateTests {
    @Test func spendsTheQuotaLeftThenWaitsForTheReset() throws {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        #expect(gate.reserve() == .zero)  // nothing known yet
        gate.record(headers: ["RateLimit": #""default";r=2;t=10"#])
        #expect(gate.reserve() == .zero)
        #expect(gate.reserve() == .zero)
        clock.advance(by: .seconds(4))
        #expect(gate.reserve() == .seconds(6))
        clock.advance(by: .seconds(6))
        #expect(gate.reserve() == .zero)  // reset: unknown until the next response
    }

    @Test func capsTheWaitAtTheMaximum() throws {
        let gate = try RateLimitGate(maximumWait: .seconds(30), clock: TestClock())
        gate.record(headers: ["ratelimit": #""day";r=0;t=86400"#])
        #expect(gate.reserve() == .seconds(30))
    }

    @Test func twoSpentQuotasHoldRequestsUntilTheLaterReset() throws {
        let clock = TestClock()
        let gate = try RateLimitGate(maximumWait: .seconds(200), clock: clock)
        gate.record(headers: ["RateLimit": #""minute";r=0;t=10, "day";r=0;t=100"#])
        #expect(gate.reserve() == .seconds(100))
        clock.advance(by: .seconds(10))
        // The minute's quota is back, the day's is still spent for 90 s.
        #expect(gate.reserve() == .seconds(90))
        clock.advance(by: .seconds(90))
        #expect(gate.reserve() == .zero)
    }

    @Test func aSpentQuotaWithoutAResetDoesNotHideOneWithAReset() throws {
        let gate = try RateLimitGate(clock: TestClock())
        gate.record(headers: ["RateLimit": #""burst";r=0, "minute";r=0;t=30"#])
        #expect(gate.reserve() == .seconds(30))
    }

    @Test func eachRequestSpendsAUnitOfEveryQuota() throws {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        gate.record(headers: ["RateLimit": #""minute";r=5;t=60, "burst";r=2;t=1"#])
        #expect(gate.reserve() == .zero)
        #expect(gate.reserve() == .zero)
        // The burst quota is spent: wait for its reset, then the minute's 3 units remain.
        #expect(gate.reserve() == .seconds(1))
        clock.advance(by: .seconds(1))
        #expect(gate.reserve() == .zero)
        #expect(gate.reserve() == .zero)
        #expect(gate.reserve() == .zero)
        #expect(gate.reserve() == .seconds(59))
    }

    @Test func ignoresAMalformedField() throws {
        let gate = try RateLimitGate(clock: TestClock())
        gate.record(headers: ["RateLimit": #""day";r=0;t=5,"#])
        #expect(gate.reserve() == .zero)
    }

    @Test func backwardClockJumpNeverShortensTheWaitBelowTheReset() throws {
        let clock = TestClock()
        clock.advance(by: .seconds(100))
        let gate = try RateLimitGate(clock: clock)
        gate.record(headers: ["RateLimit": #""default";r=0;t=10"#])
        clock.rewind(by: .seconds(5))
        #expect(gate.reserve() == .seconds(15))
    }

    @Test func acquireWaitsOnTheClockAndCancellationEndsTheWait() async throws {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        gate.record(headers: ["RateLimit": #""default";r=0;t=10"#])
        let waiting = Task { try await gate.acquire() }
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(10)])
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }

        let second = Task { try await gate.acquire() }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(10))
        _ = try await second.value
    }

    /// Two requests go; the answer to the second says the quota is spent, then the slow
    /// answer to the first arrives, telling of the quota before the second spent it.
    @Test func aLateAnswerToAnEarlierRequestDoesNotReplaceWhatALaterOneSaid() async throws {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        let first = try await gate.acquire()
        let second = try await gate.acquire()
        #expect(first < second)
        gate.record(headers: ["RateLimit": #""default";r=0;t=30"#], for: second)
        gate.record(headers: ["RateLimit": #""default";r=5;t=30"#], for: first)
        #expect(gate.reserve() == .seconds(30), "the quota is spent: the late answer knew less")
    }

    /// The answer to the first of three requests let go on a quota of three tells of two left:
    /// the two requests sent after it spent them, so the quota is spent, not given back.
    @Test func aLateAnswerCountsTheRequestsSentAfterItsOwnAsSpent() async throws {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        gate.record(headers: ["RateLimit": #""default";r=3;t=60"#])
        let first = try await gate.acquire()
        _ = try await gate.acquire()
        _ = try await gate.acquire()
        gate.record(headers: ["RateLimit": #""default";r=2;t=60"#], for: first)
        #expect(gate.reserve() == .seconds(60))
    }

    /// Answered with more left than the requests sent since, the quota keeps the difference.
    @Test func aLateAnswerKeepsWhatTheLaterRequestsLeft() async throws {
        let gate = try RateLimitGate(clock: TestClock())
        let first = try await gate.acquire()
        _ = try await gate.acquire()
        gate.record(headers: ["RateLimit": #""default";r=2;t=60"#], for: first)
        #expect(gate.reserve() == .zero, "one of the two is left")
        #expect(gate.reserve() == .seconds(60))
    }

    @Test func anAnswerToALaterRequestReplacesWhatAnEarlierOneSaid() async throws {
        let gate = try RateLimitGate(clock: TestClock())
        let first = try await gate.acquire()
        let second = gate.ticket()
        gate.record(headers: ["RateLimit": #""default";r=0;t=30"#], for: first)
        gate.record(headers: ["RateLimit": #""default";r=1;t=30"#], for: second)
        #expect(gate.reserve() == .zero)
        #expect(gate.reserve() == .seconds(30))
    }

    /// A response recorded without a ticket counts as the answer to a request sent when it
    /// is recorded: later than every ticket issued before, earlier than every one after.
    @Test func aResponseRecordedWithoutATicketCountsAsSentWhenRecorded() async throws {
        let gate = try RateLimitGate(clock: TestClock())
        let before = try await gate.acquire()
        gate.record(headers: ["RateLimit": #""default";r=0;t=30"#])
        gate.record(headers: ["RateLimit": #""default";r=9;t=30"#], for: before)
        #expect(gate.reserve() == .seconds(30))
        let after = gate.ticket()
        #expect(before < after)
        gate.record(headers: ["RateLimit": #""default";r=1;t=30"#], for: after)
        #expect(gate.reserve() == .zero)
    }

    /// A request that waited for the reset is sent after the requests that went meanwhile: its
    /// ticket is issued when it may go.
    @Test func aTicketIsIssuedWhenTheRequestMayGo() async throws {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        gate.record(headers: ["RateLimit": #""default";r=0;t=10"#])
        let waiting = Task { try await gate.acquire() }
        await clock.waitForSleepers(count: 1)
        let meanwhile = gate.ticket()
        clock.advance(by: .seconds(10))
        let waited = try await waiting.value
        #expect(meanwhile < waited)
    }
}
