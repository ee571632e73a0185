import Resilience
import ResilienceTesting
import Testing

/// The namespace of the circuit breaker's reliability suites (stress, cancellation,
/// time edges, configuration), so that `swift test --filter Reliability` selects them.
enum CircuitBreakerReliability {}

extension CircuitBreakerReliability {
    /// Ten thousand concurrent calls through one ``RetryPolicy`` and one ``CircuitBreaker``,
    /// nested either way round, each call's behaviour drawn from a seeded generator by its
    /// index: successes, failures, slow calls parked on the test clock, calls parked on a
    /// continuation, calls that cancel their own task, calls cancelled from outside,
    /// uncounted client errors and 429s whose hint opens the breaker. A driver moves the
    /// test clock whenever a task sleeps on it, so the breaker opens, turns half-open and
    /// closes again many times while the calls run.
    ///
    /// Checked inside every attempt, where a violation would happen: half-open probes of one
    /// generation running at once never exceed `maximumProbes`; the breaker's snapshot is
    /// self-consistent (probe slots, window counts and failure rate, the fields each state
    /// allows); the budget stays within `0...maximumTokens`; no attempt starts after the
    /// task is known to be cancelled. A sampler checks the same snapshot invariants, and that
    /// generations never go back, while the calls run. Checked at the end: every call got
    /// exactly one outcome, its own value or error, with a stop reason its behaviour allows;
    /// every transition reached the observer, in a chain without gaps; no probe slot is
    /// left taken, and the breaker can be driven back to closed.
    @Suite(
        "Circuit breaker stress", .timeLimit(.minutes(5)),
        .disabled(if: runsUnderThreadSanitizer, "10,000 tasks starve the rest under ThreadSanitizer; run alone"))
    struct StressTests {
        static let callCount = 10_000
        static let maximumAttempts = 4
        static let maximumProbes = 3
        static let successesToClose = 2
        /// Longer than any healthy probe here, shorter than a probe parked on the lot, which
        /// then loses its slot to the next caller instead of wedging the breaker.
        static let probeLease = Duration.seconds(20)
        /// Longer than the test clock can ever move here, so no probe loses its slot to a lease.
        static let endlessProbeLease = Duration.seconds(1_000_000_000)
        /// The stampede's lease: no probe outlives it (the clock stands still while they are
        /// parked), and it is within the policy's longest honoured hint, so a caller rejected
        /// half-open waits for the lease bound its rejection carries instead of giving up.
        static let stampedeProbeLease = Duration.seconds(50)
        static let longestOpenTime = Duration.seconds(8)

        static let scenarios: [Scenario] = [
            .consecutiveFailures(5, .retryAroundBreaker, seed: 0xB4EA_0001),
            .countWindow(threshold: 0.5, minimumCalls: 20, size: 100, .retryAroundBreaker, seed: 0xB4EA_0002),
            .timeWindow(
                threshold: 0.4, minimumCalls: 10, slowerThan: .seconds(2), .retryAroundBreaker, seed: 0xB4EA_0003),
            .consecutiveFailures(3, .breakerAroundRetry, seed: 0xB4EA_0004),
            .countWindow(threshold: 0.5, minimumCalls: 20, size: 50, .breakerAroundRetry, seed: 0xB4EA_0005),
        ]

        @Test(
            "Ten thousand concurrent calls each get exactly one outcome, and every breaker invariant holds throughout",
            arguments: scenarios)
        func concurrentCallsKeepEveryInvariant(_ scenario: Scenario) async throws {
            let run = try BreakerStressRun(
                scenario: scenario, callCount: Self.callCount, maximumAttempts: Self.maximumAttempts,
                maximumProbes: Self.maximumProbes, successesToClose: Self.successesToClose, probeLease: Self.probeLease)
            let plans = (0..<Self.callCount).map { BreakerStressPlan(index: $0, seed: scenario.seed) }
            let driver = Task { await run.clock.drive(step: .milliseconds(250)) { run.checkProbeSlotsWhileQuiet() } }
            let sampler = Task { await run.sampleWhileRunning() }

            let calls = plans.map { plan in
                Task { await run.call(plan) }
            }
            for plan in plans where plan.cancellation == .early {
                calls[plan.index].cancel()
            }
            // Every call has finished or parked on the lot; the parked ones hold whatever they took.
            await run.settled.wait(untilReaching: Self.callCount)
            run.lot.open()
            let parked = run.lot.parkedIndices
            for index in parked {
                if plans[index].cancellation == .whileParked {
                    calls[index].cancel()
                } else {
                    run.lot.release(index)
                }
            }
            var records: [BreakerStressRecord] = []
            records.reserveCapacity(Self.callCount)
            for call in calls {
                records.append(await call.value)
            }
            run.finish()
            run.clock.stop()
            let clockSteps = await driver.value
            let samples = await sampler.value

            // Violations recorded where they happened, while the calls ran.
            let monitor = run.monitor
            #expect(
                monitor.violations.isEmpty, "\(monitor.violations.count) violations: \(monitor.violations.prefix(8))")
            // Exactly one outcome per call, none lost or doubled, each its own.
            #expect(monitor.outcomeCounts.allSatisfy { $0 == 1 }, "calls without exactly one outcome")
            #expect(records.map(\.index) == Array(0..<Self.callCount))
            var problems: [String] = []
            for record in records {
                problems += record.problems(plan: plans[record.index], maximumAttempts: Self.maximumAttempts)
            }
            #expect(problems.isEmpty, "\(problems.count) calls broke their contract: \(problems.prefix(8))")

            // Every transition reached the observer, chained without a gap, up to the breaker's generation.
            let finalSnapshot = run.breaker.snapshot()
            let changes = run.observer.changes.sorted { $0.generation < $1.generation }
            #expect(changes.map(\.generation) == (0..<finalSnapshot.generation).map { $0 + 1 })
            #expect(changes.first?.from == .closed)
            #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.to == $1.from })
            #expect(changes.last?.to == finalSnapshot.state)

