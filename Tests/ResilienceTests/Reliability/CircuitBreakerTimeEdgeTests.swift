import Resilience
import ResilienceTesting
import Testing

extension CircuitBreakerReliability {
    /// Durations and clocks at their extremes: open-time schedules of `Int64.max` seconds and
    /// beyond previewed, schedules that overflow, trip numbers at `Int.min` and `Int.max`,
    /// server hints at the largest `Duration`, the longest open times, probe leases and windows
    /// a breaker accepts (`Duration.resilienceMaximum`, about 146 years; longer ones are
    /// refused, see `SettingBoundsTests`), a clock that jumps by years or centuries, one that
    /// goes back, and one that never moves. No trap, no overflow: every time the breaker
    /// reports is within `0...Duration.resilienceMaximum`, and the breaker keeps working.
    @Suite("Circuit breaker time edges", .timeLimit(.minutes(5)))
    struct TimeEdgeTests {
        static let maximum = Duration.resilienceMaximum
        /// `Int64.max` seconds and a little less than a second: the largest duration with components.
        static let largestWithComponents = Duration(
            secondsComponent: .max, attosecondsComponent: 999_999_999_999_999_999)
        /// Far beyond what `Duration.components` can express (about 1.7e20 seconds), yet a valid `Duration`.
        static let beyondComponents = Duration.seconds(Int64.max) * 18
        static let year = Duration.seconds(31_556_952)

        struct Schedule: Sendable, CustomTestStringConvertible {
            var name: String
            var openDuration: CircuitBreakerOpenDuration
            var testDescription: String { self.name }
        }

        static let schedules: [Schedule] = [
            .init(name: "fixed Int64.max seconds", openDuration: .fixed(.seconds(Int64.max))),
            .init(name: "fixed beyond components", openDuration: .fixed(beyondComponents)),
            .init(
                name: "growing to Int64.max seconds",
                openDuration: .growing(initial: .seconds(1), multiplier: 2, maximum: .seconds(Int64.max))),
            .init(
                name: "growing by 1e308",
                openDuration: .growing(initial: .seconds(1), multiplier: 1e308, maximum: largestWithComponents)),
            .init(
                name: "growing from and to beyond components",
                openDuration: .growing(initial: beyondComponents, multiplier: 3, maximum: beyondComponents)),
            .init(
                name: "growing by the largest Double",
                openDuration: .growing(
                    initial: .nanoseconds(1), multiplier: .greatestFiniteMagnitude, maximum: .seconds(Int64.max))),
        ]

        static let trips = [Int.min, Int.min + 1, -1, 0, 1, 2, 3, 62, 63, 64, 1_000, 1 << 40, Int.max - 1, Int.max]

        @Test(
            "Every trip number, from Int.min to Int.max, yields an open time within range, never shrinking",
            arguments: schedules)
        func everyTripNumberYieldsAClampedOpenTime(_ schedule: Schedule) throws {
            let durations = Self.trips.map { schedule.openDuration.duration(forTrip: $0) }
            #expect(durations.allSatisfy { $0 > .zero && $0 <= Self.maximum })
            #expect(zip(durations, durations.dropFirst()).allSatisfy { $0 <= $1 }, "open times shrank")
            // Trips below 1 are treated as the first.
            let first = schedule.openDuration.duration(forTrip: 1)
            #expect(Self.trips.prefix(5).allSatisfy { $0 <= 1 })
            #expect(durations.prefix(5).allSatisfy { $0 == first })
            #expect(schedule.openDuration.duration(forTrip: .max) == schedule.openDuration.duration(forTrip: 1 << 40))
        }

