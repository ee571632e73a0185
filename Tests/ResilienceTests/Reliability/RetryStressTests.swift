import Resilience
import ResilienceTesting
import Testing

extension Reliability {
    /// Ten thousand concurrent calls through one ``RetryPolicy`` and one shared
    /// ``RetryBudget``, each call's behaviour drawn from a seeded generator by its
    /// index: successes, transient failures, final failures, 429s, server hints,
    /// slow operations, operations that cancel their own task and tasks cancelled
    /// from outside.
    ///
    /// Checked while the calls run, not only at the end: no call makes more than
    /// `maximumAttempts` attempts; the budget stays within `0...maximumTokens` at
    /// every attempt and every event; the policy's statistics never count more
    /// retries than failed attempts. Checked at the end: every call produced
    /// exactly one outcome, its attempt count matches the operation's own count, its
    /// stop reason is one its behaviour allows, and the statistics add up to the
    /// outcomes.
    @Suite(
        "Retry stress", .timeLimit(.minutes(5)),
        .disabled(if: runsUnderThreadSanitizer, "10,000 tasks starve the rest under ThreadSanitizer; run alone"))
    struct RetryStressTests {
        static let callCount = 10_000
        static let maximumAttempts = 4

        @Test(
            "Ten thousand concurrent calls each get exactly one outcome, and every invariant holds throughout",
            arguments: Path.allCases)
        func concurrentCallsKeepEveryInvariant(_ path: Path) async throws {
            let clock = TestClock()
            let budget = try RetryBudget(maximumTokens: 10_000, tokenRatio: 0.1)
            let events = ReliabilityEventCounter(checking: budget)
            let policy = try RetryPolicy(
                maximumAttempts: Self.maximumAttempts,
                backoff: .constant(.zero),
                jitter: .none,
                deadline: path == .full ? .seconds(Int64.max) : nil,
                maximumRetryAfter: .seconds(60),
                budget: budget,
                observer: path == .full ? events : nil,
                clock: clock
            )
            let plans = (0..<Self.callCount).map { CallPlan(index: $0) }
            let run = StressRun(callCount: Self.callCount, budget: budget)

            // Server hints park calls on the test clock; a driver moves time on whenever one is parked.
            let driver = Task {
                while true {
                    await clock.waitForSleepers(count: 1)
                    if run.isFinished { return }
                    clock.advance(by: .seconds(2))
                }
            }

            let calls = plans.map { plan in
                Task { await run.call(policy, plan, path: path) }
            }
            for plan in plans where plan.isCancelledFromOutside {
                calls[plan.index].cancel()
            }
            for call in calls {
                await call.value
            }
            run.finish()
            // Release the driver from its wait with a sleeper of our own, due so far
            // ahead that the driver's last advance, if one is under way, cannot wake it.
            let release = Task { try await clock.sleep(for: .seconds(1_000_000_000)) }
            await driver.value
            release.cancel()

            // Exactly one outcome per call, none lost or doubled.
            let outcomeCounts = run.outcomeCounts
            #expect(outcomeCounts.count == Self.callCount)
            #expect(
                outcomeCounts.allSatisfy { $0 == 1 }, "calls without exactly one outcome: \(run.callsWithoutOneOutcome)"
            )
            // Violations recorded while the calls ran.
            #expect(run.violations.isEmpty, "\(run.violations.prefix(10))")
            #expect(events.budgetViolations.isEmpty, "\(events.budgetViolations.prefix(10))")
            #expect((0...budget.maximumTokens).contains(budget.tokens))

            // The statistics add up to the outcomes.
            let statistics = await policy.statistics
            let results = run.results
            let succeeded = results.filter(\.succeeded)
            let attempts = results.reduce(0) { $0 + $1.attempts }
            #expect(statistics.failedAttempts == attempts - succeeded.count)
            let recorded = results.filter { !$0.succeeded || $0.attempts > 1 }
            #expect(statistics.stopReasons.values.reduce(0, +) == recorded.count)
            #expect(statistics.stopReasons[.succeeded, default: 0] == succeeded.filter { $0.attempts > 1 }.count)
            let retriesAtLeast = results.reduce(0) { $0 + Swift.max($1.attempts - 1, 0) }
            let cancelled = results.filter { $0.stopReason == .cancelled || $0.endedByCancellation }.count
            #expect(statistics.retries >= retriesAtLeast && statistics.retries <= retriesAtLeast + cancelled)

            if path == .full {
                // Every event reached the observer, and the observer agrees with the statistics.
                #expect(events.attemptsFailed == statistics.failedAttempts)
                #expect(events.retriesScheduled == statistics.retries)
                #expect(events.recordedCallsFinished == statistics.stopReasons)
                var byReason: [RetryStopReason: Int] = [:]
                for result in results {
                    if let reason = result.stopReason { byReason[reason, default: 0] += 1 }
                }
                #expect(events.callsFinished == byReason)
                #expect(byReason.values.reduce(0, +) == Self.callCount)
            }