            // No probe slot is left taken: nothing is running, so a half-open breaker has every slot free.
            if finalSnapshot.state == .halfOpen {
                #expect(finalSnapshot.probesInFlight == 0)
            }
            // And the breaker can be driven back to closed through its probes.
            run.clock.advance(by: Self.longestOpenTime)
            let reopened = run.breaker.snapshot()
            #expect(reopened.state == .halfOpen || reopened.state == .closed)
            #expect(reopened.probesInFlight == 0)
            for _ in 0..<Self.successesToClose where run.breaker.state == .halfOpen {
                #expect(try await run.breaker.execute { "probe" } == "probe")
            }
            #expect(run.breaker.state == .closed)
            #expect((0...run.budget.maximumTokens).contains(run.budget.tokens))

            // The run really went through the interesting paths.
            #expect(monitor.probeEntries > 0, "no half-open probe ran")
            #expect(monitor.maximumProbesSeen <= Self.maximumProbes)
            #expect(changes.contains { $0.to == .halfOpen } && changes.contains { $0.from == .halfOpen })
            #expect(run.observer.rejections > 0)
            #expect(records.contains { $0.succeeded })
            #expect(records.contains { $0.error is CircuitBreakerOpenError })
            #expect(records.contains { $0.error is CancellationError || $0.stopReason == .cancelled })
            #expect(parked.count > 0)
            #expect(samples > 0)
            #expect(clockSteps > 0)
            // Quiet moments with a probe slot taken depend on which callers win the slots; the
            // stampede test below holds probes open on purpose.
            #expect(monitor.quietChecks.all > 0)
        }

        @Test(
            "A half-open stampede runs at most the configured probes, and cancelled or uncounted probes give their slots back",
            arguments: Nesting.allCases)
        func halfOpenStampedeReturnsEverySlot(_ nesting: Nesting) async throws {
            let callers = 2_000
            let scenario = Scenario.consecutiveFailures(3, nesting, seed: 0xB4EA_0100)
            let run = try BreakerStressRun(
                scenario: scenario, callCount: callers, maximumAttempts: Self.maximumAttempts,
                maximumProbes: Self.maximumProbes, successesToClose: Self.maximumProbes,
                probeLease: Self.stampedeProbeLease,
                openDuration: .fixed(.seconds(10)))
            for _ in 0..<3 { await run.breaker.fail() }
            #expect(run.breaker.state == .open)
            run.clock.advance(by: .seconds(10))
            let halfOpen = run.breaker.snapshot()
            #expect(halfOpen.state == .halfOpen)

            // Every caller's first run of the operation parks on the lot; later runs succeed.
            let plans = (0..<callers).map { BreakerStressPlan(index: $0, behaviour: .gated, cancellation: .none) }
            let calls = plans.map { plan in
                Task { await run.call(plan) }
            }
            // The probes park; everyone else is rejected: the policy around the breaker waits to
            // retry, and a breaker around the policy rejects the whole call.
            await run.clock.waitUntilEveryCallIsBlocked()
            let probes = run.lot.parkedIndices
            try #require(probes.count == Self.maximumProbes)
            switch nesting {
            case .retryAroundBreaker:
                #expect(run.clock.sleeperCount == callers - Self.maximumProbes)
            case .breakerAroundRetry:
                #expect(run.settled.count == callers)
            }
            #expect(run.monitor.maximumProbesSeen == Self.maximumProbes)
            let crowded = run.breaker.snapshot()
            #expect(crowded.generation == halfOpen.generation)
            #expect(crowded.probesInFlight == Self.maximumProbes)

            // From now on the operation succeeds at once. One probe is cancelled from outside, one fails with a client error the breaker does
            // not count, one cancels its own task and then fails with an error that would count.
            run.lot.open()
            calls[probes[0]].cancel()
            run.lot.release(probes[1], with: .notCounted)
            run.lot.release(probes[2], with: .cancelItselfThenFail)
            var probeRecords: [BreakerStressRecord] = []
            for index in probes {
                probeRecords.append(await calls[index].value)
            }
            let afterProbes = run.breaker.snapshot()
            #expect(afterProbes.state == .halfOpen)
            #expect(afterProbes.generation == halfOpen.generation, "the slots came back without a transition")
            #expect(afterProbes.probesInFlight == 0)
            #expect(afterProbes.successfulProbes == 0)
            #expect(probeRecords[0].error is CancellationError || probeRecords[0].stopReason == .cancelled)
            #expect((probeRecords[1].error as? BreakerStressHTTPFailure)?.index == probes[1])
            #expect(probeRecords[2].stopReason == .cancelled || probeRecords[2].error is BreakerStressFailure)

            // The next callers can probe, and their successes close the breaker.
            let driver = Task { await run.clock.drive(step: .milliseconds(500)) { run.checkProbeSlotsWhileQuiet() } }
            switch nesting {
            case .retryAroundBreaker:
                break  // the waiting callers retry as the driver moves the clock
            case .breakerAroundRetry:
                for _ in 0..<Self.maximumProbes {
                    #expect(try await run.breaker.execute { "probe" } == "probe")
                }
            }
            var records: [BreakerStressRecord] = []
            for call in calls {
                records.append(await call.value)
            }
            run.finish()
            run.clock.stop()
            _ = await driver.value

            #expect(run.monitor.violations.isEmpty, "\(run.monitor.violations.prefix(8))")
            #expect(run.monitor.outcomeCounts.allSatisfy { $0 == 1 })
            #expect(run.monitor.maximumProbesSeen == Self.maximumProbes)
            let others = records.filter { !probes.contains($0.index) }
            switch nesting {
            case .retryAroundBreaker:
                #expect(others.allSatisfy { $0.succeeded }, "a caller that waited out the half-open state failed")
            case .breakerAroundRetry:
                #expect(
                    others.allSatisfy { ($0.error as? CircuitBreakerOpenError)?.state == .halfOpen },
                    "a caller beyond the probes was not rejected as half-open")
            }
            let final = run.breaker.snapshot()
            #expect(final.state == .closed)
            #expect(final.probesInFlight == 0)
            #expect(run.observer.changes.filter { $0.from == .halfOpen }.map(\.to) == [.closed])
        }

        @Test(
            "Probes hung past their lease give their slots to new callers, never more than the limit hold one, and their late results do not count",
            arguments: Nesting.allCases)
        func hungProbesLoseTheirSlotsAndTheirLateResultsDoNotCount(_ nesting: Nesting) async throws {
            let callers = 600
            let lease = Duration.seconds(5)
            let scenario = Scenario.consecutiveFailures(1, nesting, seed: 0xB4EA_0200)
            let run = try BreakerStressRun(
                scenario: scenario, callCount: callers, maximumAttempts: Self.maximumAttempts, maximumProbes: 2,
                successesToClose: 2, probeLease: lease, openDuration: .fixed(.seconds(10)))
            await run.breaker.fail()
            run.clock.advance(by: .seconds(10))
            let halfOpen = run.breaker.snapshot()
            #expect(halfOpen.state == .halfOpen)

            // Callers arrive over a minute; each one admitted as a probe hangs for its lease and 10 s more.
            let plans = (0..<callers).map { index in
                BreakerStressPlan(
                    index: index, behaviour: .hangsIfProbe, cancellation: .none,
                    arrival: .milliseconds(100 * index))
            }
            let driver = Task { await run.clock.drive(step: .milliseconds(250)) { run.checkProbeSlotsWhileQuiet() } }
            let calls = plans.map { plan in
                Task { await run.call(plan) }
            }
            var records: [BreakerStressRecord] = []
            for call in calls {
                records.append(await call.value)
            }
            run.finish()
            run.clock.stop()
            _ = await driver.value

            #expect(run.monitor.violations.isEmpty, "\(run.monitor.violations.prefix(8))")
            #expect(run.monitor.outcomeCounts.allSatisfy { $0 == 1 })
            #expect(run.monitor.maximumProbesSeen == 2)
            // About two probes per lease over the minute: slots really passed from hung probes to new ones.
            #expect(run.monitor.probeEntries >= 20)
            #expect(run.monitor.quietChecks.withProbes > 0)
            // Every probe hung past its lease, so none of their successes counted.
            let final = run.breaker.snapshot()
            #expect(final.state == .halfOpen)
            #expect(final.generation == halfOpen.generation)
            #expect(final.successfulProbes == 0)
            #expect(final.probesInFlight == 0)
            #expect(!run.observer.changes.contains { $0.from == .halfOpen })
            #expect(records.filter(\.succeeded).count == run.monitor.probeEntries)
        }
    }
}

