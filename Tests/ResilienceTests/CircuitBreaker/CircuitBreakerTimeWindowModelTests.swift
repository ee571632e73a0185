import ResilienceTesting
import Testing

@testable import Resilience

/// Random runs of successes, failures and slow calls against a failure-rate rule over a time
/// window, checked call by call against a plain model that keeps every call and judges the
/// rule after each one. The breaker counts many of those successes without its lock; it must
/// open exactly when the model does, on the call that meets the rule, and never otherwise.
@Suite(.timeLimit(.minutes(5)))
struct CircuitBreakerTimeWindowModelTests {
    /// The rule, worked out from every call kept: no buckets to hand over, no lock-free path.
    struct Model {
        let threshold: Double
        let minimumCalls: Int
        let bucketNanoseconds: Int64
        let buckets: Int64
        private(set) var calls: [(epoch: Int64, failed: Bool)] = []

        init(threshold: Double, minimumCalls: Int, window: Duration, buckets: Int) {
            self.threshold = threshold
            self.minimumCalls = minimumCalls
            self.buckets = Int64(buckets)
            self.bucketNanoseconds = Int64(window.attoseconds / 1_000_000_000) / Int64(buckets)
        }

        /// The calls and failures in the window at `nanoseconds` of elapsed time.
        func totals(at nanoseconds: Int64) -> (calls: Int, failures: Int) {
            let current = nanoseconds / self.bucketNanoseconds
            let kept = self.calls.filter { $0.epoch > current - self.buckets && $0.epoch <= current }
            return (kept.count, kept.count(where: \.failed))
        }

        /// Counts a call that finished at `nanoseconds`; returns whether the rule is now met.
        mutating func record(failed: Bool, at nanoseconds: Int64) -> Bool {
            self.calls.append((nanoseconds / self.bucketNanoseconds, failed))
            let totals = self.totals(at: nanoseconds)
            guard totals.calls >= self.minimumCalls else { return false }
            return Double(totals.failures) / Double(totals.calls) >= self.threshold
        }

        mutating func removeAll() {
            self.calls.removeAll()
        }
    }

    enum ClockKind: CaseIterable {
        /// The test clock: a success's bucket from a precise reading.
        case testClock
        /// The system clock as Linux has it, simulated: a success's bucket from a cheap bound.
        case systemClock
    }