            // The mix really exercised the interesting paths.
            #expect(succeeded.count > Self.callCount / 4)
            // Cancellation: a task cancelled before its call still runs the first attempt, and a
            // call whose task is cancelled during an attempt never starts another.
            var cancelledDuringAnAttempt = 0
            for plan in plans {
                guard case .cancelsItself(let attempt) = plan.behaviour, !plan.isCancelledFromOutside else { continue }
                cancelledDuringAnAttempt += 1
                #expect(results[plan.index].attempts <= attempt, "call \(plan.index) retried in a cancelled task")
            }
            #expect(cancelledDuringAnAttempt > 0)
            #expect(plans.filter(\.isCancelledFromOutside).allSatisfy { results[$0.index].attempts >= 1 })
            #expect(statistics.retries > 0)
            if path == .full {
                for reason in [
                    RetryStopReason.succeeded, .notRetryable, .tooManyRequests, .retryAfterTooLong, .cancelled,
                ] {
                    #expect(statistics.stopReasons[reason, default: 0] > 0, "no call stopped as \(reason)")
                }
                // Whether a call that keeps failing runs out of attempts or of budget depends
                // on how the tasks interleave with everyone else's failures; one of the two must happen.
                let outOfRetries =
                    statistics.stopReasons[.exhausted, default: 0]
                    + statistics.stopReasons[.budgetExhausted, default: 0]
                #expect(outOfRetries > 0, "no call ran out of attempts or budget")
            }
        }
    }
}

extension Reliability.RetryStressTests {
    /// How the calls enter the policy.
    enum Path: CaseIterable, Sendable {
        /// `execute` with neither deadline nor observer: the fast path, which runs the first attempt inline.
        case fast
        /// `outcome` with a deadline and an observer: every call takes the full path.
        case full
    }

    /// What one call's operation does, decided by its index alone.
    enum Behaviour: Sendable, Equatable {
        case succeed
        /// Fails retryably this many times, then succeeds.
        case failThenSucceed(Int)
        case notRetryable
        case tooManyRequests
        /// Fails with a retry-after hint of 2 s this many times, parking on the clock, then succeeds.
        case hinted(Int)
        case hintTooLong
        /// Yields this many times per attempt, then fails retryably or succeeds.
        case slow(yields: Int, fails: Bool)
        /// Cancels its own task during this attempt, failing retryably before it.
        case cancelsItself(atAttempt: Int)
    }

    /// One call's plan.
    struct CallPlan: Sendable {
        let index: Int
        let behaviour: Behaviour
        let isCancelledFromOutside: Bool

        init(index: Int) {
            self.index = index
            var generator = SeededRandomNumberGenerator(seed: 0x5EED_0000 &+ UInt64(index))
            let roll = Int.random(in: 0..<100, using: &generator)
            let count = Int.random(in: 1...5, using: &generator)
            switch roll {
            case 0..<35: self.behaviour = .succeed
            case 35..<60: self.behaviour = .failThenSucceed(count)
            case 60..<68: self.behaviour = .notRetryable
            case 68..<73: self.behaviour = .tooManyRequests
            case 73..<79: self.behaviour = .hinted(Swift.min(count, 2))
            case 79..<81: self.behaviour = .hintTooLong
            case 81..<93: self.behaviour = .slow(yields: count, fails: count > 3)
            default: self.behaviour = .cancelsItself(atAttempt: Swift.min(count, 3))
            }
            self.isCancelledFromOutside = Int.random(in: 0..<100, using: &generator) < 7
        }

        /// The stop reasons this call may end with.
        var allowedStopReasons: Set<RetryStopReason> {
            let maximum = Reliability.RetryStressTests.maximumAttempts
            var allowed: Set<RetryStopReason>
            switch self.behaviour {
            case .succeed: allowed = [.succeeded]
            case .failThenSucceed(let failures):
                allowed = failures < maximum ? [.succeeded, .budgetExhausted] : [.exhausted, .budgetExhausted]
            case .notRetryable: allowed = [.notRetryable]
            case .tooManyRequests: allowed = [.tooManyRequests]
            case .hinted: allowed = [.succeeded, .budgetExhausted]
            case .hintTooLong: allowed = [.retryAfterTooLong]
            case .slow(_, let fails): allowed = fails ? [.exhausted, .budgetExhausted] : [.succeeded]
            case .cancelsItself(let attempt): allowed = attempt == 1 ? [.cancelled] : [.cancelled, .budgetExhausted]
            }
            if self.isCancelledFromOutside { allowed.insert(.cancelled) }
            return allowed
        }

