import Foundation
import Resilience
import ResilienceTesting
import Testing

extension Reliability {
    /// The retry engine at the edges of time: attempt numbers near `Int.max`,
    /// durations near the largest representable, hints at the maximum, huge
    /// deadlines and clocks that jump. Nothing traps or overflows; everything clamps
    /// to `0...Duration.resilienceMaximum` (about 146 years).
    @Suite("Time edge cases", .timeLimit(.minutes(5)))
    struct TimeEdgeTests {
        static let hugeBackoffs: [Backoff] = [
            .default,
            .constant(.seconds(Int64.max)),
            .constant(Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999)),
            .linear(initial: .seconds(1), increment: .seconds(Int64.max), maximum: .seconds(Int64.max)),
            .linear(initial: .seconds(Int64.max), increment: .zero, maximum: .seconds(Int64.max)),
            .exponential(initial: .seconds(1), multiplier: 1.000_000_1, maximum: .seconds(Int64.max)),
            .exponential(initial: .nanoseconds(1), multiplier: .greatestFiniteMagnitude, maximum: .seconds(Int64.max)),
            .exponential(initial: .seconds(Int64.max), multiplier: 1, maximum: .seconds(Int64.max)),
        ]

        static let jitters: [Jitter] = [.none, .full, .equal, .proportional(0.2), .proportional(1), .decorrelated]

        @Test("Backoff delays for attempt numbers near Int.max reach the cap without trapping", arguments: hugeBackoffs)
        func backoffAtIntMax(_ backoff: Backoff) {
            let cap = Swift.min(backoff.maximum, .resilienceMaximum)
            for attempt in [Int.max, Int.max - 1, 10_000, 64, 63] {
                let delay = backoff.delay(forAttempt: attempt)
                #expect(delay >= .zero && delay <= cap, "attempt \(attempt): \(delay)")
            }
            #expect(backoff.delay(forAttempt: Int.max) == cap)
            #expect(backoff.delay(forAttempt: Int.min) == backoff.delay(forAttempt: 0))
        }

        @Test("A backoff configured beyond the package maximum yields at most the package maximum")
        func backoffClampsHugeConfiguration() {
            #expect(Backoff.constant(.seconds(Int64.max)).delay(forAttempt: 0) == .resilienceMaximum)
            let exponential = Backoff.exponential(initial: .seconds(1), maximum: .seconds(Int64.max))
            #expect(exponential.delay(forAttempt: 3) == .seconds(8))
            #expect(exponential.delay(forAttempt: 1_000) == .resilienceMaximum)
            let linear = Backoff.linear(initial: .zero, increment: .seconds(Int64.max), maximum: .seconds(Int64.max))
            #expect(linear.delay(forAttempt: 0) == .zero)
            #expect(linear.delay(forAttempt: 1) == .resilienceMaximum)
        }

        @Test("Jittered delays stay inside their documented range at every edge", arguments: jitters, hugeBackoffs)
        func jitterStaysInRange(_ jitter: Jitter, _ backoff: Backoff) {
            var generator = SeededRandomNumberGenerator(seed: 7)
            let previousDelays: [Duration?] = [nil, .zero, .seconds(1), .resilienceMaximum, .seconds(Int64.max)]
            for attempt in [0, 1, 62, 10_000, Int.max] {
                let range = jitter.range(for: backoff, attempt: attempt)
                #expect(range.lowerBound >= .zero && range.upperBound <= .resilienceMaximum)
                for previous in previousDelays {
                    let delay = jitter.delay(for: backoff, attempt: attempt, previous: previous, using: &generator)
                    #expect(range.contains(delay), "attempt \(attempt), previous \(String(describing: previous))")
                }
            }
        }