// MARK: - Scenario and plans

extension CircuitBreakerReliability.StressTests {
    /// How the policy and the breaker nest.
    enum Nesting: Sendable, CaseIterable {
        /// `policy.execute { breaker.execute { ... } }`: the breaker sees every attempt.
        case retryAroundBreaker
        /// `breaker.execute { policy.execute { ... } }`: the breaker sees whole retried calls.
        case breakerAroundRetry
    }

    /// One stress configuration: a nesting, a breaker's rules, and the seed that draws each call's plan.
    struct Scenario: Sendable, CustomTestStringConvertible {
        var nesting: Nesting
        var tripRule: CircuitBreakerTripRule
        var slowCallRule: CircuitBreakerSlowCallRule?
        var seed: UInt64
        /// The run length that trips the breaker, under a consecutive-failures rule.
        var consecutiveFailuresToTrip: Int?
        /// The window's size, under a failure-rate rule over a count window.
        var countWindowSize: Int?

        static func consecutiveFailures(_ count: Int, _ nesting: Nesting, seed: UInt64) -> Self {
            Self(nesting: nesting, tripRule: .consecutiveFailures(count), seed: seed, consecutiveFailuresToTrip: count)
        }

        static func countWindow(
            threshold: Double,
            minimumCalls: Int,
            size: Int,
            _ nesting: Nesting,
            seed: UInt64
        ) -> Self {
            Self(
                nesting: nesting,
                tripRule: .failureRate(threshold: threshold, minimumCalls: minimumCalls, window: .count(size)),
                seed: seed, countWindowSize: size)
        }

        static func timeWindow(
            threshold: Double,
            minimumCalls: Int,
            slowerThan slowThreshold: Duration,
            _ nesting: Nesting,
            seed: UInt64
        ) -> Self {
            Self(
                nesting: nesting,
                tripRule: .failureRate(
                    threshold: threshold, minimumCalls: minimumCalls, window: .time(.seconds(10), buckets: 10)),
                slowCallRule: .slowerThan(slowThreshold), seed: seed)
        }

        var testDescription: String {
            let slow = self.slowCallRule.map { ", \($0)" } ?? ""
            return "\(self.nesting), \(self.tripRule)\(slow)"
        }
    }
}

private typealias BreakerStressNesting = CircuitBreakerReliability.StressTests.Nesting
private typealias BreakerStressScenario = CircuitBreakerReliability.StressTests.Scenario

/// What one call's operation does.
private enum BreakerStressBehaviour: Sendable, Equatable {
    case succeed
    /// Every run fails with a counted, retryable error.
    case fail
    /// The first `n` runs fail, then the operation succeeds.
    case failFirst(Int)
    /// Sleeps on the test clock, then succeeds or fails.
    case slow(Duration, fails: Bool)
    /// The first run parks on the lot until the test releases it (or cancels the task);
    /// released, it does what the release says; later runs succeed.
    case gated
    /// Cancels its own task, then throws an error that would otherwise count.
    case cancelsItself
    /// Succeeds at once, except as a half-open probe: then it hangs on the test clock past
    /// its probe lease, and its slot goes to the next caller.
    case hangsIfProbe
    /// HTTP 404: the breaker does not count it, the policy does not retry it.
    case notCounted
    /// HTTP 429 with a 1-second hint: the policy stops, the breaker's pushback opens it.
    case tooManyRequests
}

/// When a call's task is cancelled from outside.
private enum BreakerStressCancellation: Sendable, Equatable {
    case none
    /// Right after the task is created: before its first attempt, or during one.
    case early
    /// While its operation is parked on the lot (gated calls only).
    case whileParked
}

