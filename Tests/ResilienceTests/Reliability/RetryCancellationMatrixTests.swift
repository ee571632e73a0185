import Resilience
import ResilienceTesting
import Testing

extension Reliability {
    /// Cancellation at every point of a call through a ``RetryPolicy``, through
    /// every way of calling it. A task cancelled before the call still runs the first
    /// attempt, as a bare call would. Whatever the point: no further attempt starts, the
    /// stop reason is `cancelled`, the call returns without the test clock moving
    /// (so it cannot have waited out a delay), nothing is left sleeping on the
    /// clock, and the retry budget is left as it was when the task was cancelled,
    /// because cancellation is not a failure of the dependency.
    @Suite("Retry cancellation matrix", .timeLimit(.minutes(5)))
    struct RetryCancellationMatrixTests {
        @Test(
            "Cancellation stops the call at once, starts no further attempt and costs no budget",
            arguments: EntryPoint.allCases, Phase.allCases)
        func cancellationStopsTheCall(_ entryPoint: EntryPoint, _ phase: Phase) async throws {
            let clock = TestClock()
            let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 1)
            // Beside a per-attempt timer, a parked sleeper may be the timer rather than the
            // policy's wait, so that entry point also waits for the retry to be scheduled.
            let latch = entryPoint == .outcomeWithAttemptTimeout ? ReliabilityRetryLatch() : nil
            let policy = try RetryPolicy(
                maximumAttempts: 5,
                backoff: .constant(.seconds(10)),
                jitter: .none,
                deadline: entryPoint.usesDeadline ? .seconds(1_000) : nil,
                maximumRetryAfter: .seconds(60),
                budget: budget,
                observer: latch,
                clock: clock
            )
            let attempts = ReliabilityCounter()
            let operation = phase.operation(clock: clock, attempts: attempts)

            let call = Task {
                if phase == .alreadyCancelledWhenCalled {
                    withUnsafeCurrentTask { $0?.cancel() }
                }
                return await entryPoint.run(policy, operation)
            }
            var tokensAtCancellation = budget.maximumTokens
            if phase != .alreadyCancelledWhenCalled {
                if let latch, phase.parksInPolicy {
                    await latch.waitForRetries(count: 1)
                }
                await clock.waitForSleepers(count: phase.sleepers(entryPoint))
                #expect(clock.sleepRequests.contains(phase.parkedOn))
                tokensAtCancellation = budget.tokens
                call.cancel()
            }
            let report = await call.value

            #expect(report.stopReason == .cancelled)
            #expect(attempts.value == phase.expectedAttempts)
            if let attemptsReported = report.attempts {
                #expect(attemptsReported == phase.expectedAttempts)
            }
            if let expectsCancellationError = phase.endsWithCancellationError(entryPoint) {
                #expect(
                    (report.error is CancellationError) == expectsCancellationError,
                    "\(String(describing: report.error))")
            }
            #expect(clock.now == TestClock.Instant(offset: .zero), "the call waited on the clock")
            #expect(clock.sleeperCount == 0, "something is still sleeping on the clock")
            #expect(budget.tokens == tokensAtCancellation)
            let statistics = await policy.statistics
            #expect(statistics.stopReasons == [.cancelled: 1])
            #expect(statistics.failedAttempts == phase.expectedAttempts)
        }

        @Test("An operation that finishes despite cancellation keeps its value, and nothing more runs")
        func valueReturnedDespiteCancellationIsKept() async throws {
            let clock = TestClock()
            let policy = try RetryPolicy(maximumAttempts: 5, clock: clock)
            let attempts = ReliabilityCounter()
            let call = Task {
                await policy.outcome {
                    attempts.increment()
                    try? await clock.sleep(for: .seconds(100))
                    return "finished anyway"
                }
            }
            await clock.waitForSleepers(count: 1)
            call.cancel()
            let outcome = await call.value
            #expect(outcome.stopReason == .succeeded)
            #expect(try outcome.get() == "finished anyway")
            #expect(attempts.value == 1)
        }
    }
}

extension Reliability.RetryCancellationMatrixTests {
    /// A way of calling a policy.
    enum EntryPoint: CaseIterable, Sendable, CustomTestStringConvertible {
        /// `execute`, on the fast path: no deadline, no observer.
        case execute
        /// `execute` on the full path, which a deadline forces.
        case executeWithDeadline
        /// `outcome`.
        case outcome
        /// `outcome(attemptTimeout:)`, whose attempts run in a child task beside a timer.
        case outcomeWithAttemptTimeout

