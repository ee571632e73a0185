import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// The failure a hedged call ends with when no attempt succeeds, and what a failed
/// attempt's retry-after hint does to the next attempt.
@Suite("Hedging: the failure a call ends with, and the quiet a server asks for")
struct HedgingFailureTests {
    /// The shapes a 429 with a thirty-second hint arrives in.
    enum TooManyRequests: CaseIterable, Sendable, CustomTestStringConvertible {
        case statusError
        case wrappedInNSError
        case insideAUsersEnum

        static let hint: Duration = .seconds(30)

        var error: any Error {
            let status = StatusError(status: 429, hint: Self.hint)
            switch self {
            case .statusError: return status
            case .wrappedInNSError: return NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: status])
            case .insideAUsersEnum: return SilentAppError.transport(status)
            }
        }

        var testDescription: String {
            switch self {
            case .statusError: "a status error"
            case .wrappedInNSError: "under NSUnderlyingErrorKey"
            case .insideAUsersEnum: "inside a user's enum"
            }
        }
    }

    /// One hedged call whose first attempt fails with `first` at t = 2, while the hedge
    /// started at t = 1 still runs; the hedge then fails with `second` at t = 4. Any
    /// later attempt (a policy around sending the call again) returns 7 at once.
    struct Scene: Sendable {
        let clock = TestClock()
        let runs = Counter()
        let firstFailed = Gate()
        let hedging: Hedging
        let first: any Error
        let second: any Error

        init(first: any Error, second: any Error) throws {
            self.hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: self.clock)
            self.first = first
            self.second = second
        }

        /// The hedged call.
        func call() async throws -> Int {
            try await self.hedging.execute { () async throws -> Int in
                switch self.runs.increment() {
                case 1:
                    try await self.clock.sleep(for: .seconds(2))
                    self.firstFailed.open()
                    throw self.first
                case 2:
                    try await self.clock.sleep(for: .seconds(3))
                    throw self.second
                default:
                    return 7
                }
            }
        }

        /// Moves the clock through the scene.
        func play() async {
            await self.clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
            self.clock.advance(by: .seconds(1))  // t = 1: the hedge starts
            await self.clock.waitForSleepRequests(count: 3)  // the first attempt's, the timer's, the hedge's
            await self.clock.waitForSleepers(count: 2)
            self.clock.advance(by: .seconds(1))  // t = 2: the first attempt fails
            await self.firstFailed.wait()
            self.clock.advance(by: .seconds(2))  // t = 4: the hedge fails
        }
    }

    // MARK: - The failure the call ends with

    @Test(
        "A policy around hedging never retries a 429 one attempt got while another ran",
        arguments: TooManyRequests.allCases)
    func aPolicyAroundHedgingNeverRetriesA429OneAttemptGot(shape: TooManyRequests) async throws {
        let scene = try Scene(first: shape.error, second: StatusError(status: 503))
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: scene.clock)
        let call = Task { await policy.outcome { try await scene.call() } }
        await scene.play()
        let outcome = await call.value
        #expect(outcome.stopReason == .tooManyRequests, "stopped with \(outcome.stopReason)")
        #expect(outcome.retryAfter == TooManyRequests.hint)
        #expect(outcome.attempts == 1)
        #expect(scene.runs.value == 2, "the operation ran \(scene.runs.value) times")
    }

    @Test(
        "A breaker around hedging opens for the 429 one attempt got while another ran",
        arguments: TooManyRequests.allCases)
    func aBreakerAroundHedgingOpensForThe429OneAttemptGot(shape: TooManyRequests) async throws {
        let scene = try Scene(first: shape.error, second: StatusError(status: 503))
        let breaker = try CircuitBreaker(name: "hedged", tripRule: .consecutiveFailures(5), clock: scene.clock)
        let call = Task { try await breaker.execute { try await scene.call() } }
        await scene.play()
        guard case .failure(let error) = await call.result else {
            Issue.record("the hedged call succeeded")
            return
        }
        #expect(FailureAnalysis(error).isTooManyRequests, "the hedged call ended with \(error)")
        let snapshot = breaker.snapshot()
        #expect(snapshot.state == .open, "the server's 429 pushback never reached the breaker")
        #expect(snapshot.remainingOpenTime == TooManyRequests.hint)
    }

    @Test func theCallEndsWithThe429AsTheOperationThrewItWhateverFailsAfter() async throws {
        let tooMany = StatusError(status: 429, hint: .seconds(7))
        let scene = try Scene(first: tooMany, second: StatusError(status: 503, hint: .seconds(60)))
        let call = Task { try await scene.call() }
        await scene.play()
        let error = await #expect(throws: StatusError.self) { try await call.value }
        #expect(error == tooMany)
    }

    @Test func aPolicyAroundHedgingDoesNotResendARequestThatSaidItIsNotIdempotent() async throws {
        let post = HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST"))
        let scene = try Scene(first: post, second: TransientError())
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: scene.clock)
        let call = Task { await policy.outcome { try await scene.call() } }
        await scene.play()
        let outcome = await call.value
        #expect(outcome.stopReason == .notIdempotent, "stopped with \(outcome.stopReason)")
        #expect(scene.runs.value == 2, "the operation ran \(scene.runs.value) times")
    }

    @Test func aFailureWithARetryAfterHintIsKeptOverALaterPlainFailure() async throws {
        let unavailable = StatusError(status: 503, hint: .seconds(30))
        let scene = try Scene(first: unavailable, second: TransientError())
        let call = Task { try await scene.call() }
        await scene.play()
        let error = await #expect(throws: StatusError.self) { try await call.value }
        #expect(error == unavailable)
        #expect(scene.runs.value == 2)
    }

    // MARK: - A failure the rules end the call on ends it at once

    /// A hedged call whose first attempt's request hangs for 30 s, then fails with `late`; its
    /// hedge, at t = 3, fails with `early`; any later request succeeds. `wrap` runs each attempt
    /// (a policy inside, say). Records each request and whether the hung one was cancelled.
    struct HungFirstAttempt: Sendable {
        let clock = TestClock()
        let sends = Recorder<String>()
        let hedging: Hedging
        let early: any Error
        let late: any Error

        init(early: any Error, late: any Error = URLError(.timedOut)) throws {
            self.hedging = try Hedging(delay: .fixed(.seconds(3)), maximumHedges: 1, clock: self.clock)
            self.early = early
            self.late = late
        }

        /// One request: the first hangs, the second fails with `early`, any other succeeds.
        func request() async throws -> Int {
            let number = self.sends.values.count
            switch number {
            case 0:
                self.sends.record("hang")
                do {
                    try await self.clock.sleep(for: .seconds(30))
                } catch {
                    self.sends.record("hang cancelled")
                    throw error
                }
                throw self.late
            case 1:
                self.sends.record("hedge")
                throw self.early
            default:
                self.sends.record("another")
                return number
            }
        }

        /// Moves the clock to t = 3, when the hedge starts.
        func startTheHedge() async {
            await self.clock.waitForSleepers(count: 2)  // the hung request and the hedge timer
            self.clock.advance(by: .seconds(3))
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func aHedgeAnswered429EndsTheCallAtOnceAndAPolicyInTheRunningAttemptSendsNothingMore() async throws {
        let scene = try HungFirstAttempt(early: HTTPResponseError(statusCode: 429, headers: ["retry-after": "60"]))
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: scene.clock)
        let pipeline = ResiliencePipeline {
            scene.hedging
            inner
        }
        async let ended: (Result<Int, any Error>, Duration) = {
            let result = await Result { try await pipeline.execute { try await scene.request() } }
            return (result, scene.clock.now.offset)
        }()
        await scene.startTheHedge()
        let (result, at) = await ended
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
        #expect(at == .seconds(3), "the 429 came at t = 3; the call ended at \(at)")
        guard case .failure(let error) = result else {
            Issue.record("a 429 ended in \(result)")
            return
        }
        #expect(FailureAnalysis(error).isTooManyRequests, "ended with \(error)")
        #expect(scene.clock.sleeperCount == 0)
        #expect(scene.hedging.calls.withLock { $0.count } == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func aPolicyAroundReportsTheHedges429WhenItCameNotWhenTheHungAttemptFailed() async throws {
        let scene = try HungFirstAttempt(
            early: HTTPResponseError(statusCode: 429), late: URLError(.networkConnectionLost))
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: scene.clock)
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: scene.clock)
        async let outcome = outer.outcome {
            try await scene.hedging.execute { try await inner.execute { try await scene.request() } }
        }
        await scene.startTheHedge()
        let settled = await outcome
        #expect(settled.stopReason == .tooManyRequests, "stopped with \(settled.stopReason)")
        #expect(settled.attempts == 1)
        #expect(settled.elapsed == .seconds(3))
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
    }

    @Test(.timeLimit(.minutes(5)))
    func aHedgeThatSaysItsRequestIsNotIdempotentEndsTheCallAtOnce() async throws {
        let post = HTTPResponseError(statusCode: 503, requestIdempotency: .http(method: "POST"))
        let scene = try HungFirstAttempt(early: post)
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: scene.clock)
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: scene.clock)
        async let outcome = outer.outcome {
            try await scene.hedging.execute { try await inner.execute { try await scene.request() } }
        }
        await scene.startTheHedge()
        let settled = await outcome
        #expect(settled.stopReason == .notIdempotent, "stopped with \(settled.stopReason)")
        #expect(settled.elapsed == .seconds(3))
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
    }

    @Test(.timeLimit(.minutes(5)))
    func aBreakerInTheAttemptA429SupersededCountsItsEndAsNothing() async throws {
        // The hung request's transport reports its cancellation as a lost connection, which a
        // breaker would count were it not read as the attempt's supersession.
        let scene = try HungFirstAttempt(early: StatusError(status: 429))
        let breaker = try CircuitBreaker(name: "inner", tripRule: .consecutiveFailures(1), clock: scene.clock)
        async let ended = Result {
            try await scene.hedging.execute { () async throws -> Int in
                if scene.sends.values.isEmpty {
                    return try await breaker.execute {
                        do {
                            return try await scene.request()
                        } catch is CancellationError {
                            throw URLError(.networkConnectionLost)
                        }
                    }
                }
                return try await scene.request()
            }
        }
        await scene.startTheHedge()
        let result = await ended
        #expect(throws: StatusError(status: 429)) { try result.get() }
        #expect(scene.sends.values == ["hang", "hedge", "hang cancelled"])
        #expect(breaker.snapshot().state == .closed, "the superseded attempt was counted as a failure")
    }

    @Test func aFailureTheRulesEndTheCallOnSupersedesTheRunningAttemptsAndLeavesOneThatHadReturned() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2)
        let clock = TestClock()
        var call = HedgedCall<Int>(hedgesLeft: 2)
        let (_, failed) = hedging.attemptScope(CallScope())
        let (_, returned) = hedging.attemptScope(CallScope())
        let (_, running) = hedging.attemptScope(CallScope())
        failed.complete()
        returned.complete()
        let failing = Task { () throws -> Timed<Int> in throw StatusError(status: 429) }
        let succeeding = Task { () throws -> Timed<Int> in Timed(value: 2, latency: .seconds(1)) }
        call.add(HedgedAttempt(task: failing, signal: failed))
        call.add(HedgedAttempt(task: succeeding, signal: returned))
        let hung = Task { () async throws -> Timed<Int> in
            try await clock.sleep(for: .seconds(3_600))
            return Timed(value: 3, latency: .seconds(3_600))
        }
        call.add(HedgedAttempt(task: hung, signal: running))
        await clock.waitForSleepers(count: 1)
        call.taken = 1  // the 429, taken
        // The attempt whose operation had returned is left for the call to take; its success wins.
        #expect(call.supersedeRunning() == 0b010)
        #expect(!returned.signal.hasFired)
        #expect(running.signal.hasFired, "the running attempt was not superseded")
        #expect(hung.isCancelled)
        hung.cancel()  // so that the test ends either way
        await #expect(throws: CancellationError.self) { try await hung.value }
        #expect(try await succeeding.value.value == 2)
    }

    // MARK: - The quiet a retry-after hint asks for

    @Test func aHintLongerThanTheHedgeDelayStartsNoMoreAttempts() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(5)), maximumHedges: 3, clock: clock)
        let runs = Counter()
        let unavailable = StatusError(status: 503, hint: .seconds(30))
        let error = await #expect(throws: StatusError.self) {
            try await hedging.execute { () async throws -> Int in
                if runs.increment() == 1 { throw unavailable }
                return 1
            }
        }
        #expect(error == unavailable)
        #expect(runs.value == 1, "another request went out although the server asked for 30 s")
        #expect(clock.sleeperCount == 0)
        #expect(hedging.calls.withLock { $0.count } == 0)
    }

    @Test func aShortHintStartsTheNextAttemptOnceItHasPassedNotAtOnce() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(5)), maximumHedges: 1, clock: clock)
        let starts = Recorder<Duration>()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                starts.record(clock.now.offset)
                if starts.values.count == 1 {
                    try await clock.sleep(for: .seconds(1))
                    throw StatusError(status: 503, hint: .seconds(2))
                }
                try await clock.sleep(for: .zero)  // a request the test can wait for, should this start early
                return 2
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer, due at t = 5
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(1))  // t = 1: the first attempt fails, asking for 2 s
        await clock.waitForSleepRequests(count: requests + 1)
        #expect(starts.values.count == 1, "the next attempt started at once")
        #expect(clock.sleepRequests.last == .seconds(2), "the timer waits for the hint")
        clock.advance(by: .milliseconds(1_999))
        #expect(starts.values.count == 1)
        clock.advance(by: .milliseconds(1))  // t = 3: the hint has passed
        #expect(try await call.value == 2)
        #expect(starts.values == [.zero, .seconds(3)])
        #expect(clock.sleeperCount == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func aHintHoldsBackAHedgeThatWasDueBeforeItPassed() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(2)), maximumHedges: 2, clock: clock)
        let starts = Recorder<Duration>()
        let runs = Counter()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                starts.record(clock.now.offset)
                switch runs.increment() {
                case 1:
                    try await clock.sleep(for: .seconds(3_600))
                    return 1
                case 2:
                    try await clock.sleep(for: .seconds(1))
                    throw StatusError(status: 503, hint: .milliseconds(1_500))
                default:
                    return 3
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
        clock.advance(by: .seconds(2))  // t = 2: the first hedge starts; the next is due at t = 4
        await clock.waitForSleepers(count: 3)  // the first attempt, the hedge, the timer
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(1))  // t = 3: the hedge fails, asking for quiet until t = 4.5
        await clock.waitForSleepRequests(count: requests + 1)  // the timer, moved
        #expect(clock.sleepRequests.last == .milliseconds(1_500), "the next hedge waits for the hint")
        clock.advance(by: .seconds(1))  // t = 4: the hedge was due
        #expect(runs.value == 2)
        clock.advance(by: .milliseconds(500))  // t = 4.5
        #expect(try await call.value == 3)
        #expect(starts.values == [.zero, .seconds(2), .milliseconds(4_500)])
        #expect(clock.sleeperCount == 0)
    }

    // MARK: - A hint the call heard holds back the policies in its running attempts

    /// A hedged call, hedge delay 0.5 s, whose two attempts each run a policy. The first
    /// attempt's request fails at t = 1 with a 30 s hint its policy will not wait for (it waits
    /// 10 s at most), so the attempt fails with it; the second attempt's request, sent at
    /// t = 0.5, fails at t = 2 with no hint, and its policy, which waits `patience` at most for a
    /// hint, would send again after its 1 s backoff. Any later request succeeds.
    struct HeardHint: Sendable {
        let clock = TestClock()
        let hedging: Hedging
        let strict: RetryPolicy
        let patient: RetryPolicy
        let runs = Counter()
        /// When the second attempt's policy sent its requests.
        let secondSends = Recorder<Duration>()
        static let hint: Duration = .seconds(30)

        init(patience: Duration) throws {
            self.hedging = try Hedging(delay: .fixed(.milliseconds(500)), maximumHedges: 1, clock: self.clock)
            self.strict = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(10),
                clock: self.clock)
            self.patient = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: patience,
                clock: self.clock)
        }

        /// The hedged call.
        func call() async throws -> Int {
            try await self.hedging.execute { () async throws -> Int in
                if self.runs.increment() == 1 {
                    return try await self.strict.execute { () async throws -> Int in
                        try await self.clock.sleep(for: .seconds(1))
                        throw StatusError(status: 503, hint: Self.hint)
                    }
                }
                return try await self.patient.execute { () async throws -> Int in
                    self.secondSends.record(self.clock.now.offset)
                    if self.secondSends.values.count == 1 {
                        try await self.clock.sleep(for: .milliseconds(1_500))
                        throw StatusError(status: 503)
                    }
                    return 7
                }
            }
        }

        /// Moves the clock to t = 2, when the second attempt's request fails, once the call has
        /// taken the first attempt's failure.
        func playToTheSecondFailure() async throws {
            await self.clock.waitForSleepers(count: 2)  // the first request and the hedge timer
            self.clock.advance(by: .milliseconds(500))  // t = 0.5: the hedge starts
            await self.clock.waitForSleepRequests(count: 3)  // the first request's, the timer's, the second's
            await self.clock.waitForSleepers(count: 2)
            self.clock.advance(by: .milliseconds(500))  // t = 1: the first attempt fails, asking for 30 s
            try await yieldUntil { self.hedging.failuresTaken.load(ordering: .acquiring) > 0 }
            self.clock.advance(by: .seconds(1))  // t = 2: the second attempt's request fails
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func aHintOneAttemptGotHoldsThePolicyInAnotherRunningAttemptBackUntilItHasPassed() async throws {
        let scene = try HeardHint(patience: .seconds(60))
        let call = Task { try await scene.call() }
        try await scene.playToTheSecondFailure()
        await scene.clock.waitForSleepRequests(count: 4)  // the second attempt's policy waits
        #expect(scene.clock.sleepRequests.last == .seconds(29), "the policy waits its backoff, not the hint")
        scene.clock.advance(by: .milliseconds(28_999))
        await Task.yield()
        #expect(scene.secondSends.values == [.milliseconds(500)], "sent again before the hint had passed")
        scene.clock.advance(by: .milliseconds(1))  // t = 31: the hint has passed
        #expect(try await call.value == 7)
        #expect(scene.secondSends.values == [.milliseconds(500), .seconds(31)])
        #expect(scene.clock.sleeperCount == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func aPolicyThatWillNotWaitOutAHintAnotherAttemptGotEndsItsAttemptInstead() async throws {
        let scene = try HeardHint(patience: .seconds(20))
        let endedAt = Recorder<Duration>()
        let call = Task { () async -> Result<Int, any Error> in
            let result = await Result { try await scene.call() }
            endedAt.record(scene.clock.now.offset)
            return result
        }
        try await scene.playToTheSecondFailure()
        // Either the call ends now, or the second attempt's policy waits before sending again.
        try await yieldUntil { !endedAt.values.isEmpty || scene.clock.sleepRequests.count >= 4 }
        if scene.clock.sleepRequests.count >= 4 { scene.clock.advance(by: scene.clock.sleepRequests[3]) }
        let result = await call.value
        #expect(throws: StatusError(status: 503, hint: HeardHint.hint)) { try result.get() }
        #expect(endedAt.values == [.seconds(2)], "the call ended at \(endedAt.values)")
        #expect(scene.secondSends.values == [.milliseconds(500)], "sent again before the hint had passed")
    }

    @Test(.timeLimit(.minutes(5)))
    func aPolicyAroundAHedgedCallStillWaitsOutTheHintTheCallEndedWith() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let sends = Recorder<Duration>()
        async let outcome = policy.outcome {
            try await hedging.execute { () async throws -> Int in
                sends.record(clock.now.offset)
                if sends.values.count == 1 { throw StatusError(status: 503, hint: .seconds(30)) }
                return 7
            }
        }
        try await yieldUntil { clock.sleepRequests.contains(.seconds(30)) }  // the policy waits out the hint
        clock.advance(by: .milliseconds(29_999))
        #expect(sends.values == [.zero])
        clock.advance(by: .milliseconds(1))
        let settled = await outcome
        #expect(try settled.get() == 7)
        #expect(sends.values == [.zero, .seconds(30)])
    }
    /// A hedged call, hedge delay 0.5 s, whose two attempts each run a policy. The first
    /// attempt's request fails at t = 1 with a 30 s hint its policy will not wait for; the
    /// second attempt's request, sent at t = 0.5, fails at t = 0.6 with no hint, and its policy
    /// (observed, run for its outcome) is waiting its 1 s backoff when the call hears the hint.
    /// Any later request succeeds.
    struct HintHeardWhileWaiting: Sendable {
        let clock = TestClock()
        let hedging: Hedging
        let strict: RetryPolicy
        let patient: RetryPolicy
        let log = RetryEventLog()
        let runs = Counter()
        let secondSends = Recorder<Duration>()
        /// The outcome of the second attempt's policy.
        let outcomes = Recorder<RetryOutcome<Int>>()

        init(patience: Duration) throws {
            self.hedging = try Hedging(delay: .fixed(.milliseconds(500)), maximumHedges: 1, clock: self.clock)
            self.strict = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(10),
                clock: self.clock)
            self.patient = try RetryPolicy(
                name: "patient", maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none,
                maximumRetryAfter: patience, observer: self.log, clock: self.clock)
        }

        func call() async throws -> Int {
            try await self.hedging.execute { () async throws -> Int in
                if self.runs.increment() == 1 {
                    return try await self.strict.execute { () async throws -> Int in
                        try await self.clock.sleep(for: .seconds(1))
                        throw StatusError(status: 503, hint: .seconds(30))
                    }
                }
                let outcome = await self.patient.outcome { () async throws -> Int in
                    self.secondSends.record(self.clock.now.offset)
                    if self.secondSends.values.count == 1 {
                        try await self.clock.sleep(for: .milliseconds(100))
                        throw StatusError(status: 503)
                    }
                    return 7
                }
                self.outcomes.record(outcome)
                return try outcome.get()
            }
        }

        /// Moves the clock to t = 1.6, when the second attempt's policy ends its backoff, having
        /// heard of the hint at t = 1.
        func playToTheEndOfTheBackoff() async throws {
            await self.clock.waitForSleepers(count: 2)  // the first request and the hedge timer
            self.clock.advance(by: .milliseconds(500))  // t = 0.5: the hedge starts
            await self.clock.waitForSleepRequests(count: 3)
            await self.clock.waitForSleepers(count: 2)
            self.clock.advance(by: .milliseconds(100))  // t = 0.6: the second request fails
            await self.clock.waitForSleepRequests(count: 4)  // its policy waits its backoff
            await self.clock.waitForSleepers(count: 2)
            self.clock.advance(by: .milliseconds(400))  // t = 1: the first attempt fails, asking for 30 s
            try await yieldUntil { self.hedging.failuresTaken.load(ordering: .acquiring) > 0 }
            self.clock.advance(by: .milliseconds(600))  // t = 1.6: the backoff ends
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func theObserverAndTheOutcomeOfAPolicyHeldBackWhileWaitingReportTheHintAndTheLongerWait() async throws {
        let scene = try HintHeardWhileWaiting(patience: .seconds(60))
        let call = Task { try await scene.call() }
        try await scene.playToTheEndOfTheBackoff()
        await scene.clock.waitForSleepRequests(count: 5)
        #expect(scene.clock.sleepRequests.last == .milliseconds(29_400))
        scene.clock.advance(by: .milliseconds(29_400))  // t = 31
        #expect(try await call.value == 7)
        #expect(scene.secondSends.values == [.milliseconds(500), .seconds(31)])
        #expect(
            scene.log.lines.values == [
                "patient failed 1", "patient waits 1.0 seconds", "patient waits 29.4 seconds",
                "patient succeeded after 2",
            ])
        #expect(scene.outcomes.values.map(\.retryAfter) == [.milliseconds(29_400)])
    }

    @Test(.timeLimit(.minutes(5)))
    func theOutcomeOfAPolicyThatStopsForAHintHeardWhileWaitingReportsTheHint() async throws {
        let scene = try HintHeardWhileWaiting(patience: .seconds(20))
        let call = Task { await Result { try await scene.call() } }
        try await scene.playToTheEndOfTheBackoff()
        let result = await call.value
        #expect(throws: StatusError(status: 503, hint: .seconds(30))) { try result.get() }
        #expect(scene.secondSends.values == [.milliseconds(500)])
        #expect(scene.outcomes.values.map(\.stopReason) == [.retryAfterTooLong])
        #expect(scene.outcomes.values.map(\.retryAfter) == [.milliseconds(29_400)])
        #expect(
            scene.log.lines.values == [
                "patient failed 1", "patient waits 1.0 seconds", "patient retryAfterTooLong after 1",
            ])
    }

    @Test(.timeLimit(.minutes(5)))
    func theOutcomeOfAPolicyThatStopsForAHintHeardBeforeItsFailureReportsTheHint() async throws {
        let scene = try HeardHint(patience: .seconds(20))
        let outcomes = Recorder<RetryOutcome<Int>>()
        let call = Task { () async -> Result<Int, any Error> in
            await Result {
                try await scene.hedging.execute { () async throws -> Int in
                    if scene.runs.increment() == 1 {
                        return try await scene.strict.execute { () async throws -> Int in
                            try await scene.clock.sleep(for: .seconds(1))
                            throw StatusError(status: 503, hint: HeardHint.hint)
                        }
                    }
                    let outcome = await scene.patient.outcome { () async throws -> Int in
                        try await scene.clock.sleep(for: .milliseconds(1_500))
                        throw StatusError(status: 503)
                    }
                    outcomes.record(outcome)
                    return try outcome.get()
                }
            }
        }
        try await scene.playToTheSecondFailure()  // t = 2: 29 s of the hint are left
        let result = await call.value
        #expect(throws: StatusError(status: 503, hint: HeardHint.hint)) { try result.get() }
        #expect(outcomes.values.map(\.stopReason) == [.retryAfterTooLong])
        #expect(outcomes.values.map(\.retryAfter) == [.seconds(29)])
    }

    @Test func aCallerWhoCancelsWhileTheCallWaitsForAHintEndsItAtOnce() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(5)), maximumHedges: 1, clock: clock)
        let runs = Counter()
        let unavailable = StatusError(status: 503, hint: .seconds(2))
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                if runs.increment() == 1 {
                    try await clock.sleep(for: .seconds(1))
                    throw unavailable
                }
                try await clock.sleep(for: .zero)  // a request the test can wait for, should this start early
                return 2
            }
        }
        await clock.waitForSleepers(count: 2)
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(1))
        await clock.waitForSleepRequests(count: requests + 1)  // waiting for the hint to pass
        call.cancel()
        // The caller gave up: the call ends as the caller's cancellation, as a policy's wait does.
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(runs.value == 1)
        #expect(clock.sleeperCount == 0)
        #expect(hedging.calls.withLock { $0.count } == 0)
    }
}