/// One call's plan, decided by its index and the scenario's seed alone.
private struct BreakerStressPlan: Sendable {
    let index: Int
    let behaviour: BreakerStressBehaviour
    let cancellation: BreakerStressCancellation
    /// Whether the call goes through `outcome` (which reports attempts and a stop reason) or `execute`.
    let usesOutcome: Bool
    /// How long after the start the call arrives, on the test clock, so that calls meet every state.
    let arrival: Duration

    init(
        index: Int, behaviour: BreakerStressBehaviour, cancellation: BreakerStressCancellation,
        arrival: Duration = .zero
    ) {
        self.index = index
        self.behaviour = behaviour
        self.cancellation = cancellation
        self.usesOutcome = index.isMultiple(of: 2)
        self.arrival = arrival
    }

    init(index: Int, seed: UInt64) {
        var generator = SeededRandomNumberGenerator(seed: seed &+ UInt64(index) &* 0x9E37_79B9)
        let roll = Int.random(in: 0..<1_000, using: &generator)
        let count = Int.random(in: 1...3, using: &generator)
        let behaviour: BreakerStressBehaviour
        switch roll {
        case 0..<500: behaviour = .succeed
        case 500..<560: behaviour = .fail
        case 560..<620: behaviour = .hangsIfProbe
        case 620..<720: behaviour = .failFirst(count)
        case 720..<840: behaviour = .slow(.seconds(count), fails: count == 3)
        case 840..<900: behaviour = .gated
        case 900..<950: behaviour = .cancelsItself
        case 950..<997: behaviour = .notCounted
        default: behaviour = .tooManyRequests
        }
        let cancelRoll = Int.random(in: 0..<100, using: &generator)
        let cancellation: BreakerStressCancellation
        if behaviour == .gated {
            cancellation = cancelRoll < 40 ? .whileParked : (cancelRoll < 45 ? .early : .none)
        } else {
            cancellation = cancelRoll < 6 ? .early : .none
        }
        let arrival = Duration.milliseconds(250 * Int.random(in: 0..<240, using: &generator))
        self.init(index: index, behaviour: behaviour, cancellation: cancellation, arrival: arrival)
    }

    /// Whether the operation can ever succeed.
    var canSucceed: Bool {
        switch self.behaviour {
        case .succeed, .failFirst, .gated, .hangsIfProbe: true
        case .slow(_, let fails): !fails
        case .fail, .cancelsItself, .notCounted, .tooManyRequests: false
        }
    }

    /// Whether the call's task is ever cancelled, from outside or by itself.
    var isCancelled: Bool {
        self.cancellation != .none || self.behaviour == .cancelsItself
    }
}

/// A counted, retryable failure, carrying the index of the call that threw it.
private struct BreakerStressFailure: Error, Equatable {
    var index: Int
}

/// An HTTP failure carrying the index of the call that threw it.
private struct BreakerStressHTTPFailure: Error, HTTPStatusReporting, RetryAfterProviding {
    var index: Int
    var httpStatusCode: Int?
    var retryAfter: Duration?
}

// MARK: - One call's result

/// What one call produced, and what the test saw while it ran.
private struct BreakerStressRecord: Sendable {
    let index: Int
    let result: Result<Int, any Error>
    /// From the policy's outcome, when the call went through `outcome`.
    let attempts: Int?
    let stopReason: RetryStopReason?
    /// Times the policy ran its operation (an attempt), counted by the test.
    let policyAttempts: Int

    var succeeded: Bool {
        if case .success = self.result { return true }
        return false
    }

    var error: (any Error)? {
        if case .failure(let error) = self.result { return error }
        return nil
    }

    /// Every way this record breaks the call's contract.
    func problems(plan: BreakerStressPlan, maximumAttempts: Int) -> [String] {
        var problems: [String] = []
        func fail(_ message: String) { problems.append("call \(self.index) (\(plan.behaviour)): \(message)") }

        if self.policyAttempts > maximumAttempts { fail("\(self.policyAttempts) attempts") }
        if let attempts = self.attempts, attempts != self.policyAttempts {
            fail("outcome reports \(attempts) attempts, the operation ran \(self.policyAttempts)")
        }
        switch self.result {
        case .success(let value):
            if value != self.index { fail("got call \(value)'s value") }
            if !plan.canSucceed { fail("succeeded, which its operation never does") }
            if let reason = self.stopReason, reason != .succeeded { fail("succeeded with stop reason \(reason)") }
        case .failure(let error):
            switch error {
            case let failure as BreakerStressFailure:
                if failure.index != self.index { fail("got call \(failure.index)'s error") }
            case let failure as BreakerStressHTTPFailure:
                if failure.index != self.index { fail("got call \(failure.index)'s error") }
            case is CircuitBreakerOpenError, is CancellationError:
                break
            default:
                fail("unexpected error \(error)")
            }
            if error is CancellationError, !plan.isCancelled { fail("cancelled, but no one cancelled it") }
            if let reason = self.stopReason {
                if reason == .succeeded { fail("failed with stop reason succeeded") }
                var allowed: Set<RetryStopReason> = [.exhausted, .budgetExhausted]
                switch plan.behaviour {
                case .notCounted: allowed.insert(.notRetryable)
                case .tooManyRequests: allowed.insert(.tooManyRequests)
                default: break
                }
                if plan.isCancelled { allowed.insert(.cancelled) }
                if !allowed.contains(reason) { fail("stopped as \(reason)") }
            }
        }
        return problems
    }
}

/// What one call's task has seen; used only by that task.
private final class BreakerStressCallContext {
    var policyAttempts = 0
    var operationRuns = 0
    var hasParked = false
    /// Whether the current run of the operation is a half-open probe.
    var isProbe = false
    /// Set once the test knows the task is cancelled (it cancelled itself, or its park ended in cancellation).
    var isKnownCancelled = false
}

// MARK: - The run

