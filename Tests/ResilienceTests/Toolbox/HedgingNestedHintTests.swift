import Foundation
import ResilienceTesting
import Synchronization
import Testing

@testable import Resilience

/// A retry-after hint heard by a call nested in one attempt of a hedged call (another hedged
/// call, directly or as a pipeline's stage) reaches the enclosing call at once: its other running
/// attempts, and the policies in them, send nothing before the hint has passed, and it starts no
/// attempt before then.
@Suite("Hedging: a hint heard by a nested call")
struct HedgingNestedHintTests {
    /// How the outer call is made, and what the nested call hears.
    struct Route: Sendable, CustomTestStringConvertible {
        /// The status of the inner call's failure: a 503 leaves the inner call running (its other
        /// attempt does), a 429 ends it at once, and the outer attempt then carries on by itself.
        let status: Int
        /// Whether the calls are pipelines with a hedging stage, the inner one nested in the outer
        /// one's first attempt, rather than direct hedged calls.
        let throughPipelines: Bool

        var testDescription: String { "\(self.status)\(self.throughPipelines ? " through pipelines" : "")" }

        static let all = [
            Route(status: 503, throughPipelines: false), Route(status: 429, throughPipelines: false),
            Route(status: 503, throughPipelines: true),
        ]
    }

    /// An outer hedged call, hedge delay 0.5 s, whose first attempt runs an inner hedged call,
    /// hedge delay 0.25 s, and whose second attempt runs a policy that waits at most `patience`
    /// for a hint. The inner call's first attempt fails at t = 1 with a 30 s hint; its second,
    /// started at t = 0.25, answers at t = 40.25. An inner call that fails falls back to a slow
    /// path answering at t = 41. The policy's first request, sent at t = 0.5, fails at t = 2 with
    /// no hint, and the policy would send again after its 1 s backoff; any later request succeeds.
    struct Scene: Sendable {
        let clock = TestClock()
        let route: Route
        let outer: Hedging
        let inner: Hedging
        let policy: RetryPolicy
        let outerRuns = Counter()
        let innerRuns = Counter()
        /// When the policy in the outer call's second attempt sent its requests.
        let sends = Recorder<Duration>()
        static let hint: Duration = .seconds(30)

        init(_ route: Route, patience: Duration) throws {
            self.route = route
            self.outer = try Hedging(delay: .fixed(.milliseconds(500)), maximumHedges: 1, clock: self.clock)
            self.inner = try Hedging(delay: .fixed(.milliseconds(250)), maximumHedges: 1, clock: self.clock)
            self.policy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: patience,
                clock: self.clock)
        }

        /// One attempt of the inner call.
        func innerAttempt() async throws -> Int {
            if self.innerRuns.increment() == 1 {
                try await self.clock.sleep(for: .seconds(1))
                throw StatusError(status: self.route.status, hint: Self.hint)
            }
            try await self.clock.sleep(for: .seconds(40))
            return 1
        }

        /// The outer call's first attempt: the inner call, or when it fails, a slow path of its own.
        func firstOuterAttempt(_ innerCall: () async throws -> Int) async throws -> Int {
            do {
                return try await innerCall()
            } catch {
                try await self.clock.sleep(for: .seconds(40))
                return 1
            }
        }

        /// One request of the policy in the outer call's second attempt.
        func secondOuterRequest() async throws -> Int {
            self.sends.record(self.clock.now.offset)
            if self.sends.values.count == 1 {
                try await self.clock.sleep(for: .milliseconds(1_500))
                throw StatusError(status: 503)
            }
            return 7
        }

        /// The outer call.
        func call() async throws -> Int {
            guard !self.route.throughPipelines else { return try await self.callThroughPipelines() }
            return try await self.outer.execute { () async throws -> Int in
                if self.outerRuns.increment() == 1 {
                    return try await self.firstOuterAttempt {
                        try await self.inner.execute { try await self.innerAttempt() }
                    }
                }
                return try await self.policy.execute { try await self.secondOuterRequest() }
            }
        }

        /// The outer call as a pipeline whose hedging stage runs the policy in each attempt, the
        /// first attempt running a pipeline with a hedging stage of its own.
        func callThroughPipelines() async throws -> Int {
            let outerPipeline = ResiliencePipeline {
                self.outer
                self.policy
            }
            let innerPipeline = ResiliencePipeline { self.inner }
            return try await outerPipeline.execute { () async throws -> Int in
                if self.outerRuns.increment() == 1 {
                    return try await self.firstOuterAttempt {
                        try await innerPipeline.execute { try await self.innerAttempt() }
                    }
                }
                return try await self.secondOuterRequest()
            }
        }