        /// Backoffs and jitters a policy would reject can still be built and used on
        /// their own (previewing with ``RetryDelays``, say). They used to trap:
        /// `Double.random(in:)` on an infinite span and `ClosedRange` with its
        /// bounds inverted, and `Jitter.none` returned negative delays.
        @Test(
            "Unvalidated backoff and jitter never trap and never go negative",
            arguments: [
                (Jitter.proportional(1e308), Backoff.constant(.seconds(1))),
                (.proportional(-2), .constant(.seconds(1))),
                (.proportional(.nan), .constant(.seconds(1))),
                (.proportional(.infinity), .constant(.seconds(1))),
                (.decorrelated, .exponential(initial: .seconds(10), maximum: .seconds(1))),
                (.decorrelated, .constant(.seconds(-5))),
                (.equal, .constant(.seconds(-1))),
                (.none, .linear(initial: .seconds(-3), increment: .seconds(-1), maximum: .seconds(-2))),
                (.full, .exponential(initial: .seconds(1), multiplier: .nan, maximum: .seconds(4))),
                (.none, .exponential(initial: .seconds(1), multiplier: -3, maximum: .seconds(4))),
            ])
        func unvalidatedConfigurationIsTotal(_ jitter: Jitter, _ backoff: Backoff) {
            var delays = RetryDelays(backoff: backoff, jitter: jitter, generator: SeededRandomNumberGenerator(seed: 1))
            for (attempt, delay) in zip(0..., delays.prefix(8)) {
                let range = jitter.range(for: backoff, attempt: attempt)
                #expect(range.lowerBound >= .zero)
                #expect(delay >= .zero && delay <= .resilienceMaximum)
            }
            _ = delays.next()
        }

        /// Found by the fuzzer: draws are made in `Double` seconds, and rounding them back
        /// to a `Duration` used to land a nanosecond or so outside the documented range.
        @Test(
            "Jittered delays stay in range when durations carry more precision than a Double",
            arguments: jitters,
            [
                Duration(secondsComponent: 503, attosecondsComponent: 26_374_703_210_400_000),
                Duration(secondsComponent: 999_999_999, attosecondsComponent: 999_999_999_999_999_999),
                Duration(secondsComponent: 0, attosecondsComponent: 3_000_000_001),
                .nanoseconds(3),
            ])
        func jitterStaysInRangeBelowDoublePrecision(_ jitter: Jitter, _ delay: Duration) {
            var generator = SeededRandomNumberGenerator(seed: 11)
            let backoffs: [Backoff] = [
                .constant(delay), .linear(initial: delay, increment: delay, maximum: delay * 3),
            ]
            for backoff in backoffs {
                var previous: Duration?
                for attempt in 0..<200 {
                    let range = jitter.range(for: backoff, attempt: attempt % 4)
                    let drawn = jitter.delay(
                        for: backoff, attempt: attempt % 4, previous: previous, using: &generator)
                    #expect(range.contains(drawn), "\(drawn) outside \(range)")
                    previous = drawn
                }
            }
        }

        // MARK: - Policies at the edges

        @Test("maximumAttempts Int.max retries until the operation succeeds")
        func intMaxAttempts() async throws {
            let policy = try RetryPolicy(
                maximumAttempts: .max, backoff: .constant(.zero), jitter: .none, clock: TestClock())
            let attempts = ReliabilityCounter()
            let outcome = await policy.outcome {
                if attempts.increment() < 50 { throw ReliabilityFailure() }
                return "done"
            }
            #expect(outcome.stopReason == .succeeded)
            #expect(outcome.attempts == 50)
            #expect(try outcome.get() == "done")
        }