/// One breaker, one policy, one budget and one clock, shared by every call.
private final class BreakerStressRun: Sendable {
    let clock: BreakerStressClock
    let breaker: CircuitBreaker
    let policy: RetryPolicy
    let budget: RetryBudget
    let nesting: BreakerStressNesting
    let monitor: BreakerStressMonitor
    let observer: BreakerStressObserver
    let lot: BreakerStressLot
    /// Counts calls that finished without parking, and parks: it reaches the call count once every call has settled.
    let settled = Countdown()
    private let isFinished = Lock(false)

    init(
        scenario: BreakerStressScenario,
        callCount: Int,
        maximumAttempts: Int,
        maximumProbes: Int,
        successesToClose: Int,
        probeLease: Duration,
        openDuration: CircuitBreakerOpenDuration = .growing(initial: .seconds(2), multiplier: 2, maximum: .seconds(8))
    ) throws {
        let clock = BreakerStressClock(callCount: callCount)
        let observer = BreakerStressObserver()
        self.lot = BreakerStressLot(clock: clock)
        let budget = try RetryBudget(maximumTokens: 100, tokenRatio: 0.5)
        self.clock = clock
        self.observer = observer
        self.nesting = scenario.nesting
        self.budget = budget
        self.breaker = try CircuitBreaker(
            name: "stress", tripRule: scenario.tripRule, slowCallRule: scenario.slowCallRule,
            openDuration: openDuration, maximumProbes: maximumProbes, successesToClose: successesToClose,
            probeLease: probeLease, observer: observer, clock: clock)
        self.policy = try RetryPolicy(
            maximumAttempts: maximumAttempts, backoff: .constant(.milliseconds(500)), jitter: .full,
            budget: budget, clock: clock, generator: SeededRandomNumberGenerator(seed: scenario.seed))
        self.monitor = BreakerStressMonitor(
            maximumProbes: maximumProbes, successesToClose: successesToClose, scenario: scenario,
            budget: budget)
    }

    var finished: Bool { self.isFinished.withLock { $0 } }

    func finish() {
        self.isFinished.withLock { $0 = true }
    }

    /// Runs one call through the policy and the breaker, nested as the scenario says.
    func call(_ plan: BreakerStressPlan) async -> BreakerStressRecord {
        if plan.arrival > .zero {
            // A task cancelled while it waits to arrive still makes its call, cancelled before the first attempt.
            try? await self.clock.sleep(for: plan.arrival)
        }
        let context = BreakerStressCallContext()
        var result: Result<Int, any Error>
        var attempts: Int?
        var stopReason: RetryStopReason?
        switch self.nesting {
        case .retryAroundBreaker:
            let attempt = {
                try await self.throughBreaker(plan, context) { try await self.operation(plan, context) }
            }
            if plan.usesOutcome {
                let outcome = await self.policy.outcome { try await self.attempt(plan, context, attempt) }
                (result, attempts, stopReason) = (outcome.result, outcome.attempts, outcome.stopReason)
            } else {
                do {
                    result = .success(try await self.policy.execute { try await self.attempt(plan, context, attempt) })
                } catch {
                    result = .failure(error)
                }
            }
        case .breakerAroundRetry:
            do {
                result = .success(
                    try await self.throughBreaker(plan, context) {
                        let operation = { try await self.operation(plan, context) }
                        if plan.usesOutcome {
                            let outcome = await self.policy.outcome {
                                try await self.attempt(plan, context, operation)
                            }
                            (attempts, stopReason) = (outcome.attempts, outcome.stopReason)
                            return try outcome.get()
                        }
                        return try await self.policy.execute { try await self.attempt(plan, context, operation) }
                    })
            } catch {
                result = .failure(error)
            }
        }
        if !self.lot.hasParked(plan.index) {
            self.settled.increment()
        }
        self.monitor.recordOutcome(of: plan.index)
        self.clock.callBlocked(1)
        return BreakerStressRecord(
            index: plan.index, result: result, attempts: attempts, stopReason: stopReason,
            policyAttempts: context.policyAttempts)
    }

    /// One attempt of the policy: counted, and checked not to start after a known cancellation.
    private func attempt(
        _ plan: BreakerStressPlan,
        _ context: BreakerStressCallContext,
        _ body: () async throws -> Int
    ) async throws -> Int {
        context.policyAttempts += 1
        if context.isKnownCancelled {
            self.monitor.violation("call \(plan.index) started attempt \(context.policyAttempts) after cancellation")
        }
        self.monitor.check(budget: self.budget)
        return try await body()
    }

    /// Runs `body` through the breaker, gauging the probes and checking the snapshot inside.
    private func throughBreaker(
        _ plan: BreakerStressPlan,
        _ context: BreakerStressCallContext,
        _ body: () async throws -> Int
    ) async throws -> Int {
        let before = self.breaker.snapshot()
        self.monitor.check(before)
        return try await self.breaker.execute {
            let inside = self.breaker.snapshot()
            self.monitor.check(inside)
            if inside.generation < before.generation {
                self.monitor.violation("generation went back from \(before.generation) to \(inside.generation)")
            }
            // Admitted between two snapshots of the same half-open generation: certainly a probe.
            let isProbe = inside.state == .halfOpen && inside.generation == before.generation
            // Its lease began when it was admitted, no earlier than the first snapshot.
            let probe =
                isProbe
                ? self.monitor.probeEntered(
                    generation: inside.generation, at: inside.takenAt,
                    leaseExpiry: before.takenAt + self.breaker.configuration.probeLease) : nil
            context.isProbe = isProbe
            defer {
                if let probe { self.monitor.probeLeft(probe) }
            }
            return try await body()
        }
    }

