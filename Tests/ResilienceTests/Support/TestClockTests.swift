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
}