        @Test("A backoff beyond the package maximum makes the policy wait the package maximum")
        func hugeBackoffWaitsTheMaximum() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: 2, backoff: .constant(.seconds(Int64.max)), jitter: .none, clock: clock)
            let attempts = ReliabilityCounter()
            let call = Task {
                await policy.outcome {
                    if attempts.increment() == 1 { throw ReliabilityFailure() }
                }
            }
            await clock.waitForSleepers(count: 1)
            // A longer wait once trapped the continuous clock ("Not enough bits to
            // represent the passed value") when it converted the instant to sleep until.
            #expect(clock.sleepRequests == [.resilienceMaximum])
            clock.advance(by: clock.sleepRequests.max() ?? .zero)
            let outcome = await call.value
            #expect(outcome.stopReason == .succeeded)
            #expect(outcome.attempts == 2)
            #expect(outcome.elapsed == .resilienceMaximum)
        }

        @Test(
            "A hint at the largest representable duration is clamped, and refused by a normal limit",
            arguments: [
                Duration.seconds(Int64.max),
                Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999),
            ])
        func hintAtMaximumIsRefused(_ hint: Duration) async throws {
            let policy = try RetryPolicy(maximumAttempts: 5, clock: TestClock())
            let attempts = ReliabilityCounter()
            let outcome = await policy.outcome {
                attempts.increment()
                throw ReliabilityFailure(retryAfter: hint)
            }
            #expect(outcome.stopReason == .retryAfterTooLong)
            #expect(outcome.retryAfter == .resilienceMaximum)
            #expect(attempts.value == 1)
        }

        @Test("A hint at the largest representable duration is honoured, clamped, when the limit allows it")
        func hintAtMaximumIsHonoured() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none,
                maximumRetryAfter: .seconds(Int64.max), clock: clock)
            let attempts = ReliabilityCounter()
            let call = Task {
                await policy.outcome {
                    if attempts.increment() == 1 { throw ReliabilityFailure(retryAfter: .seconds(Int64.max)) }
                }
            }
            await clock.waitForSleepers(count: 1)
            #expect(clock.sleepRequests == [.resilienceMaximum])
            clock.advance(by: .resilienceMaximum)
            let outcome = await call.value
            #expect(outcome.stopReason == .succeeded)
            #expect(attempts.value == 2)
        }

        @Test("A hint at the largest duration against the largest deadline stops before waiting")
        func hintAtMaximumAgainstHugeDeadline() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: 2, deadline: .seconds(Int64.max), maximumRetryAfter: .seconds(Int64.max), clock: clock)
            let outcome = await policy.outcome { throw ReliabilityFailure(retryAfter: .seconds(Int64.max)) }
            // Both clamp to the same maximum, and a wait that would reach the deadline is not started.
            #expect(outcome.stopReason == .deadlineExceeded)
            #expect(outcome.retryAfter == .resilienceMaximum)
            #expect(clock.sleepRequests.isEmpty)
        }

        @Test("A clock that jumps far past the deadline during a wait ends the call at the next check")
        func clockJumpDuringBackoff() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: .max, backoff: .constant(.seconds(1)), jitter: .none,
                deadline: .seconds(10), clock: clock)
            let attempts = ReliabilityCounter()
            let call = Task {
                await policy.outcome {
                    attempts.increment()
                    throw ReliabilityFailure()
                }
            }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(Int64.max))
            let outcome = await call.value
            #expect(outcome.stopReason == .deadlineExceeded)
            #expect(attempts.value == 1)
            #expect(outcome.elapsed == .seconds(Int64.max))
        }

        /// The jump ends the wait and passes the deadline before the caller cancels: whichever
        /// came first decides, as for a time limit, so the call stops at the deadline, with the
        /// failure it waited on.
        @Test("A clock that jumps past a wait and the deadline, then a cancellation, stops at the deadline")
        func clockJumpPastTheWaitAndTheDeadlineThenCancellation() async throws {
            for round in 0..<10 {
                let clock = TestClock()
                let policy = try RetryPolicy(
                    maximumAttempts: .max, backoff: .constant(.seconds(1)), jitter: .none,
                    deadline: .seconds(10), clock: clock)
                let attempts = ReliabilityCounter()
                let call = Task {
                    await policy.outcome {
                        attempts.increment()
                        throw ReliabilityFailure()
                    }
                }
                await clock.waitForSleepers(count: 1)
                clock.advance(by: .seconds(60))
                call.cancel()
                let outcome = await call.value
                #expect(outcome.stopReason == .deadlineExceeded, "round \(round)")
                #expect(outcome.result.failureValue is ReliabilityFailure, "round \(round)")
                #expect(attempts.value == 1)
            }
        }

        /// The same on a clock whose sleeps wake late: the wait is still asleep when the caller
        /// cancels, after the jump passed its end and the deadline.
        @Test("A jump past a wait and the deadline stops at the deadline before the wait wakes")
        func clockJumpPastTheWaitAndTheDeadlineBeforeTheWaitWakes() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: .max, backoff: .constant(.seconds(1)), jitter: .none,
                deadline: .seconds(10), clock: LateWakingClock(clock: clock))
            let call = Task { await policy.outcome { throw ReliabilityFailure() } }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(60))  // past the wait's end and the deadline; the wait sleeps on
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .deadlineExceeded)
            #expect(outcome.result.failureValue is ReliabilityFailure)
        }

        /// A caller that cancels during the wait, before the deadline, stays its cause, however
        /// far the clock jumps after.
        @Test("A cancellation during a wait before the deadline stays the caller's")
        func cancellationDuringAWaitBeforeTheDeadline() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: .max, backoff: .constant(.seconds(5)), jitter: .none,
                deadline: .seconds(10), clock: LateWakingClock(clock: clock))
            let call = Task { await policy.outcome { throw ReliabilityFailure() } }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(1))
            call.cancel()
            clock.advance(by: .seconds(60))
            let outcome = await call.value
            #expect(outcome.stopReason == .cancelled)
            #expect(outcome.result.failureValue is CancellationError)
        }

        @Test("A clock that jumps far past the deadline during an attempt stops without waiting")
        func clockJumpDuringAttempt() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(
                maximumAttempts: .max, backoff: .constant(.seconds(1)), jitter: .none,
                deadline: .seconds(Int64.max), clock: clock)
            let outcome = await policy.outcome {
                clock.advance(by: Duration(secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999))
                throw ReliabilityFailure()
            }
            #expect(outcome.stopReason == .deadlineExceeded)
            #expect(outcome.attempts == 1)
            #expect(clock.sleepRequests.isEmpty)
        }

        @Test("A clock that runs backwards cannot stretch a call past its attempt limit")
        func clockRunningBackwards() async throws {
            let clock = LurchingClock()
            let policy = try RetryPolicy(
                maximumAttempts: 6, backoff: .constant(.seconds(1)), jitter: .none,
                deadline: .seconds(5), clock: clock)
            let outcome = await policy.outcome {
                clock.jump(by: .seconds(-Int64.max / 2))
                throw ReliabilityFailure()
            }
            #expect(outcome.stopReason == .exhausted)
            #expect(outcome.attempts == 6)
        }

        @Test("A per-attempt time limit near the largest duration does not trap")
        func hugeAttemptTimeout() async throws {
            let policy = try RetryPolicy(deadline: .seconds(Int64.max), clock: TestClock())
            let value = try await policy.execute(attemptTimeout: .seconds(Int64.max)) { 42 }
            #expect(value == 42)
        }

        // MARK: - Hints at the edges

        @Test(
            "Retry-After values at and beyond 64 bits clamp to the package maximum",
            arguments: [
                "9223372036854775807", "9223372036854775808", "99999999999999999999999999999999999999",
                "Fri, 31 Dec 9999 23:59:59 GMT", "Fri Dec 31 23:59:59 9999",
            ])
        func retryAfterAtTheMaximum(_ value: String) {
            #expect(
                RetryAfterHeader.delay(parsing: value, receivedAt: Date(timeIntervalSince1970: 0)) == .resilienceMaximum
            )
        }

        /// The receipt times are passed as seconds since 1970, not as `Date`s: Foundation's
        /// `Date.description` traps on a NaN or infinite date, and Swift Testing describes its arguments.
        @Test(
            "Retry-After dates measured from extreme receipt times stay in range",
            arguments: [
                Date.distantPast.timeIntervalSince1970, Date.distantFuture.timeIntervalSince1970, .nan, .infinity,
                -.infinity, -1e300, 1e300, -62_135_596_800,
            ])
        func retryAfterFromExtremeReceiptTimes(_ secondsSince1970: Double) {
            let receivedAt = Date(timeIntervalSince1970: secondsSince1970)
            for value in [
                "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
            ] {
                if let delay = RetryAfterHeader.delay(parsing: value, receivedAt: receivedAt) {
                    #expect(delay >= .zero && delay <= .resilienceMaximum)
                }
            }
            #expect(RetryAfterHeader.delay(parsing: "120", receivedAt: receivedAt) == .seconds(120))
        }

        @Test(
            "CloudKit retry-after values at the edges clamp or are ignored",
            arguments: [
                (Double.greatestFiniteMagnitude as any Sendable, Duration.resilienceMaximum as Duration?),
                (Int.max, .resilienceMaximum), (Duration.seconds(Int64.max), .resilienceMaximum),
                ("1e308", .resilienceMaximum), (UInt.max, .resilienceMaximum),
                (Double.nan, nil), (Double.infinity, nil), (-Double.infinity, nil), (-1, nil), ("-0.5", nil),
                ("inf", nil),
                (Double.leastNonzeroMagnitude, .zero), (-0.0, .zero),
            ] as [(any Sendable, Duration?)])
        func cloudKitHintAtTheEdges(_ value: any Sendable, _ expected: Duration?) {
            let error = NSError(domain: "CKErrorDomain", code: 7, userInfo: [ErrorHints.cloudKitRetryAfterKey: value])
            #expect(ErrorHints.retryAfter(of: error) == expected)
        }
    }
}

/// A clock whose time moves only when told, by any amount, backwards too; its
/// sleeps return at once.
private final class LurchingClock: Clock, Sendable {
    private let offset = Lock(Duration.zero)

    var now: TestClock.Instant { TestClock.Instant(offset: self.offset.withLock { $0 }) }
    var minimumResolution: Duration { .zero }

    func jump(by duration: Duration) {
        self.offset.withLock { $0 += duration }
    }

    func sleep(until deadline: TestClock.Instant, tolerance: Duration?) async throws {
        try Task.checkCancellation()
    }
}