        @Test("A breaker opened for the longest duration reports it everywhere, and reopens on time")
        func aBreakerOpenForTheLongestDurationReportsIt() async throws {
            let clock = TestClock()
            let observer = RecordingBreakerObserver()
            let breaker = try CircuitBreaker(
                name: "forever", tripRule: .consecutiveFailures(1), openDuration: .fixed(Self.maximum),
                observer: observer, clock: clock)
            await breaker.fail()
            #expect(observer.changes.last?.openDuration == Self.maximum)
            #expect(breaker.snapshot().remainingOpenTime == Self.maximum)
            let rejection = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
            #expect(rejection?.retryAfter == Self.maximum)

            // A policy around it gives up at once rather than wait 146 years.
            let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
            let outcome = await policy.outcome { try await breaker.execute { 1 } }
            #expect(outcome.stopReason == .retryAfterTooLong)
            #expect(outcome.retryAfter == Self.maximum)
            #expect(clock.sleepRequests.isEmpty)

            clock.advance(by: Self.maximum - .nanoseconds(1))
            #expect(breaker.snapshot().remainingOpenTime == .nanoseconds(1))
            clock.advance(by: .nanoseconds(1))
            #expect(breaker.state == .halfOpen)
            #expect(try await breaker.execute { "probe" } == "probe")
            #expect(breaker.state == .closed)
        }

