import Resilience
import ResilienceTesting
import Testing

@Suite("TestClock")
struct TestClockTests {
    @Test func sleeperWakesOnlyWhenTimeReachesItsDeadline() async throws {
        let clock = TestClock()
        let woke = Counter()
        let sleeper = Task {
            try await clock.sleep(for: .seconds(5))
            woke.increment()
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        #expect(woke.value == 0)
        clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(woke.value == 1)
        #expect(clock.sleepRequests == [.seconds(5)])
    }

    @Test func cancellingASleeperThrowsCancellationAtOnce() async throws {
        let clock = TestClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(count: 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func sleepingUntilThePastReturnsImmediately() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(10))
        try await clock.sleep(until: clock.now.advanced(by: .seconds(-1)))
        #expect(clock.sleeperCount == 0)
    }

    @Test func seededGeneratorRepeatsItsSequence() {
        var first = SeededRandomNumberGenerator(seed: 7)
        var second = SeededRandomNumberGenerator(seed: 7)
        var other = SeededRandomNumberGenerator(seed: 8)
        let a = (0..<8).map { _ in first.next() }
        let b = (0..<8).map { _ in second.next() }
        let c = (0..<8).map { _ in other.next() }
        #expect(a == b)
        #expect(a != c)
    }
}

@Suite struct TestClockCancellationTests {
    @Test func waitingForSleepersEndsWhenTheWaiterIsCancelled() async {
        let clock = TestClock()
        let waiter = Task { await clock.waitForSleepers(count: 1) }
        waiter.cancel()
        await waiter.value
        #expect(clock.sleeperCount == 0, "it returned although nothing ever slept")
    }

    @Test func waitingForSleepRequestsEndsWhenTheWaiterIsCancelled() async {
        let clock = TestClock()
        let waiter = Task { await clock.waitForSleepRequests(count: 3) }
        waiter.cancel()
        await waiter.value
        #expect(clock.sleepRequests.isEmpty)
    }

    @Test func aNegativeAdvanceIsRefused() async {
        await #expect(processExitsWith: .failure) {
            TestClock().advance(by: .seconds(-1))
        }
    }

    @Test func rewindingMovesTimeBackAndWakesNoOne() async throws {
        let clock = TestClock()
        clock.advance(by: .seconds(10))
        let sleeper = Task { try await clock.sleep(until: .init(offset: .seconds(12))) }
        await clock.waitForSleepers()
        clock.rewind(by: .seconds(5))
        #expect(clock.now == .init(offset: .seconds(5)))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(7))
        try await sleeper.value
        #expect(clock.sleeperCount == 0)
    }

    @Test func advancingToTheNextDeadlineMovesOnlyToWaitsWithinTheHorizon() async throws {
        let clock = TestClock()
        let limit = Task { try await clock.sleep(until: .init(offset: .seconds(1_000))) }
        let short = Task { try await clock.sleep(until: .init(offset: .seconds(3))) }
        let later = Task { try await clock.sleep(until: .init(offset: .seconds(5))) }
        await clock.waitForSleepers(count: 3)
        #expect(await clock.advanceToNextDeadline(within: .seconds(10)) == .init(offset: .seconds(3)))
        try await short.value
        #expect(clock.sleeperCount == 2)
        #expect(await clock.advanceToNextDeadline(within: .seconds(10)) == .init(offset: .seconds(5)))
        try await later.value
        // Only the 1,000-second sleeper is left, beyond the horizon: the driver waits and is cancelled.
        let driver = Task { await clock.advanceToNextDeadline(within: .seconds(10)) }
        driver.cancel()
        #expect(await driver.value == nil)
        #expect(clock.now == .init(offset: .seconds(5)))
        #expect(clock.sleeperCount == 1)
        limit.cancel()
        _ = await limit.result
    }