    /// The dependency: does what the plan says.
    private func operation(_ plan: BreakerStressPlan, _ context: BreakerStressCallContext) async throws -> Int {
        context.operationRuns += 1
        switch plan.behaviour {
        case .succeed:
            return plan.index
        case .fail:
            throw BreakerStressFailure(index: plan.index)
        case .failFirst(let failures):
            if context.operationRuns <= failures { throw BreakerStressFailure(index: plan.index) }
            return plan.index
        case .slow(let duration, let fails):
            try await self.clock.sleep(for: duration)
            if fails { throw BreakerStressFailure(index: plan.index) }
            return plan.index
        case .gated:
            guard !context.hasParked else { return plan.index }
            context.hasParked = true
            let release: BreakerStressLot.Release
            do {
                release = try await self.lot.park(plan.index, settled: self.settled)
            } catch {
                context.isKnownCancelled = true
                throw error
            }
            switch release {
            case .succeed:
                return plan.index
            case .fail:
                throw BreakerStressFailure(index: plan.index)
            case .notCounted:
                throw BreakerStressHTTPFailure(index: plan.index, httpStatusCode: 404)
            case .cancelItselfThenFail:
                withUnsafeCurrentTask { $0?.cancel() }
                context.isKnownCancelled = true
                throw BreakerStressFailure(index: plan.index)
            }
        case .hangsIfProbe:
            if context.isProbe {
                try await self.clock.sleep(for: self.breaker.configuration.probeLease + .seconds(10))
            }
            return plan.index
        case .cancelsItself:
            withUnsafeCurrentTask { $0?.cancel() }
            context.isKnownCancelled = true
            throw BreakerStressFailure(index: plan.index)
        case .notCounted:
            throw BreakerStressHTTPFailure(index: plan.index, httpStatusCode: 404)
        case .tooManyRequests:
            throw BreakerStressHTTPFailure(index: plan.index, httpStatusCode: 429, retryAfter: .seconds(1))
        }
    }

    /// Checks, while every call is blocked, that the breaker's taken probe slots are exactly
    /// those of the probes still inside their operations with a lease not yet expired: a slot
    /// never returned, or returned twice, shows here.
    ///
    /// Exact because time moves only while every call is blocked: a call is then never between
    /// its admission and its operation, nor between its operation and its result being recorded,
    /// and a probe's first snapshot is taken at the instant of its admission.
    func checkProbeSlotsWhileQuiet() {
        let snapshot = self.breaker.snapshot()
        let holding = self.monitor.probesHoldingSlots(generation: snapshot.generation, at: snapshot.takenAt)
        self.monitor.recordQuietCheck(slotsTaken: snapshot.probesInFlight)
        if snapshot.probesInFlight != holding {
            self.monitor.violation(
                "at \(snapshot.takenAt), \(snapshot.probesInFlight) probe slots taken but \(holding) probes hold one")
        }
    }

    /// Takes snapshots until the run finishes, checking each; returns how many it took.
    func sampleWhileRunning() async -> Int {
        var samples = 0
        var lastGeneration: UInt64 = 0
        while !self.finished {
            let snapshot = self.breaker.snapshot()
            self.monitor.check(snapshot)
            self.monitor.check(budget: self.budget)
            if snapshot.generation < lastGeneration {
                self.monitor.violation("sampled generation went back from \(lastGeneration) to \(snapshot.generation)")
            }
            lastGeneration = snapshot.generation
            samples += 1
            await Task.yield()
        }
        return samples
    }
}

// MARK: - Invariants

/// Records every violation, gauges probes by generation and counts outcomes per call.
private final class BreakerStressMonitor: Sendable {
    private struct State {
        var violations: [String] = []
        var probes: [UInt64: (generation: UInt64, leaseExpiry: Duration)] = [:]
        var nextProbe: UInt64 = 0
        var quietChecks = 0
        var quietChecksWithProbes = 0
        var maximumProbesSeen = 0
        var probeEntries = 0
        var outcomeCounts: [Int] = []
    }

    private let state = Lock(State())
    private let maximumProbes: Int
    private let successesToClose: Int
    private let consecutiveFailuresToTrip: Int?
    private let countWindowSize: Int?
    private let maximumTokens: Double

    init(maximumProbes: Int, successesToClose: Int, scenario: BreakerStressScenario, budget: RetryBudget) {
        self.maximumProbes = maximumProbes
        self.successesToClose = successesToClose
        self.maximumTokens = budget.maximumTokens
        self.consecutiveFailuresToTrip = scenario.consecutiveFailuresToTrip
        self.countWindowSize = scenario.countWindowSize
    }

    var violations: [String] { self.state.withLock { $0.violations } }
    var maximumProbesSeen: Int { self.state.withLock { $0.maximumProbesSeen } }
    var probeEntries: Int { self.state.withLock { $0.probeEntries } }
    var outcomeCounts: [Int] { self.state.withLock { $0.outcomeCounts } }

    func violation(_ message: String) {
        self.state.withLock { $0.violations.append(message) }
    }

    func recordOutcome(of index: Int) {
        self.state.withLock { state in
            if state.outcomeCounts.count <= index {
                state.outcomeCounts += Array(repeating: 0, count: index + 1 - state.outcomeCounts.count)
            }
            state.outcomeCounts[index] += 1
        }
    }

    /// Counts a probe in; a violation if more probes of its generation now hold a slot than allowed.
    ///
    /// A probe holds its slot until it leaves or its lease expires, when the breaker gives the
    /// slot to the next caller.
    func probeEntered(generation: UInt64, at now: Duration, leaseExpiry: Duration) -> UInt64 {
        self.state.withLock { state in
            state.nextProbe += 1
            state.probes[state.nextProbe] = (generation, leaseExpiry)
            let holding = state.probes.values.filter { $0.generation == generation && $0.leaseExpiry > now }.count
            state.maximumProbesSeen = max(state.maximumProbesSeen, holding)
            state.probeEntries += 1
            if holding > self.maximumProbes {
                state.violations.append("\(holding) probes of generation \(generation) held a slot at once")
            }
            return state.nextProbe
        }
    }

    /// The probes of `generation` inside their operations whose lease has not expired at `now`.
    func probesHoldingSlots(generation: UInt64, at now: Duration) -> Int {
        self.state.withLock { state in
            state.probes.values.filter { $0.generation == generation && $0.leaseExpiry > now }.count
        }
    }

