import Resilience
import ResilienceTesting
import Testing

/// The package's type-erased clock: the system clock's fast readings, and a test clock's exact ones.
@Suite struct ElapsedClockTests {
    @Test func theSystemClocksCheapBoundIsNeverEarlierThanAPreciseReadingBeforeIt() throws {
        let clock = ElapsedClock(ContinuousClock())
        for _ in 0..<10_000 {
            let precise = try #require(clock.nanoseconds())
            let bound = try #require(clock.upperBoundNanoseconds())
            #expect(bound >= precise)
        }
    }

    @Test func theSystemClocksReadingStaysWithinTheContinuousClocksElapsedTime() {
        let continuous = ContinuousClock()
        let start = continuous.now
        let clock = ElapsedClock(continuous)
        let elapsed = clock.now()
        let outer = start.duration(to: continuous.now)
        #expect(elapsed >= .zero)
        #expect(elapsed <= outer)
    }

    @Test func aTestClockIsReadExactlyAndAFractionOfANanosecondIsNotWhole() {
        let testClock = TestClock()
        let clock = ElapsedClock(testClock)
        testClock.advance(by: .nanoseconds(5))
        #expect(clock.now() == .nanoseconds(5))
        #expect(clock.nanoseconds() == 5)
        #expect(clock.upperBoundNanoseconds() == 5)
        testClock.advance(by: Duration(attoseconds: 1))
        #expect(clock.nanoseconds() == nil)
        #expect(clock.upperBoundNanoseconds() == nil)
    }

    /// Two wrappings of one clock say so, whatever their origins; two test clocks, or a test
    /// clock and the system's, do not.
    @Test func theIdentityNamesTheClockWrappedNotTheWrapping() {
        let testClock = TestClock()
        let first = ElapsedClock(testClock)
        testClock.advance(by: .seconds(3))
        #expect(ElapsedClock(testClock).identity == first.identity)
        #expect(ElapsedClock(TestClock()).identity != first.identity)
        #expect(ElapsedClock(ContinuousClock()).identity == ElapsedClock(ContinuousClock()).identity)
        #expect(ElapsedClock(ContinuousClock()).identity != first.identity)
        #expect(ElapsedClock(SuspendingClock()).identity != ElapsedClock(ContinuousClock()).identity)
    }

    @Test func aTestClocksBoundIsItsReadingSoEveryBoundHeld() {
        let clock = ElapsedClock(TestClock())
        #expect(clock.upperBoundMargin() == nil)
        #expect(clock.upperBoundsHeld(below: 0, sinceMargin: 0))
    }

    #if canImport(Glibc)
        // The cheap bounds and their margins exist for the system clock on Linux only.
        @Test func theSystemClocksBoundsHeldSinceItsMarginTokenUnlessTheMarginsWereMeasuredSince() throws {
            let clock = ElapsedClock(ContinuousClock())
            let margin = try #require(clock.upperBoundMargin())
            #expect(margin > 0)
            #expect(clock.upperBoundsHeld(below: .max, sinceMargin: 0))  // the precise clock is below: nothing to check
            #expect(clock.upperBoundsHeld(below: 0, sinceMargin: margin))  // no suspension during the test
            #expect(!clock.upperBoundsHeld(below: 0, sinceMargin: 0))  // no margins were in force at token 0
            #expect(try #require(clock.upperBoundMargin()) >= margin)  // tokens never go back
        }
    #endif
}