    @Test func advancingToTheNextDeadlineWaitsForASleeperDueSoonEnough() async throws {
        let clock = TestClock()
        let driver = Task { await clock.advanceToNextDeadline(within: .seconds(10)) }
        let limit = Task { try await clock.sleep(until: .init(offset: .seconds(1_000))) }
        await clock.waitForSleepers(count: 1)
        let backoff = Task { try await clock.sleep(for: .seconds(2)) }
        #expect(await driver.value == .init(offset: .seconds(2)))
        try await backoff.value
        // Moving time brings a sleeper within the horizon: a waiting driver goes on.
        let next = Task { await clock.advanceToNextDeadline(within: .seconds(10)) }
        let afterwards = Task { try await clock.sleep(until: .init(offset: .seconds(20))) }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(9))
        #expect(await next.value == .init(offset: .seconds(20)))
        try await afterwards.value
        #expect(clock.sleeperCount == 1)
        limit.cancel()
        _ = await limit.result
    }
}

/// The order and the moves of time when sleepers are many, or tasks move the clock at once.
///
/// Sleepers here run on a ``HeldTaskExecutor``: a sleeper woken is held until the test runs it,
/// so the order in which the clock resumed the sleepers is the order they run in, and record.
@Suite(.timeLimit(.minutes(5)))
struct TestClockOrderTests {
    /// Sleepers parked one after the other on `clock`, each recording its index into `woken`
    /// when it wakes; each parks before the next starts, so the index is the parking order.
    final class Sleepers: Sendable {
        let clock: TestClock
        let executor = HeldTaskExecutor()
        let woken = Recorder<Int>()
        let ended = Counter()
        private let tasks = Lock<[Task<Void, any Error>]>([])

        init(on clock: TestClock) {
            self.clock = clock
        }

        /// Parks a sleeper until `deadline`; returns once it sleeps.
        func park(until deadline: TestClock.Instant) async {
            let index = self.tasks.withLock { $0.count }
            let parkedBefore = self.clock.sleeperCount
            let task = Task(executorPreference: self.executor) { [clock, woken, ended] in
                defer { ended.increment() }
                try await clock.sleep(until: deadline)
                woken.record(index)
            }
            self.tasks.withLock { $0.append(task) }
            await self.executor.run { self.clock.sleeperCount == parkedBefore + 1 }
        }

        /// The task of sleeper `index`.
        func task(_ index: Int) -> Task<Void, any Error> { self.tasks.withLock { $0[index] } }

        /// Runs the woken sleepers, in the order the clock resumed them, until `count` have recorded.
        func runWoken(until count: Int) async {
            await self.executor.run { self.woken.values.count >= count }
        }

        /// Cancels the sleepers still asleep and runs every sleeper to its end.
        func finish() async {
            let tasks = self.tasks.withLock { $0 }
            for task in tasks { task.cancel() }
            await self.executor.run { self.ended.value == tasks.count }
        }
    }

    @Test func sleepersWithEqualDeadlinesWakeInTheOrderTheyParked() async {
        let clock = TestClock()
        let sleepers = Sleepers(on: clock)
        // Interleaved: three at 2 s, two at 1 s, parked in this order.
        let deadlines: [Int64] = [2, 1, 2, 2, 1]
        for seconds in deadlines { await sleepers.park(until: .init(offset: .seconds(seconds))) }
        clock.advance(by: .seconds(2))
        await sleepers.runWoken(until: deadlines.count)
        #expect(sleepers.woken.values == [1, 4, 0, 2, 3])
        await sleepers.finish()
    }

    @Test func aSleeperCancelledInTheMiddleOfTheHeapLeavesTheOthersInOrder() async throws {
        let clock = TestClock()
        let sleepers = Sleepers(on: clock)
        // Parked out of deadline order, so that the heap is rearranged around the cancelled one.
        let deadlines: [Int64] = [9, 4, 12, 1, 7, 15, 3, 10, 6, 13, 2, 8, 14, 5, 11]
        for seconds in deadlines { await sleepers.park(until: .init(offset: .seconds(seconds))) }
        let cancelled = try #require(deadlines.firstIndex(of: 8))
        sleepers.task(cancelled).cancel()
        await sleepers.executor.run { sleepers.ended.value == 1 }
        await #expect(throws: CancellationError.self) { try await sleepers.task(cancelled).value }
        #expect(clock.sleeperCount == deadlines.count - 1)
        // One second at a time: each step wakes the one sleeper due then, and at 8 s no one.
        var expected: [Int] = []
        for second in Int64(1)...15 {
            clock.advance(to: .init(offset: .seconds(second)))
            if second != 8, let index = deadlines.firstIndex(of: second) { expected.append(index) }
            await sleepers.runWoken(until: expected.count)
            #expect(sleepers.woken.values == expected, "after \(second) s")
            #expect(clock.sleeperCount == deadlines.count - 1 - expected.count, "after \(second) s")
        }
        await sleepers.finish()
    }