    /// Counts a quiet check, and whether it saw a probe slot taken.
    func recordQuietCheck(slotsTaken: Int) {
        self.state.withLock { state in
            state.quietChecks += 1
            if slotsTaken > 0 { state.quietChecksWithProbes += 1 }
        }
    }

    var quietChecks: (all: Int, withProbes: Int) {
        self.state.withLock { ($0.quietChecks, $0.quietChecksWithProbes) }
    }

    func probeLeft(_ probe: UInt64) {
        self.state.withLock { _ = $0.probes.removeValue(forKey: probe) }
    }

    func check(budget: RetryBudget) {
        let tokens = budget.tokens
        if !(0...self.maximumTokens).contains(tokens) {
            self.violation("budget at \(tokens) tokens, outside 0...\(self.maximumTokens)")
        }
    }

    /// Checks that a snapshot agrees with itself and with the configuration.
    func check(_ snapshot: CircuitBreakerSnapshot) {
        var problems: [String] = []
        let state = snapshot.state
        if snapshot.probesInFlight < 0 || snapshot.probesInFlight > self.maximumProbes {
            problems.append("\(snapshot.probesInFlight) probe slots taken")
        }
        if state != .halfOpen, snapshot.probesInFlight != 0 || snapshot.successfulProbes != 0 {
            problems.append("\(state) with probes \(snapshot.probesInFlight), successes \(snapshot.successfulProbes)")
        }
        if snapshot.successfulProbes < 0 || snapshot.successfulProbes >= self.successesToClose {
            problems.append("\(snapshot.successfulProbes) successful probes without closing")
        }
        if snapshot.recentFailures < 0 || snapshot.recentFailures > snapshot.recentCalls {
            problems.append("\(snapshot.recentFailures) failures among \(snapshot.recentCalls) calls")
        }
        if let size = self.countWindowSize, snapshot.recentCalls > size {
            problems.append("\(snapshot.recentCalls) calls in a window of \(size)")
        }
        if snapshot.recentCalls == 0 {
            if snapshot.failureRate != nil { problems.append("a failure rate over an empty window") }
        } else if snapshot.failureRate != Double(snapshot.recentFailures) / Double(snapshot.recentCalls) {
            let rate = String(describing: snapshot.failureRate)
            problems.append("failure rate \(rate) for \(snapshot.recentFailures) of \(snapshot.recentCalls) calls")
        }
        if state != .closed, snapshot.consecutiveFailures != 0 || snapshot.recentCalls != 0 {
            problems.append(
                "\(state) still counting \(snapshot.consecutiveFailures) failures, \(snapshot.recentCalls) calls")
        }
        if let limit = self.consecutiveFailuresToTrip, snapshot.consecutiveFailures >= limit {
            problems.append("closed after \(snapshot.consecutiveFailures) consecutive failures")
        }
        switch state {
        case .closed:
            if snapshot.openedAt != nil || snapshot.remainingOpenTime != nil || snapshot.consecutiveTrips != 0 {
                problems.append("closed with open-state data: \(snapshot)")
            }
        case .open:
            if snapshot.openedAt == nil || (snapshot.remainingOpenTime ?? .zero) <= .zero {
                problems.append("open with no time left: \(snapshot)")
            }
        case .halfOpen:
            if snapshot.openedAt == nil || snapshot.remainingOpenTime != nil {
                problems.append("half-open with open-state data: \(snapshot)")
            }
        default:
            problems.append("unexpected state \(state)")
        }
        if !problems.isEmpty {
            self.state.withLock { $0.violations += problems }
        }
    }
}

/// Records the breaker's transitions and counts its rejections.
private final class BreakerStressObserver: CircuitBreakerObserver {
    private let state = Lock((changes: [CircuitBreakerStateChangeEvent](), rejections: 0))

    var changes: [CircuitBreakerStateChangeEvent] { self.state.withLock { $0.changes } }
    var rejections: Int { self.state.withLock { $0.rejections } }

    func stateChanged(_ event: CircuitBreakerStateChangeEvent) {
        self.state.withLock { $0.changes.append(event) }
    }

    func callRejected(_ event: CircuitBreakerRejectionEvent) {
        self.state.withLock { $0.rejections += 1 }
    }
}

// MARK: - Parking and driving time

/// Parks operations on continuations until the test releases them; a cancelled task's park ends at once.
private final class BreakerStressLot: Sendable {
    enum Release: Sendable {
        case succeed
        case fail
        case notCounted
        case cancelItselfThenFail
    }

    private struct State {
        var parked: [(index: Int, continuation: CheckedContinuation<Release, any Error>)] = []
        var everParked: Set<Int> = []
        var cancelledBeforeParking: Set<Int> = []
        var isOpen = false
    }

    private let state = Lock(State())
    private let clock: BreakerStressClock

    init(clock: BreakerStressClock) {
        self.clock = clock
    }

    /// The calls parked now, in the order they parked.
    var parkedIndices: [Int] { self.state.withLock { $0.parked.map(\.index) } }

    func hasParked(_ index: Int) -> Bool {
        self.state.withLock { $0.everParked.contains(index) }
    }

    /// Lets every later park return at once, as if released to succeed.
    func open() {
        self.state.withLock { $0.isOpen = true }
    }

    /// Parks call `index` until released; throws `CancellationError` when its task is cancelled.
    ///
    /// Returns ``Release/succeed`` at once, without suspending, once the lot is open.
    func park(_ index: Int, settled: Countdown) async throws -> Release {
        if self.state.withLock({ $0.isOpen }) { return .succeed }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Release, any Error>) in
                let isCancelled = self.state.withLock { state in
                    if state.cancelledBeforeParking.remove(index) != nil { return true }
                    state.parked.append((index, continuation))
                    state.everParked.insert(index)
                    return false
                }
                if isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                self.clock.callBlocked(1)
                settled.increment()
            }
        } onCancel: {
            let continuation = self.state.withLock { state -> CheckedContinuation<Release, any Error>? in
                if let position = state.parked.firstIndex(where: { $0.index == index }) {
                    return state.parked.remove(at: position).continuation
                }
                if !state.everParked.contains(index) { state.cancelledBeforeParking.insert(index) }
                return nil
            }
            if let continuation {
                self.clock.callBlocked(-1)
                continuation.resume(throwing: CancellationError())
            }
        }
    }

    /// Lets call `index` go on, doing what `release` says.
    func release(_ index: Int, with release: Release = .succeed) {
        let continuation = self.state.withLock { state -> CheckedContinuation<Release, any Error>? in
            guard let position = state.parked.firstIndex(where: { $0.index == index }) else { return nil }
            return state.parked.remove(at: position).continuation
        }
        if let continuation {
            self.clock.callBlocked(-1)
            continuation.resume(returning: release)
        }
    }
}