        /// The operation, for attempt number `attempt` (1 for the first).
        func attempt(_ attempt: Int) async throws {
            switch self.behaviour {
            case .succeed:
                return
            case .failThenSucceed(let failures):
                if attempt <= failures { throw ReliabilityFailure(id: self.index) }
            case .notRetryable:
                throw ReliabilityFailure(id: self.index, isRetryable: false)
            case .tooManyRequests:
                throw ReliabilityFailure(id: self.index, httpStatusCode: 429, retryAfter: .seconds(5))
            case .hinted(let failures):
                if attempt <= failures { throw ReliabilityFailure(id: self.index, retryAfter: .seconds(2)) }
            case .hintTooLong:
                throw ReliabilityFailure(id: self.index, retryAfter: .seconds(120))
            case .slow(let yields, let fails):
                for _ in 0..<yields { await Task.yield() }
                if fails { throw ReliabilityFailure(id: self.index) }
            case .cancelsItself(let cancelAt):
                if attempt == cancelAt { withUnsafeCurrentTask { $0?.cancel() } }
                throw ReliabilityFailure(id: self.index)
            }
        }
    }

    /// What one call ended with.
    struct CallResult: Sendable {
        var attempts = 0
        var succeeded = false
        /// Known on the full path only.
        var stopReason: RetryStopReason?
        /// The call ended with `CancellationError` (the fast path's sign of a cancelled call).
        var endedByCancellation = false
    }

    /// The shared record of a stress run: per-call attempt counters and outcomes, and violations seen on the way.
    final class StressRun: Sendable {
        private struct State {
            var outcomeCounts: [Int]
            var results: [CallResult]
            var violations: [String] = []
            var isFinished = false
        }

        private let attemptCounts: [ReliabilityCounter]
        private let state: Lock<State>
        private let budget: RetryBudget

        init(callCount: Int, budget: RetryBudget) {
            self.attemptCounts = (0..<callCount).map { _ in ReliabilityCounter() }
            self.state = Lock(
                State(
                    outcomeCounts: Array(repeating: 0, count: callCount),
                    results: Array(repeating: CallResult(), count: callCount)))
            self.budget = budget
        }

        var isFinished: Bool { self.state.withLock { $0.isFinished } }
        var outcomeCounts: [Int] { self.state.withLock { $0.outcomeCounts } }
        var results: [CallResult] { self.state.withLock { $0.results } }
        var violations: [String] { self.state.withLock { $0.violations } }
        var callsWithoutOneOutcome: [Int] {
            self.state.withLock { state in state.outcomeCounts.indices.filter { state.outcomeCounts[$0] != 1 } }
        }

        func finish() {
            self.state.withLock { $0.isFinished = true }
        }

        /// Runs one call through `policy` and records what it ended with.
        func call(_ policy: RetryPolicy, _ plan: CallPlan, path: Path) async {
            let operation: @Sendable () async throws -> Void = {
                let attempt = self.attemptCounts[plan.index].increment()
                self.check(attempt: attempt, of: plan)
                try await plan.attempt(attempt)
            }
            var result = CallResult()
            switch path {
            case .fast:
                do {
                    try await policy.execute(operation: operation)
                    result.succeeded = true
                } catch {
                    result.endedByCancellation = error is CancellationError
                    if !(error is CancellationError || error is ReliabilityFailure) {
                        self.violation("call \(plan.index) threw a foreign error \(error)")
                    }
                }
                if plan.index.isMultiple(of: 97) {
                    // A snapshot taken while other calls run must already add up.
                    let statistics = await policy.statistics
                    if statistics.retries > statistics.failedAttempts {
                        self.violation(
                            "snapshot has \(statistics.retries) retries for \(statistics.failedAttempts) failures")
                    }
                }
            case .full:
                let outcome = await policy.outcome(operation: operation)
                result.succeeded = outcome.stopReason == .succeeded
                result.stopReason = outcome.stopReason
                if case .failure(let error) = outcome.result { result.endedByCancellation = error is CancellationError }
                if outcome.attempts != self.attemptCounts[plan.index].value {
                    self.violation(
                        "call \(plan.index) reports \(outcome.attempts) attempts, ran \(self.attemptCounts[plan.index].value)"
                    )
                }
                if !plan.allowedStopReasons.contains(outcome.stopReason) {
                    self.violation("call \(plan.index) (\(plan.behaviour)) stopped as \(outcome.stopReason)")
                }
                if (outcome.stopReason == .succeeded) != ((try? outcome.result.get()) != nil) {
                    self.violation(
                        "call \(plan.index) has stop reason \(outcome.stopReason) and result \(outcome.result)")
                }
            }
            result.attempts = self.attemptCounts[plan.index].value
            if result.succeeded && !plan.allowedStopReasons.contains(.succeeded) {
                self.violation("call \(plan.index) (\(plan.behaviour)) succeeded")
            }
            let recorded = result
            self.state.withLock { state in
                state.outcomeCounts[plan.index] += 1
                state.results[plan.index] = recorded
            }
        }

        private func check(attempt: Int, of plan: CallPlan) {
            if attempt > Reliability.RetryStressTests.maximumAttempts {
                self.violation("call \(plan.index) started attempt \(attempt)")
            }
            let tokens = self.budget.tokens
            if !(0...self.budget.maximumTokens).contains(tokens) {
                self.violation("budget at \(tokens) tokens")
            }
        }

        private func violation(_ description: String) {
            self.state.withLock { $0.violations.append(description) }
        }
    }
}