        @Test("A growing open time with a huge multiplier reaches the longest cap from the second trip on")
        func aGrowingOpenTimeWithAHugeMultiplierReachesTheCap() async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "growing", tripRule: .consecutiveFailures(1),
                openDuration: .growing(initial: .seconds(1), multiplier: 1e300, maximum: Self.maximum),
                clock: clock)
            await breaker.fail()
            #expect(breaker.snapshot().remainingOpenTime == .seconds(1))
            clock.advance(by: .seconds(1))
            await breaker.fail()  // the probe fails: the second trip
            let snapshot = breaker.snapshot()
            #expect(snapshot.consecutiveTrips == 2)
            #expect(snapshot.remainingOpenTime == Self.maximum)
        }

        struct Hint: Sendable, CustomTestStringConvertible {
            var name: String
            var duration: Duration
            var testDescription: String { self.name }
        }

        static let hugeHints: [Hint] = [
            .init(name: "Int64.max seconds", duration: .seconds(Int64.max)),
            .init(name: "the largest duration with components", duration: largestWithComponents),
            .init(name: "beyond components", duration: beyondComponents),
            .init(name: "resilienceMaximum", duration: maximum),
        ]

        @Test("A server hint at the largest durations opens the breaker for the clamped maximum", arguments: hugeHints)
        func aHugePushbackHintOpensForTheClampedMaximum(_ hint: Hint) async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "pushback", tripRule: .consecutiveFailures(100),
                pushback: .anyRetryAfter(maximum: Self.maximum), clock: clock)
            await breaker.fail(with: HTTPFailure(status: 503, retryAfter: hint.duration))
            let snapshot = breaker.snapshot()
            #expect(snapshot.state == .open)
            #expect(snapshot.remainingOpenTime == Self.maximum)
            #expect(snapshot.consecutiveTrips == 0, "opening for a server's hint is not a trip")
            let rejection = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
            #expect(rejection?.retryAfter == Self.maximum)
        }

        @Test(
            "A huge 429 hint is cut to the pushback maximum, and a policy around the breaker stops on it",
            arguments: hugeHints)
        func aHuge429HintIsCutToThePushbackMaximum(_ hint: Hint) async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "429", pushback: .tooManyRequests(maximum: .seconds(300)), clock: clock)
            let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
            let outcome = await policy.outcome {
                try await breaker.execute { throw HTTPFailure(status: 429, retryAfter: hint.duration) }
            }
            #expect(outcome.stopReason == .tooManyRequests)
            #expect(outcome.attempts == 1)
            #expect(outcome.retryAfter == Self.maximum)
            #expect(breaker.snapshot().remainingOpenTime == .seconds(300))
        }

        @Test("Negative and zero hints open nothing")
        func negativeAndZeroHintsOpenNothing() async throws {
            let breaker = try CircuitBreaker(
                name: "hints", tripRule: .consecutiveFailures(100), pushback: .anyRetryAfter(), clock: TestClock())
            for hint in [Duration.zero, .nanoseconds(-1), .seconds(Int64.min), .seconds(Int64.min) * 18] {
                await breaker.fail(with: HTTPFailure(status: 503, retryAfter: hint))
            }
            #expect(breaker.state == .closed)
            #expect(breaker.snapshot().consecutiveFailures == 4)
        }

        /// A longer lease is refused (see `DurationCeilingValidationTests`).
        @Test("The longest probe lease holds a probe's slot even after the clock jumps a century")
        func theLongestProbeLeaseHoldsTheSlot() async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "lease", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(1)),
                probeLease: Self.maximum, clock: clock)
            #expect(breaker.configuration.probeLease == Self.maximum)
            await breaker.fail()
            clock.advance(by: .seconds(1) + Self.year * 100)
            let probe = Task { try await breaker.execute { try await clock.sleep(for: Self.year * 100) } }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: Self.year * 99)
            #expect(breaker.snapshot().probesInFlight == 1)
            await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
            clock.advance(by: Self.year)
            try await probe.value
            #expect(breaker.state == .closed)
        }

        /// A longer span is refused (see `SettingBoundsTests`).
        @Test("A time window of the longest span keeps every call and never traps", arguments: [1, 1_000])
        func theLongestTimeWindowKeepsEveryCall(buckets: Int) async throws {
            let span = Self.maximum
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "window",
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 10, window: .time(span, buckets: buckets)),
                clock: clock)
            for index in 0..<9 {
                if index.isMultiple(of: 2) {
                    _ = try await breaker.execute { index }
                } else {
                    await breaker.fail()
                }
                clock.advance(by: Self.year * 10)
            }
            let snapshot = breaker.snapshot()
            #expect(snapshot.recentCalls == 9)
            #expect(snapshot.recentFailures == 4)
            #expect(breaker.state == .closed)
            await breaker.fail()  // 5 of 10 calls failed: the rate reaches the threshold
            #expect(breaker.state == .open)
        }

        @Test(
            "After the clock jumps far forward, a time window holds only new calls and keeps sliding",
            arguments: [year, year * 100, year * 145, year * 300, year * 1_000, .seconds(Int64.max), beyondComponents])
        func aTimeWindowKeepsSlidingAfterTheClockJumps(_ jump: Duration) async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "jump",
                tripRule: .failureRate(threshold: 0.9, minimumCalls: 100, window: .time(.seconds(10), buckets: 10)),
                clock: clock)
            for _ in 0..<5 { await breaker.fail() }
            #expect(breaker.snapshot().recentCalls == 5)

            clock.advance(by: jump)
            #expect(breaker.snapshot().recentCalls == 0, "calls from before the jump are long out of the window")
            for _ in 0..<3 { await breaker.fail() }
            let afterJump = breaker.snapshot()
            #expect(afterJump.recentCalls == 3)
            #expect(afterJump.takenAt == jump)

            clock.advance(by: .seconds(5))
            _ = try await breaker.execute { 1 }
            #expect(breaker.snapshot().recentCalls == 4)
            clock.advance(by: .seconds(6))
            #expect(breaker.snapshot().recentCalls == 1, "the window slid past the calls made right after the jump")
            clock.advance(by: .seconds(10))
            #expect(breaker.snapshot().recentCalls == 0)
            #expect(breaker.state == .closed)
        }

        @Test(
            "After the clock jumps far forward, open times, probes and leases still work",
            arguments: [year * 1_000, beyondComponents])
        func openTimesAndLeasesWorkAfterAJump(_ jump: Duration) async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "jump", tripRule: .consecutiveFailures(1), slowCallRule: .slowerThan(.seconds(2)),
                openDuration: .fixed(.seconds(30)), probeLease: .seconds(5), clock: clock)
            clock.advance(by: jump)
            await breaker.fail()
            #expect(breaker.snapshot().openedAt == jump)
            #expect(breaker.snapshot().remainingOpenTime == .seconds(30))
            clock.advance(by: .seconds(30))
            // A hung probe loses its slot after its lease.
            let hung = Task { try await breaker.execute { try await clock.sleep(for: .seconds(60)) } }
            await clock.waitForSleepers(count: 1)
            await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
            clock.advance(by: .seconds(5))
            #expect(try await breaker.execute { "probe" } == "probe")
            #expect(breaker.state == .closed)
            clock.advance(by: .seconds(55))
            try await hung.value
            #expect(breaker.state == .closed)
        }

        @Test("A probe that finishes after its lease does not count, even when no call came in between")
        func aProbeFinishingAfterItsLeaseDoesNotCount() async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "late", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(10)),
                probeLease: .seconds(5), clock: clock)
            await breaker.fail()
            clock.advance(by: .seconds(10))
            let halfOpen = breaker.snapshot()
            #expect(halfOpen.state == .halfOpen)

            // Succeeds 8 seconds in, 3 seconds after its lease ran out; nothing touched the breaker meanwhile.
            let late = Task { try await breaker.execute { try await clock.sleep(for: .seconds(8)) } }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(8))
            try await late.value
            let afterSuccess = breaker.snapshot()
            #expect(afterSuccess.state == .halfOpen, "a probe past its lease no longer counts")
            #expect(afterSuccess.generation == halfOpen.generation)
            #expect(afterSuccess.successfulProbes == 0)
            #expect(afterSuccess.probesInFlight == 0)

            // Nor does a late failure re-open it.
            let lateFailure = Task {
                try await breaker.execute {
                    try await clock.sleep(for: .seconds(6))
                    throw ServiceFailure()
                }
            }
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(6))
            await #expect(throws: ServiceFailure.self) { try await lateFailure.value }
            #expect(breaker.snapshot().generation == halfOpen.generation)
            #expect(try await breaker.execute { "on time" } == "on time")
            #expect(breaker.state == .closed)
        }

        @Test("A clock that never moves keeps the breaker open with the same hint for every caller")
        func aFrozenClockKeepsTheBreakerOpenWithTheSameHint() async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "frozen", tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)), clock: clock)
            await breaker.fail()
            let opened = breaker.snapshot()
            for _ in 0..<1_000 {
                let rejection = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
                #expect(rejection?.retryAfter == .seconds(30))
            }
            let later = breaker.snapshot()
            #expect(later.state == .open)
            #expect(later.generation == opened.generation)
            #expect(later.remainingOpenTime == .seconds(30))
            #expect(later.takenAt == .zero)
        }

        @Test("A clock that never moves counts every call in one bucket and never calls one slow")
        func aFrozenClockCountsEveryCallInOneBucket() async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "frozen",
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 100, window: .time(.seconds(10), buckets: 10)),
                slowCallRule: .slowerThan(.nanoseconds(1)), openDuration: .fixed(.seconds(30)),
                probeLease: .nanoseconds(1), clock: clock)
            for index in 0..<60 { _ = try await breaker.execute { index } }
            for _ in 0..<40 { await breaker.fail() }
            let snapshot = breaker.snapshot()
            #expect(snapshot.recentCalls == 100)
            #expect(snapshot.recentFailures == 40, "a call taking no time is never slow")
            #expect(breaker.state == .closed)
            for _ in 0..<20 { await breaker.fail() }
            #expect(breaker.state == .open, "60 of 120 calls failed")
            #expect(breaker.snapshot().remainingOpenTime == .seconds(30))
        }

        @Test("A clock that goes back counts as no time elapsed: the open time is not lengthened, nothing traps")
        func aClockGoingBackCountsAsNoTimeElapsed() async throws {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "back",
                tripRule: .failureRate(threshold: 0.5, minimumCalls: 4, window: .time(.seconds(10), buckets: 10)),
                openDuration: .fixed(.seconds(30)), clock: clock)
            clock.advance(by: .seconds(100))
            _ = try await breaker.execute { 1 }
            clock.rewind(by: .seconds(3_600))
            _ = try await breaker.execute { 2 }
            await breaker.fail()
            #expect(breaker.snapshot().recentCalls == 3)
            #expect(breaker.snapshot().takenAt == .seconds(100), "the breaker's time never goes back")
            await breaker.fail()
            #expect(breaker.state == .open)
            clock.rewind(by: Self.year * 1_000)
            #expect(breaker.snapshot().remainingOpenTime == .seconds(30))
            let rejection = await #expect(throws: CircuitBreakerOpenError.self) { try await breaker.execute { 1 } }
            #expect(rejection?.retryAfter == .seconds(30))
            // The jump counted as no time elapsed: the open time runs on from the clock's new
            // readings, rather than waiting for the clock to catch up with the latest it saw.
            clock.advance(by: .seconds(29))
            #expect(breaker.state == .open)
            #expect(breaker.snapshot().remainingOpenTime == .seconds(1))
            clock.advance(by: .seconds(1))
            #expect(breaker.state == .halfOpen)
        }
    }
}