        var testDescription: String { "\(self)" }

        var usesDeadline: Bool { self == .executeWithDeadline }

        /// Runs one call and reports what a caller can learn of it.
        func run(_ policy: RetryPolicy, _ operation: @escaping @Sendable () async throws -> Void) async -> Report {
            switch self {
            case .execute, .executeWithDeadline:
                do {
                    try await policy.execute(operation: operation)
                    return await Report(stopReason: policy.statistics.stopReasons.keys.first ?? .succeeded)
                } catch {
                    return await Report(stopReason: policy.statistics.stopReasons.keys.first, error: error)
                }
            case .outcome:
                return Report(await policy.outcome(operation: operation))
            case .outcomeWithAttemptTimeout:
                return Report(await policy.outcome(attemptTimeout: .seconds(500), operation: operation))
            }
        }
    }

    /// Where in the call the task is cancelled.
    enum Phase: CaseIterable, Sendable, CustomTestStringConvertible {
        /// The task is cancelled before the call; the first attempt runs and fails as if retryable.
        case alreadyCancelledWhenCalled
        /// The operation is suspended on the clock and stops when cancelled.
        case duringAttempt
        /// The operation is suspended on the clock, ignores the cancellation and then fails as if retryable.
        case duringAttemptIgnoringCancellation
        /// The operation failed and the policy is waiting out its backoff.
        case duringBackoff
        /// The operation failed with a retry-after hint longer than the backoff, and the policy honours it.
        case duringServerHint

        var testDescription: String { "\(self)" }

        /// One in every phase: the first attempt runs even in a cancelled task, and no retry follows.
        var expectedAttempts: Int { 1 }

        /// Whether the call is parked in the policy's own wait rather than in the operation.
        var parksInPolicy: Bool { self == .duringBackoff || self == .duringServerHint }

        /// The wait the call is parked on when it is cancelled.
        var parkedOn: Duration {
            switch self {
            case .alreadyCancelledWhenCalled: .zero
            case .duringAttempt, .duringAttemptIgnoringCancellation: .seconds(100)
            case .duringBackoff: .seconds(10)
            case .duringServerHint: .seconds(30)
            }
        }

        /// How many tasks sleep on the clock once the call is parked.
        func sleepers(_ entryPoint: EntryPoint) -> Int {
            let attemptTimer = entryPoint == .outcomeWithAttemptTimeout
            switch self {
            case .duringAttempt, .duringAttemptIgnoringCancellation: return attemptTimer ? 2 : 1
            case .alreadyCancelledWhenCalled, .duringBackoff, .duringServerHint: return 1
            }
        }

        /// Whether the call must end with `CancellationError`, or `nil` when either error may win a race.
        func endsWithCancellationError(_ entryPoint: EntryPoint) -> Bool? {
            guard self == .duringAttemptIgnoringCancellation || self == .alreadyCancelledWhenCalled else {
                return true
            }
            // The operation's own error ends the call, unchanged; beside a timer
            // that is cancelled too, either may finish first.
            return entryPoint == .outcomeWithAttemptTimeout ? nil : false
        }

        func operation(clock: TestClock, attempts: ReliabilityCounter) -> @Sendable () async throws -> Void {
            switch self {
            case .alreadyCancelledWhenCalled:
                return {
                    attempts.increment()
                    throw ReliabilityFailure()
                }
            case .duringAttempt:
                return {
                    attempts.increment()
                    try await clock.sleep(for: .seconds(100))
                }
            case .duringAttemptIgnoringCancellation:
                return {
                    attempts.increment()
                    try? await clock.sleep(for: .seconds(100))
                    throw ReliabilityFailure()
                }
            case .duringBackoff:
                return {
                    attempts.increment()
                    throw ReliabilityFailure()
                }
            case .duringServerHint:
                return {
                    attempts.increment()
                    throw ReliabilityFailure(retryAfter: .seconds(30))
                }
            }
        }
    }

    /// What a caller learns of one call.
    struct Report: Sendable {
        var stopReason: RetryStopReason?
        var attempts: Int?
        var error: (any Error)?

        init(stopReason: RetryStopReason?, attempts: Int? = nil, error: (any Error)? = nil) {
            self.stopReason = stopReason
            self.attempts = attempts
            self.error = error
        }

        init(_ outcome: RetryOutcome<Void>) {
            var error: (any Error)?
            if case .failure(let failure) = outcome.result { error = failure }
            self.init(stopReason: outcome.stopReason, attempts: outcome.attempts, error: error)
        }
    }
}