/// A test clock that also knows how many of the run's call tasks are blocked: sleeping on
/// it, parked on the lot, or finished. Its driver moves time only when every call is
/// blocked and at least one sleeps, so that time never runs ahead of the calls: each step
/// is a moment at which the whole run has done everything it can without time moving.
///
/// It keeps the deadlines of its sleeps in a heap, so that a step finds the sleepers it wakes
/// without looking at the thousands that stay asleep (the heap a ``TestClock`` keeps its
/// sleepers in). Like a ``TestClock``, it
/// wakes the sleepers due at a step earliest first, and a sleep whose deadline has passed by
/// the time it parks returns at once.
private final class BreakerStressClock: Clock, Sendable {
    typealias Instant = TestClock.Instant

    private struct State {
        var now = Instant(offset: .zero)
        /// The sleeps begun and not yet returned (the calls blocked on the clock), by ID.
        var sleepers: [UInt64: Instant] = [:]
        /// The deadlines of the sleeps begun, earliest first (with some of sleeps already ended).
        var deadlines = DeadlineHeap<Void>()
        /// The parked sleepers, by ID.
        var parked: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        /// Sleeps cancelled before they parked, by ID.
        var cancelledBeforeParking: Set<UInt64> = []
        var nextID: UInt64 = 0
        /// Calls parked on the lot or finished.
        var otherBlocked = 0
        var isStopping = false
        var driverWaiter: CheckedContinuation<Void, Never>?
        var blockedWaiters: [CheckedContinuation<Void, Never>] = []

        func isQuiescent(callCount: Int) -> Bool {
            self.isStopping || (!self.sleepers.isEmpty && self.allBlocked(callCount: callCount))
        }

        func allBlocked(callCount: Int) -> Bool {
            self.sleepers.count + self.otherBlocked >= callCount
        }
    }

    private let state = Lock(State())
    private let callCount: Int

    init(callCount: Int) {
        self.callCount = callCount
    }

    var now: Instant { self.state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = self.changeState { state in
            state.nextID += 1
            state.sleepers[state.nextID] = deadline
            state.deadlines.insert((), at: deadline, id: state.nextID)
            return state.nextID
        }
        defer { self.changeState { _ = $0.sleepers.removeValue(forKey: id) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action { case park, resume, cancel }
                let action = self.state.withLock { state -> Action in
                    if state.cancelledBeforeParking.remove(id) != nil { return .cancel }
                    if deadline <= state.now { return .resume }
                    state.parked[id] = continuation
                    return .park
                }
                switch action {
                case .park: break
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let continuation = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
                if let continuation = state.parked.removeValue(forKey: id) { return continuation }
                state.cancelledBeforeParking.insert(id)
                return nil
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Returns once every call sleeps on the clock, is parked on the lot, or has finished.
    func waitUntilEveryCallIsBlocked() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isReady = self.state.withLock { state in
                if state.allBlocked(callCount: self.callCount) { return true }
                state.blockedWaiters.append(continuation)
                return false
            }
            if isReady { continuation.resume() }
        }
    }

    /// The calls sleeping on the clock now.
    var sleeperCount: Int {
        self.state.withLock { $0.sleepers.count }
    }

    /// Moves time on, counting the sleepers it wakes as no longer blocked, and wakes them,
    /// earliest first.
    func advance(by duration: Duration) {
        let woken = self.changeState { state in
            let target = state.now.advanced(by: duration)
            state.now = target
            var woken: [CheckedContinuation<Void, any Error>] = []
            while let (id, _) = state.deadlines.popFirst(dueBy: target) {
                // Counted as no longer blocked whether parked yet or not: one not yet parked
                // returns at once when it parks.
                state.sleepers[id] = nil
                if let continuation = state.parked.removeValue(forKey: id) { woken.append(continuation) }
            }
            return woken
        }
        for continuation in woken { continuation.resume() }
    }

    /// A call parked on the lot (`+1`) or left it (`-1`), or finished (`+1`).
    func callBlocked(_ change: Int) {
        self.changeState { $0.otherBlocked += change }
    }

    /// Moves time by `step` each time every call is blocked and one sleeps, until ``stop()``; returns the steps.
    ///
    /// - Parameter whileQuiet: Runs before each step, while every call is blocked.
    func drive(step: Duration, whileQuiet: () -> Void = {}) async -> Int {
        var steps = 0
        while true {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isReady = self.state.withLock { state in
                    if state.isQuiescent(callCount: self.callCount) { return true }
                    state.driverWaiter = continuation
                    return false
                }
                if isReady { continuation.resume() }
            }
            if self.state.withLock({ $0.isStopping }) { return steps }
            whileQuiet()
            self.advance(by: step)
            steps += 1
        }
    }

    /// Ends ``drive(step:)``.
    func stop() {
        self.changeState { $0.isStopping = true }
    }

    private func changeState<Result>(_ body: (inout State) -> Result) -> Result {
        let (result, waiters) = self.state.withLock { state in
            let result = body(&state)
            var waiters: [CheckedContinuation<Void, Never>] = []
            if state.isQuiescent(callCount: self.callCount), let waiter = state.driverWaiter {
                waiters.append(waiter)
                state.driverWaiter = nil
            }
            if state.allBlocked(callCount: self.callCount) {
                waiters += state.blockedWaiters
                state.blockedWaiters = []
            }
            return (result, waiters)
        }
        for waiter in waiters { waiter.resume() }
        return result
    }
}