        /// Moves the clock to t = 1, when the inner call hears the hint, and on until the outer
        /// call's first attempt has taken it in.
        func playToTheHint() async throws {
            // The inner call's first request and the two hedge timers.
            await self.clock.waitForSleepers(count: 3)
            self.clock.advance(by: .milliseconds(250))  // t = 0.25: the inner hedge starts
            await self.clock.waitForSleepRequests(count: 4)
            await self.clock.waitForSleepers(count: 3)
            self.clock.advance(by: .milliseconds(250))  // t = 0.5: the outer hedge starts, and its policy sends
            await self.clock.waitForSleepRequests(count: 5)
            await self.clock.waitForSleepers(count: 3)
            let requests = self.clock.sleepRequests.count
            self.clock.advance(by: .milliseconds(500))  // t = 1: the inner call hears the 30 s hint
            if self.route.status == 429 {
                // The inner call ends on it at once, and the outer attempt takes its slow path.
                await self.clock.waitForSleepRequests(count: requests + 1)
            } else {
                try await yieldUntil { self.inner.failuresTaken.load(ordering: .acquiring) > 0 }
            }
            await self.clock.waitForSleepers(count: 2)  // the policy's request, and the slow inner attempt or path
        }
    }

    @Test(.timeLimit(.minutes(5)), arguments: Route.all)
    func aPolicyInAnotherAttemptOfTheEnclosingCallWaitsOutAHintANestedCallHeard(_ route: Route) async throws {
        let scene = try Scene(route, patience: .seconds(60))
        let call = Task { try await scene.call() }
        try await scene.playToTheHint()
        let requests = scene.clock.sleepRequests.count
        scene.clock.advance(by: .seconds(1))  // t = 2: the policy's request fails
        await scene.clock.waitForSleepRequests(count: requests + 1)
        #expect(scene.clock.sleepRequests.last == .seconds(29), "the policy waits its backoff, not the hint")
        scene.clock.advance(by: .milliseconds(28_999))
        // A negative check, its yields a courtesy: this move wakes no sleeper (the policy's backoff
        // ends at t = 31), and a request sent before t = 31, however late, fails the check of the
        // sends after the call below.
        for _ in 0..<10 { await Task.yield() }
        #expect(scene.sends.values == [.milliseconds(500)], "sent again before the hint had passed")
        scene.clock.advance(by: .milliseconds(1))  // t = 31: the hint has passed
        #expect(try await call.value == 7)
        #expect(scene.sends.values == [.milliseconds(500), .seconds(31)])
        #expect(scene.clock.sleeperCount == 0)
    }

    @Test(.timeLimit(.minutes(5)), arguments: Route.all)
    func aPolicyInAnotherAttemptThatWillNotWaitOutAHintANestedCallHeardStops(_ route: Route) async throws {
        let scene = try Scene(route, patience: .seconds(20))
        let call = Task { try await scene.call() }
        try await scene.playToTheHint()
        let requests = scene.clock.sleepRequests.count
        scene.clock.advance(by: .seconds(1))  // t = 2: the policy's request fails, and the policy stops
        try await yieldUntil {
            scene.outer.failuresTaken.load(ordering: .acquiring) > 0 || scene.clock.sleepRequests.count != requests
        }
        scene.clock.advance(by: .seconds(1))  // t = 3: when the policy's backoff would have ended
        scene.clock.advance(by: .seconds(38))  // t = 41: the first attempt answers
        #expect(try await call.value == 1)
        #expect(scene.sends.values == [.milliseconds(500)], "sent again before the hint had passed")
        #expect(scene.clock.sleeperCount == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func aPolicyInAnotherAttemptWaitsOutAHintAPolicyInTheFirstAttemptWaitsOut() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.milliseconds(500)), maximumHedges: 1, clock: clock)
        let first = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(60),
            clock: clock)
        let second = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, maximumRetryAfter: .seconds(60),
            clock: clock)
        let runs = Counter()
        let firstSends = Recorder<Duration>()
        let secondSends = Recorder<Duration>()
        // The first attempt's policy sends at t = 0; its request fails at t = 1 with a 30 s hint,
        // which it waits out; its request at t = 31 answers at t = 131. The second attempt's
        // policy sends at t = 0.5; its request fails at t = 2 with no hint; its next succeeds.
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                if runs.increment() == 1 {
                    return try await first.execute { () async throws -> Int in
                        firstSends.record(clock.now.offset)
                        if firstSends.values.count == 1 {
                            try await clock.sleep(for: .seconds(1))
                            throw StatusError(status: 503, hint: .seconds(30))
                        }
                        try await clock.sleep(for: .seconds(100))
                        return 1
                    }
                }
                return try await second.execute { () async throws -> Int in
                    secondSends.record(clock.now.offset)
                    if secondSends.values.count == 1 {
                        try await clock.sleep(for: .milliseconds(1_500))
                        throw StatusError(status: 503)
                    }
                    return 7
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the first request and the hedge timer
        clock.advance(by: .milliseconds(500))  // t = 0.5: the hedge starts, and its policy sends
        await clock.waitForSleepRequests(count: 3)
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .milliseconds(500))  // t = 1: the first policy hears the hint, and waits it out
        await clock.waitForSleepRequests(count: 4)
        #expect(clock.sleepRequests.last == .seconds(30))
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))  // t = 2: the second policy's request fails
        await clock.waitForSleepRequests(count: 5)
        #expect(clock.sleepRequests.last == .seconds(29), "the policy waits its backoff, not the hint")
        clock.advance(by: .milliseconds(28_999))
        // A negative check, its yields a courtesy: this move wakes no sleeper (the policy's backoff
        // ends at t = 31), and a request sent before t = 31, however late, fails the check of the
        // sends after the call below.
        for _ in 0..<10 { await Task.yield() }
        #expect(secondSends.values == [.milliseconds(500)], "sent again before the hint had passed")
        clock.advance(by: .milliseconds(1))  // t = 31: the hint has passed
        #expect(try await call.value == 7)
        #expect(secondSends.values == [.milliseconds(500), .seconds(31)])
        #expect(clock.sleeperCount == 0)
    }

    @Test(.timeLimit(.minutes(5)))
    func aPolicyOnAnotherClockThanTheHedgedCallAroundItWaitsOutItsOwnHintOnce() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(3_600)), maximumHedges: 1, clock: TestClock())
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let sends = Recorder<Duration>()
        let call = Task {
            try await hedging.execute { () async throws -> Int in
                try await policy.execute { () async throws -> Int in
                    sends.record(clock.now.offset)
                    if sends.values.count == 1 { throw StatusError(status: 503, hint: .seconds(2)) }
                    return 7
                }
            }
        }
        await clock.waitForSleepers(count: 1)  // the policy waits out its hint
        clock.advance(by: .seconds(2))
        // Either the policy sends again now, or it waits once more, for its own hint read on the
        // hedging's clock, which has not moved.
        try await yieldUntil { sends.values.count >= 2 || clock.sleepRequests.count >= 2 }
        #expect(clock.sleepRequests == [.seconds(2)], "the policy waited again for its own hint")
        guard clock.sleepRequests.count == 1 else {
            call.cancel()  // it would wait for ever: the hedging's clock never moves
            _ = await call.result
            return
        }
        #expect(try await call.value == 7)
        #expect(sends.values == [.zero, .seconds(2)])
    }

    @Test(.timeLimit(.minutes(5)), arguments: [false, true])
    func theEnclosingCallStartsNoHedgeBeforeAHintANestedCallHeardHasPassed(_ throughPipelines: Bool) async throws {
        let clock = TestClock()
        let outer = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 1, clock: clock)
        let inner = try Hedging(delay: .fixed(.milliseconds(250)), maximumHedges: 1, clock: clock)
        let innerRuns = Counter()
        let outerRuns = Counter()
        let hedgeStarts = Recorder<Duration>()
        // The inner call's first attempt fails at t = 0.75 with a 30 s hint; its second, started at
        // t = 0.25, answers at t = 100.25. The outer call's hedge, due at t = 1, answers at once.
        let innerAttempt = { @Sendable () async throws -> Int in
            if innerRuns.increment() == 1 {
                try await clock.sleep(for: .milliseconds(750))
                throw StatusError(status: 503, hint: .seconds(30))
            }
            try await clock.sleep(for: .seconds(100))
            return 1
        }
        let outerAttempt = { @Sendable (innerCall: () async throws -> Int) async throws -> Int in
            if outerRuns.increment() == 1 { return try await innerCall() }
            hedgeStarts.record(clock.now.offset)
            return 7
        }
        let call = Task { () async throws -> Int in
            if throughPipelines {
                let outerPipeline = ResiliencePipeline { outer }
                let innerPipeline = ResiliencePipeline { inner }
                return try await outerPipeline.execute {
                    try await outerAttempt { try await innerPipeline.execute { try await innerAttempt() } }
                }
            }
            return try await outer.execute {
                try await outerAttempt { try await inner.execute { try await innerAttempt() } }
            }
        }
        await clock.waitForSleepers(count: 3)  // the inner call's first request and the two hedge timers
        clock.advance(by: .milliseconds(250))  // t = 0.25: the inner hedge starts
        await clock.waitForSleepRequests(count: 4)
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .milliseconds(500))  // t = 0.75: the inner call hears the 30 s hint
        try await yieldUntil { inner.failuresTaken.load(ordering: .acquiring) > 0 }
        let requests = clock.sleepRequests.count
        clock.advance(by: .milliseconds(250))  // t = 1: the outer hedge is due
        // Either the hedge starts now, or the outer call's timer waits for the hint.
        try await yieldUntil { !hedgeStarts.values.isEmpty || clock.sleepRequests.count != requests }
        #expect(hedgeStarts.values.isEmpty, "a hedge started before the hint had passed")
        clock.advance(by: .milliseconds(29_749))
        // A negative check, its yields a courtesy: this move wakes no sleeper (the outer call's
        // timer is due at t = 30.75), and a hedge started before then, however late, fails the
        // check of the hedge's start after the call below.
        for _ in 0..<10 { await Task.yield() }
        #expect(hedgeStarts.values.isEmpty, "a hedge started before the hint had passed")
        clock.advance(by: .milliseconds(1))  // t = 30.75: the hint has passed
        #expect(try await call.value == 7)
        #expect(hedgeStarts.values == [.milliseconds(30_750)])
        #expect(clock.sleeperCount == 0)
    }
}