    @Test func anAdvanceAmongTenThousandSleepersWakesOnlyTheDueOnes() async throws {
        let clock = TestClock()
        let seed: UInt64 = 10_000
        var random = SeededRandomNumberGenerator(seed: seed)
        let deadlines = Array(Int64(1)...10_000).shuffled(using: &random)
        let woken = Recorder<Int64>()
        let tasks = deadlines.map { seconds in
            Task {
                try await clock.sleep(until: .init(offset: .seconds(seconds)))
                woken.record(seconds)
            }
        }
        await clock.waitForSleepers(count: deadlines.count)
        clock.advance(to: .init(offset: .seconds(100)))
        // Taken out under the lock before the advance returns: exactly the hundred due.
        #expect(clock.sleeperCount == 9_900, "seed \(seed)")
        try await yieldUntil("the hundred due sleepers recorded") { woken.values.count == 100 }
        #expect(Set(woken.values) == Set(1...100), "seed \(seed)")
        clock.advance(by: .seconds(1))
        #expect(clock.sleeperCount == 9_899, "seed \(seed)")
        for task in tasks { task.cancel() }
        for task in tasks { _ = await task.result }
        #expect(woken.values.count == 101, "seed \(seed)")
    }

    /// Two advancers interleaved at the worst moment, many rounds over: inside each advance of
    /// the one, after it was asked for and before it has moved time, the other makes its next
    /// advance (``TestClock/probeAdvances(with:)``). Time never goes back, ends each round of
    /// moves at the latest instant asked for (a move that read the time and then moved it in a
    /// second step added the other's move to its own), and sleepers with seeded, often equal,
    /// deadlines wake in deadline order, and only those due.
    @Test func anAdvanceMadeWhileAnotherIsUnderWayNeitherOvershootsNorWakesOutOfOrder() async {
        let seed: UInt64 = 5
        var random = SeededRandomNumberGenerator(seed: seed)
        let rounds = 200
        var problems: [String] = []
        for round in 0..<rounds {
            let clock = TestClock()
            let sleepers = Sleepers(on: clock)
            let deadlines = (0..<8).map { _ in Int64.random(in: 1...30, using: &random) }
            for seconds in deadlines { await sleepers.park(until: .init(offset: .seconds(seconds))) }
            let targets = (0..<2).map { _ in
                var offset: Int64 = 0
                return (0..<5).map { _ in
                    offset += Int64.random(in: 1...3, using: &random)
                    return TestClock.Instant(offset: .seconds(offset))
                }
            }
            // The second advancer's moves, each made inside one of the first's.
            let inner = Lock((next: 0, isInside: false))
            clock.probeAdvances {
                let target: TestClock.Instant? = inner.withLock { state in
                    guard !state.isInside, state.next < targets[1].count else { return nil }
                    state.isInside = true
                    defer { state.next += 1 }
                    return targets[1][state.next]
                }
                guard let target else { return }
                clock.advance(to: target)
                inner.withLock { $0.isInside = false }
            }
            var times: [Duration] = []
            for (step, target) in targets[0].enumerated() {
                clock.advance(to: target)
                let latest = max(target, targets[1][step])
                if clock.now != latest {
                    problems.append("round \(round), step \(step): time at \(clock.now.offset), not \(latest.offset)")
                }
                if let last = times.last, clock.now.offset < last {
                    problems.append("round \(round), step \(step): time went back to \(clock.now.offset)")
                }
                times.append(clock.now.offset)
            }
            clock.probeAdvances(with: nil)
            let end = clock.now.offset.components.seconds
            let expected = deadlines.indices.filter { deadlines[$0] <= end }
                .sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
            await sleepers.runWoken(until: expected.count)
            if sleepers.woken.values != expected || clock.sleeperCount != deadlines.count - expected.count {
                problems.append(
                    "round \(round): deadlines \(deadlines), time at \(end) s: woke \(sleepers.woken.values), "
                        + "expected \(expected)")
            }
            await sleepers.finish()
        }
        #expect(
            problems.isEmpty,
            "seed \(seed): \(problems.count) problems in \(rounds) rounds; first: \(problems.first ?? "")")
    }

    /// Two threads move one clock forward to instants drawn from a seeded generator, each its own
    /// rising sequence, while a third reads it: time never goes back, and it ends at the latest
    /// instant asked for, never past it (read and moved in two steps, two moves at once added up).
    @Test func twoThreadsAdvancingAtOnceNeverMoveTimePastTheLatestInstantNorBack() {
        let seed: UInt64 = 21
        var random = SeededRandomNumberGenerator(seed: seed)
        let rounds = 200
        var overshot = 0
        var firstOvershoot = ""
        var wentBack = 0
        for round in 0..<rounds {
            let clock = TestClock()
            let targets = (0..<2).map { _ in
                var offset: Int64 = 0
                return (0..<200).map { _ in
                    offset += Int64.random(in: 1...5, using: &random)
                    return TestClock.Instant(offset: .seconds(offset))
                }
            }
            let backwards = Lock(0)
            let done = Lock(0)
            onSeparateThreads(3) { thread in
                if thread < 2 {
                    for target in targets[thread] {
                        clock.advance(to: target)
                        if clock.now < target { backwards.withLock { $0 += 1 } }
                    }
                    done.withLock { $0 += 1 }
                } else {
                    var last = clock.now
                    while done.withLock({ $0 }) < 2 {
                        let now = clock.now
                        if now < last { backwards.withLock { $0 += 1 } }
                        last = now
                    }
                }
            }
            let latest = max(targets[0].last!, targets[1].last!)
            if clock.now != latest {
                if overshot == 0 {
                    firstOvershoot = "round \(round) ended at \(clock.now.offset), not \(latest.offset)"
                }
                overshot += 1
            }
            wentBack += backwards.withLock { $0 }
        }
        #expect(
            overshot == 0,
            "seed \(seed): \(overshot) of \(rounds) rounds moved time past the latest instant (first: \(firstOvershoot))"
        )
        #expect(wentBack == 0, "seed \(seed): time went back \(wentBack) times")
    }

    /// Two threads move one clock through rising instants drawn from a seeded generator while
    /// sleepers with random, often equal, deadlines sleep on it: the sleepers resume in the
    /// order of their deadlines (equal ones in the order they parked) across both threads'
    /// moves, every one due wakes, and time ends at the latest instant asked for.
    @Test func sleepersWakeInDeadlineOrderWhileTwoThreadsAdvance() async {
        let seed: UInt64 = 7
        var random = SeededRandomNumberGenerator(seed: seed)
        let rounds = 100
        var problems: [String] = []
        for round in 0..<rounds {
            let clock = TestClock()
            let sleepers = Sleepers(on: clock)
            let deadlines = (0..<12).map { _ in Int64.random(in: 1...20, using: &random) }
            for seconds in deadlines { await sleepers.park(until: .init(offset: .seconds(seconds))) }
            let targets = (0..<2).map { _ in
                var offset: Int64 = 0
                return (0..<6).map { _ in
                    offset += Int64.random(in: 1...4, using: &random)
                    return TestClock.Instant(offset: .seconds(offset))
                }
            }
            await onSeparateThreadsWithoutBlocking(2) { thread in
                for target in targets[thread] { clock.advance(to: target) }
            }
            let latest = max(targets[0].last!, targets[1].last!)
            let expected = deadlines.indices.filter { deadlines[$0] <= latest.offset.components.seconds }
                .sorted { (deadlines[$0], $0) < (deadlines[$1], $1) }
            await sleepers.runWoken(until: expected.count)
            let woken = sleepers.woken.values
            if woken != expected || clock.now != latest || clock.sleeperCount != deadlines.count - expected.count {
                problems.append(
                    "round \(round): deadlines \(deadlines), targets \(targets.map { $0.map(\.offset) }): "
                        + "woke \(woken), expected \(expected); time at \(clock.now.offset)")
            }
            await sleepers.finish()
        }
        #expect(
            problems.isEmpty,
            "seed \(seed): \(problems.count) of \(rounds) rounds wrong; first: \(problems.first ?? "")")
    }
}