    @Test(arguments: ClockKind.allCases, 1...24 as ClosedRange<UInt64>)
    func theBreakerOpensExactlyWhenTheRuleJudgedAfterEveryCallIsMet(clockKind: ClockKind, seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let buckets = [1, 2, 4, 5].randomElement(using: &random)!
        let threshold = [0.2, 1.0 / 3.0, 0.5, 0.6].randomElement(using: &random)!
        // Out of 20 calls, how many fail; one more is slow.
        let failing = [7, 10, 13].randomElement(using: &random)!
        let minimumCalls = Int.random(in: 1...8, using: &random)
        let slowThreshold: Duration? = Bool.random(using: &random) ? .seconds(2) : nil
        let window = Duration.seconds(10)
        let configuration = try CircuitBreakerConfiguration(
            tripRule: .failureRate(
                threshold: threshold, minimumCalls: minimumCalls, window: .time(window, buckets: buckets)),
            slowCallRule: slowThreshold.map { .slowerThan($0) })
        let context =
            "seed \(seed), \(clockKind), \(buckets) buckets, threshold \(threshold), minimumCalls \(minimumCalls), "
            + "slow-call rule \(slowThreshold.map { "\($0)" } ?? "none"), \(failing) in 20 calls failing"

        let observer = RecordingBreakerObserver()
        let testClock = TestClock()
        let systemClocks = SimulatedSystemClocks()
        let elapsedClock =
            switch clockKind {
            case .testClock: ElapsedClock(testClock)
            case .systemClock: ElapsedClock(simulating: systemClocks.source())
            }
        let breaker = CircuitBreaker(
            name: "model", configuration: configuration, observer: observer, elapsedClock: elapsedClock)
        var elapsed: Int64 = 0
        let advance = { (duration: Duration) in
            switch clockKind {
            case .testClock: testClock.advance(by: duration)
            case .systemClock: systemClocks.advance(by: duration)
            }
        }

        var model = Model(threshold: threshold, minimumCalls: minimumCalls, window: window, buckets: buckets)
        var openings = 0
        for step in 0..<400 {
            // Time between calls: mostly within a bucket, sometimes across buckets or the whole window.
            let pause: Duration =
                switch Int.random(in: 0..<20, using: &random) {
                case 0..<12: .zero
                case 12..<18: .milliseconds(Int.random(in: 1...1_500, using: &random))
                case 18: .milliseconds(Int.random(in: 1_500...4_000, using: &random))
                default: .seconds(Int.random(in: 8...15, using: &random))
                }
            advance(pause)
            elapsed += Int64(pause.attoseconds / 1_000_000_000)

            // The call: a success (some taking a while, under the slow-call threshold), a failure, or a slow success.
            let kind = Int.random(in: 0..<20, using: &random)
            let fails = kind < failing
            let slow = kind == 19
            let duration: Duration =
                if slow {
                    .milliseconds(2_500)
                } else if Int.random(in: 0..<4, using: &random) == 0 {
                    .milliseconds(Int.random(in: 1...1_900, using: &random))
                } else {
                    .zero
                }
            _ = try? await breaker.execute { () throws -> Int in
                advance(duration)
                if fails { throw TransientError() }
                return 1
            }
            elapsed += Int64(duration.attoseconds / 1_000_000_000)
            let countsAsFailure = fails || (slow && slowThreshold != nil)
            let opens = model.record(failed: countsAsFailure, at: elapsed)

            let changes = observer.changes
            let expected = openings * 2 + (opens ? 1 : 0)
            guard changes.count == expected else {
                let outcome = countsAsFailure ? "failure" : "success"
                let message =
                    "step \(step): the breaker \(opens ? "stayed closed" : "opened") (\(changes.count) changes, "
                    + "\(expected) expected) after a \(outcome) with \(model.totals(at: elapsed)) in the window; "
                    + context
                Issue.record(Comment(rawValue: message))
                return
            }
            if opens {
                #expect(changes.last?.to == .open, "step \(step); \(context)")
                openings += 1
                breaker.reset()
                model.removeAll()
            } else if Int.random(in: 0..<5, using: &random) == 0 {
                // Now and then the counts, under the lock (which hands over what was counted without it).
                let snapshot = breaker.snapshot()
                let totals = model.totals(at: elapsed)
                #expect(snapshot.recentCalls == totals.calls, "step \(step); \(context)")
                #expect(snapshot.recentFailures == totals.failures, "step \(step); \(context)")
            }
        }
        #expect(openings > 0, "the run should trip the breaker at least once; \(context)")
    }

    /// Tasks share one breaker, successes counted with and without the lock interleaving as
    /// they may. Every call that meets the rule is judged when it is counted, and opening forgets
    /// the window, so a breaker still closed never holds a window that meets the rule: time
    /// does not move, every call lands in one bucket, and no bucket leaves the window.
    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func aClosedBreakerNeverHoldsAWindowThatMeetsTheRuleUnderConcurrentCalls(seed: UInt64) async throws {
        let threshold = 0.5
        let minimumCalls = 6
        let breaker = try CircuitBreaker(
            name: "shared",
            tripRule: .failureRate(
                threshold: threshold, minimumCalls: minimumCalls, window: .time(.seconds(10), buckets: 5)),
            clock: TestClock())
        var random = SeededRandomNumberGenerator(seed: seed)
        for round in 0..<20 {
            breaker.reset()
            // Failures from some tasks, then successes from all of them side by side: the last
            // successes bring the window up to `minimumCalls`, some at a rate at the threshold.
            let failures = (0..<4).map { _ in Int.random(in: 0...1, using: &random) }
            let successes = (0..<4).map { _ in Int.random(in: 0...2, using: &random) }
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<4 {
                    group.addTask { for _ in 0..<failures[task] { await breaker.fail() } }
                }
            }
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<4 {
                    group.addTask { for _ in 0..<successes[task] { _ = try? await breaker.execute { 1 } } }
                }
            }
            let snapshot = breaker.snapshot()
            guard snapshot.state == .closed, snapshot.recentCalls >= minimumCalls else { continue }
            let rate = Double(snapshot.recentFailures) / Double(snapshot.recentCalls)
            #expect(
                rate < threshold,
                "round \(round): closed with \(snapshot.recentFailures) of \(snapshot.recentCalls) calls failed")
        }
    }
}
