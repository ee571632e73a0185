import Foundation
import Resilience
import ResilienceTesting
import Testing

@Suite("RetryPolicy")
struct RetryPolicyTests {
    @Test func successOnFirstAttemptRunsOnceAndNeverSleeps() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(clock: clock)
        let calls = Counter()
        let value = try await policy.execute {
            calls.increment()
            return 42
        }
        #expect(value == 42)
        #expect(calls.value == 1)
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func retriesTransientFailuresOnTheExactBackoffSchedule() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 4,
            backoff: .exponential(initial: .seconds(1), maximum: .seconds(10)),
            jitter: .none,
            clock: clock
        )
        let calls = Counter()
        let call = Task {
            try await policy.execute {
                if calls.increment() < 4 { throw TransientError() }
                return "done"
            }
        }
        await advanceThroughSleeps(clock, count: 3)
        #expect(try await call.value == "done")
        #expect(calls.value == 4)
        #expect(clock.sleepRequests == [.seconds(1), .seconds(2), .seconds(4)])
    }

    @Test func jitteredScheduleMatchesThePreviewWithTheSameSeed() async throws {
        let clock = TestClock()
        let backoff = Backoff.exponential(initial: .milliseconds(100), maximum: .seconds(2))
        let policy = try RetryPolicy(
            maximumAttempts: 5, backoff: backoff, jitter: .decorrelated, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 2024))
        let call = Task { await policy.outcome { () async throws -> Int in throw TransientError() } }
        await advanceThroughSleeps(clock, count: 4)
        let outcome = await call.value
        let preview = RetryDelays(
            backoff: backoff, jitter: .decorrelated, generator: SeededRandomNumberGenerator(seed: 2024))
        #expect(clock.sleepRequests == Array(preview.prefix(4)))
        #expect(outcome.attempts == 5)
        #expect(outcome.stopReason == .exhausted)
    }

    @Test func exhaustedCallThrowsTheOperationsOwnErrorUnchanged() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let calls = Counter()
        let call = Task {
            try await policy.execute { () async throws -> Int in throw TransientError(id: calls.increment()) }
        }
        await advanceThroughSleeps(clock, count: 2)
        await #expect(throws: TransientError(id: 3)) { try await call.value }
        #expect(calls.value == 3)
    }

    @Test func permanentFailureIsNotRetried() async throws {
        let policy = try RetryPolicy(maximumAttempts: 5, clock: TestClock())
        let calls = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            calls.increment()
            throw PermanentError()
        }
        #expect(calls.value == 1)
        #expect(outcome.stopReason == .notRetryable)
        #expect(throws: PermanentError.self) { try outcome.get() }
    }

    @Test func customClassifierThatRetriesEverythingStillStopsOnHTTP429() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 10,
            classifier: .closure { _, _ in .retry },
            clock: clock
        )
        let calls = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            calls.increment()
            throw StatusError(status: 429, hint: .seconds(30))
        }
        #expect(calls.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
        #expect(outcome.retryAfter == .seconds(30))
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func http429CarriedByAnNSErrorIsNeverRetried() async throws {
        let policy = try RetryPolicy(maximumAttempts: 5, classifier: .closure { _, _ in .retry }, clock: TestClock())
        let calls = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            calls.increment()
            throw NSError(domain: "KiiCloud", code: 0, userInfo: ["kiiHttpStatus": 429])
        }
        #expect(calls.value == 1)
        #expect(outcome.stopReason == .tooManyRequests)
    }

    @Test func cloudKitRetryAfterMakesTheNextAttemptWaitAtLeastThatLong() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(10)), jitter: .none, clock: clock)
        let calls = Counter()
        let call = Task {
            try await policy.execute {
                if calls.increment() == 1 {
                    throw NSError(domain: "CKErrorDomain", code: 6, userInfo: ["CKRetryAfter": 7])
                }
                return true
            }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .milliseconds(6_999))
        #expect(calls.value == 1, "the retry must not run before the hint's 7 s")
        clock.advance(by: .milliseconds(1))
        #expect(try await call.value)
        #expect(calls.value == 2)
        #expect(clock.sleepRequests == [.seconds(7)])
    }

    @Test func hintLongerThanTheMaximumStopsAfterOneAttemptAndSurfacesTheHint() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 5, maximumRetryAfter: .seconds(60), clock: clock)
        let calls = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            calls.increment()
            throw NSError(domain: "CKErrorDomain", code: 6, userInfo: ["CKRetryAfter": 3_600])
        }
        #expect(calls.value == 1)
        #expect(outcome.stopReason == .retryAfterTooLong)
        #expect(outcome.retryAfter == .seconds(3_600))
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func classifierRetryAfterSetsAFloorUnderTheBackoff() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: .closure { _, _ in .retry(after: .seconds(3)) }, clock: clock)
        let call = Task { await policy.outcome { () async throws -> Int in throw TransientError() } }
        await advanceThroughSleeps(clock, count: 1)
        let outcome = await call.value
        #expect(clock.sleepRequests == [.seconds(3)])
        #expect(outcome.attempts == 2)
    }

    @Test func classifierCanNameTheStopReason() async throws {
        let policy = try RetryPolicy(
            classifier: .closure { _, _ in .doNotRetry(because: .authenticationRequired) }, clock: TestClock())
        let outcome = await policy.outcome { () async throws -> Int in throw TransientError() }
        #expect(outcome.stopReason == .authenticationRequired)
        #expect(outcome.attempts == 1)
    }

    @Test func classifierWithoutAnOpinionFallsBackToTheDefault() async throws {
        let policy = try RetryPolicy(maximumAttempts: 3, classifier: .closure { _, _ in nil }, clock: TestClock())
        let outcome = await policy.outcome { () async throws -> Int in throw StatusError(status: 404) }
        #expect(outcome.stopReason == .notRetryable)
        #expect(outcome.attempts == 1)
    }

    @Test func cancellationDuringBackoffEndsTheCallWithoutAnotherAttempt() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 5, backoff: .constant(.seconds(10)), jitter: .none, clock: clock)
        let calls = Counter()
        let call = Task {
            await policy.outcome { () async throws -> Int in
                calls.increment()
                throw TransientError()
            }
        }
        await clock.waitForSleepers(count: 1)
        call.cancel()
        let outcome = await call.value
        #expect(outcome.stopReason == .cancelled)
        #expect(outcome.attempts == 1)
        #expect(calls.value == 1)
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(clock.now == TestClock.Instant(offset: .zero), "it returned without the clock moving")
    }

    @Test func aCancelledTaskRunsTheFirstAttemptAsABareCallWould() async throws {
        let policy = try RetryPolicy(clock: TestClock())
        let calls = Counter()
        let started = AsyncStream<Void>.makeStream()
        let call = Task {
            for await _ in started.stream { break }
            return await policy.outcome { () async throws -> Int in
                calls.increment()
                return 1
            }
        }
        call.cancel()
        started.continuation.yield()
        let outcome = await call.value
        #expect(calls.value == 1)
        #expect(outcome.stopReason == .succeeded)
        #expect(try outcome.get() == 1)
    }

    @Test func aRetryNeverStartsInACancelledTask() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 5, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(100), clock: clock)
        let calls = Counter()
        let outcome = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await policy.outcome { () async throws -> Int in
                calls.increment()
                throw TransientError()
            }
        }.value
        #expect(calls.value == 1)
        #expect(outcome.attempts == 1)
        #expect(outcome.stopReason == .cancelled)
        #expect(throws: TransientError.self) { try outcome.get() }
        #expect(clock.sleepRequests.isEmpty, "a cancelled task starts no wait")
    }

    @Test func operationThrowingCancellationErrorIsNotRetried() async throws {
        let policy = try RetryPolicy(maximumAttempts: 5, classifier: .closure { _, _ in .retry }, clock: TestClock())
        let calls = Counter()
        let outcome = await policy.outcome { () async throws -> Int in
            calls.increment()
            throw CancellationError()
        }
        #expect(calls.value == 1)
        #expect(outcome.stopReason == .cancelled)
    }

    @Test func deadlineStopsRatherThanStartAWaitThatWouldPassIt() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(
            maximumAttempts: 10, backoff: .constant(.seconds(4)), jitter: .none, deadline: .seconds(10), clock: clock)
        let call = Task { await policy.outcome { () async throws -> Int in throw TransientError() } }
        await advanceThroughSleeps(clock, count: 2)
        let outcome = await call.value
        // Attempts at 0 s and 4 s and 8 s; a third wait would end at 12 s, past the 10 s deadline.
        #expect(outcome.attempts == 3)
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(clock.sleepRequests == [.seconds(4), .seconds(4)])
        #expect(outcome.elapsed == .seconds(8))
    }

    @Test func hintPastTheDeadlineStopsAtOnce() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 3, deadline: .seconds(5), clock: clock)
        let outcome = await policy.outcome { () async throws -> Int in
            throw StatusError(status: 503, hint: .seconds(30))
        }
        #expect(outcome.stopReason == .deadlineExceeded)
        #expect(outcome.retryAfter == .seconds(30))
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func budgetStopsRetriesUnderSustainedFailureAndRecoversAfterSuccesses() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 4, tokenRatio: 1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, budget: budget, clock: clock)
        let calls = Counter()
        let failing = { () async throws -> Int in
            calls.increment()
            throw TransientError()
        }
        // 4 tokens, retries allowed while more than 2 remain: the first call fails twice
        // (4 -> 3 -> 2) and its second retry is refused.
        let first = await policy.outcome(operation: failing)
        #expect(first.attempts == 2)
        #expect(first.stopReason == .budgetExhausted)
        // Now the bucket is at 2: a failure drops it to 1 and no retry is allowed.
        let second = await policy.outcome(operation: failing)
        #expect(second.attempts == 1)
        #expect(second.stopReason == .budgetExhausted)
        #expect(budget.tokens == 1)
        // The first attempt of a call is never gated.
        let gatedSuccess = try await policy.execute { 7 }
        #expect(gatedSuccess == 7)
        // Each success refunds one token: at 3 a retry is allowed, but the failure
        // that asks for it takes the bucket back to 2, so refill to the top first.
        _ = try await policy.execute { 8 }
        #expect(budget.tokens == 3)
        #expect(budget.allowsRetry)
        _ = try await policy.execute { 9 }
        #expect(budget.tokens == 4)
        let attempts = Counter()
        let recovered = await policy.outcome { () async throws -> Int in
            if attempts.increment() == 1 { throw TransientError() }
            return 9
        }
        #expect(recovered.attempts == 2)
        #expect(recovered.stopReason == .succeeded)
    }

    @Test func breakerRejectionsCostNoBudgetTokens() async throws {
        let clock = TestClock()
        let budget = try RetryBudget(maximumTokens: 4, tokenRatio: 1)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, budget: budget, clock: clock)
        let calls = Counter()
        let call = Task {
            await policy.outcome { () async throws -> Int in
                if calls.increment() < 3 {
                    throw CircuitBreakerOpenError(breakerName: "db", state: .open, retryAfter: .seconds(1))
                }
                return 1
            }
        }
        await advanceThroughSleeps(clock, count: 2)
        let outcome = await call.value
        #expect(outcome.stopReason == .succeeded)
        #expect(outcome.attempts == 3)
        #expect(budget.tokens == 4, "two rejections took no tokens")
        #expect(clock.sleepRequests == [.seconds(1), .seconds(1)])
    }

    @Test func observerSeesEveryFailureEveryRetryAndTheFinish() async throws {
        struct Observer: RetryObserver {
            let log: Recorder<String>
            func attemptFailed(_ event: RetryAttemptFailedEvent) { self.log.record("failed \(event.attempt)") }
            func retryScheduled(_ event: RetryScheduledEvent) {
                self.log.record("retry \(event.attempt) after \(event.delay)")
            }
            func callFinished(_ event: RetryCallFinishedEvent) {
                self.log.record("finished \(event.attempts) \(event.stopReason)")
            }
        }
        let clock = TestClock()
        let log = Recorder<String>()
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, observer: Observer(log: log),
            clock: clock)
        let calls = Counter()
        let call = Task {
            try await policy.execute {
                if calls.increment() < 3 { throw TransientError() }
                return 1
            }
        }
        await advanceThroughSleeps(clock, count: 2)
        _ = try await call.value
        #expect(
            log.values == [
                "failed 1", "retry 1 after 1.0 seconds", "failed 2", "retry 2 after 1.0 seconds",
                "finished 3 succeeded",
            ])
    }

    @Test func statisticsCountFailuresRetriesAndStops() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        _ = await policy.outcome { () async throws -> Int in throw TransientError() }
        _ = await policy.outcome { () async throws -> Int in throw PermanentError() }
        _ = try await policy.execute { 1 }
        let statistics = await policy.statistics
        #expect(statistics.failedAttempts == 3)
        #expect(statistics.retries == 1)
        #expect(statistics.stopReasons == [.exhausted: 1, .notRetryable: 1])
    }

    @Test(arguments: [Duration.zero, .seconds(-1)])
    func nonPositiveAttemptTimeoutIsAConfigurationErrorAndRunsNothing(timeout: Duration) async throws {
        let policy = try RetryPolicy(clock: TestClock())
        let calls = Counter()
        let outcome = await policy.outcome(attemptTimeout: timeout) { () async throws -> Int in
            calls.increment()
            return 1
        }
        #expect(calls.value == 0)
        #expect(outcome.attempts == 0)
        let error = try #require(outcome.result.failureValue as? ConfigurationError)
        #expect(error.setting == "attemptTimeout")
        await #expect(throws: ConfigurationError.self) {
            try await policy.execute(attemptTimeout: timeout) { 1 }
        }
    }

    @Test func attemptTimeoutCancelsASlowAttemptAndRetriesIt() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let calls = Counter()
        let call = Task {
            await policy.outcome(attemptTimeout: .seconds(5)) { () async throws -> String in
                if calls.increment() == 1 {
                    try await clock.sleep(for: .seconds(3_600))  // hangs until cancelled
                }
                return "second attempt"
            }
        }
        // The hanging attempt and its timer are both asleep.
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(5))
        // The hanging attempt may still be parked while it unwinds, so count requests:
        // the third sleep requested is the backoff.
        await clock.waitForSleepRequests(count: 3)
        #expect(clock.sleepRequests.last == .seconds(1))
        #expect(Set(clock.sleepRequests.prefix(2)) == [.seconds(3_600), .seconds(5)])
        clock.advance(by: .seconds(1))
        let outcome = await call.value
        #expect(try outcome.get() == "second attempt")
        #expect(outcome.attempts == 2)
        #expect(calls.value == 2)
    }
}

@MainActor
final class ProfileViewModel {
    var loads = 0
    var name = ""
}

@Suite("RetryPolicy on the main actor")
struct RetryPolicyMainActorTests {
    @MainActor
    @Test func mainActorCallerMutatesItsStateInsideTheOperation() async throws {
        let model = ProfileViewModel()
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let driver = Task.detached { await advanceThroughSleeps(clock, count: 1) }
        let name = try await policy.execute {
            MainActor.preconditionIsolated()
            model.loads += 1
            if model.loads == 1 { throw TransientError() }
            model.name = "Ada"
            return model.name
        }
        await driver.value
        #expect(name == "Ada")
        #expect(model.loads == 2)
    }
}

extension Result {
    /// The error, or `nil` on success.
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
