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
