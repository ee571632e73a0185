import ResilienceTesting
import Testing

@testable import Resilience

@Suite("Limiter state machines")
struct LimiterStateMachineTests {
    @Test func theQueueServesTicketsInArrivalOrderAndSkipsThoseThatLeft() throws {
        var machine = ConcurrencyLimiterStateMachine(limit: 1, queueLimit: 3)
        #expect(machine.mayAdmit(inFlight: 0))
        #expect(!machine.mayAdmit(inFlight: 1))
        var tickets: [UInt64] = []
        for _ in 0..<3 {
            guard case .queued(let ticket) = machine.enqueue() else {
                Issue.record("expected a place in the queue")
                return
            }
            tickets.append(ticket)
        }
        #expect(machine.enqueue() == .rejected(queued: 3))
        #expect(!machine.mayAdmit(inFlight: 0))  // a free slot, but someone waits: no overtaking
        let removed = machine.removeFromQueue(tickets[1])
        let removedAgain = machine.removeFromQueue(tickets[1])
        #expect(removed)
        #expect(!removedAgain)
        #expect(machine.dequeue() == tickets[0])
        #expect(machine.dequeue() == tickets[2])
        #expect(machine.dequeue() == nil)
        #expect(machine.isQueueEmpty)
        #expect(machine.mayAdmit(inFlight: 0))
    }

    /// Callers waiting behind a slot held for long while 10,000 others queue and leave
    /// (cancelled, timed out) between them: the tickets of those that left are dropped as
    /// they go, never all kept until the queue drains, and the waiters keep their order.
    @Test func theQueueForgetsTheTicketsOfCallersThatLeftWhileOthersStillWait() throws {
        var machine = ConcurrencyLimiterStateMachine(limit: 1, queueLimit: 5)
        var waiters: [UInt64] = []
        var mostKeptPastBound = 0
        for round in 0..<10_000 {
            guard case .queued(let ticket) = machine.enqueue() else {
                Issue.record("expected a place in the queue")
                return
            }
            if round % 3_000 == 0 {
                waiters.append(ticket)
            } else {
                let removed = machine.removeFromQueue(ticket)
                #expect(removed)
            }
            mostKeptPastBound = max(mostKeptPastBound, machine.ticketsKept - 2 * machine.queuedCount)
        }
        #expect(mostKeptPastBound <= 64, "kept up to \(mostKeptPastBound) tickets past twice those waiting")
        #expect(machine.queuedCount == waiters.count)
        #expect(machine.ticketsKept <= 64, "\(machine.ticketsKept) tickets kept for \(waiters.count) callers waiting")
        let served = (0..<waiters.count).compactMap { _ in machine.dequeue() }
        #expect(served == waiters)
        #expect(machine.dequeue() == nil)
        #expect(machine.ticketsKept == 0)
    }

    /// Random arrivals, departures and hand-overs, checked against a plain array of the
    /// callers waiting: however often the queue drops the tickets of those that left, it
    /// serves the rest first come first served and never refuses one it has room for.
    @Test func theQueueKeepsArrivalOrderAcrossEveryCompaction() {
        var generator = SeededRandomNumberGenerator(seed: 12)
        var machine = ConcurrencyLimiterStateMachine(limit: 1, queueLimit: 50)
        var model: [UInt64] = []
        for _ in 0..<50_000 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5:
                let admission = machine.enqueue()
                if model.count < 50, case .queued(let ticket) = admission {
                    model.append(ticket)
                } else {
                    #expect(model.count == 50 && admission == .rejected(queued: 50))
                }
            case 5..<9:
                guard !model.isEmpty else { continue }
                let index = Int.random(in: 0..<model.count, using: &generator)
                let removed = machine.removeFromQueue(model.remove(at: index))
                #expect(removed)
            default:
                #expect(machine.dequeue() == (model.isEmpty ? nil : model.removeFirst()))
            }
            #expect(machine.queuedCount == model.count)
        }
        while let ticket = machine.dequeue() { #expect(ticket == model.removeFirst()) }
        #expect(model.isEmpty)
    }

    @Test func aSlotGivenBackWhileSomeoneWaitsPassesToThemNotToANewcomer() async throws {
        let storage = ConcurrencyLimiterStorage(limit: 1, queueLimit: 1)
        #expect(storage.tryAdmit())
        #expect(!storage.tryAdmit())
        let waiter = QueuedCaller()
        guard case .queued = storage.admit(registering: waiter) else {
            Issue.record("expected a place in the queue")
            return
        }
        #expect(storage.counts.inFlight == 1 && storage.counts.queued == 1)
        storage.release()  // passes the slot on: the lock-free path must stay shut
        try await waiter.park()  // resolved already, so it returns at once
        #expect(storage.counts.inFlight == 1 && storage.counts.queued == 0)
        #expect(!storage.tryAdmit())
        storage.release()
        #expect(storage.counts.inFlight == 0 && storage.counts.queued == 0)
        #expect(storage.tryAdmit())
    }

    @Test func aTokenBucketLendsEveryTokenUntilItsNextRefillAndTakesBackWhatIsLeft() {
        var bucket = RateLimiterStateMachine(
            try! .tokenBucket(capacity: 3, tokensPerPeriod: 1, period: .seconds(1)), at: .seconds(10))
        let loan = bucket.lend()
        #expect(loan == .init(permits: 3, spanStart: .seconds(10), spanEnd: .seconds(11)))  // full: one period
        #expect(bucket.acquire(at: .seconds(10)) != .granted)  // every token is out on loan
        bucket.settle(loan, unused: 2, at: .seconds(10), takesMayBeLate: false)
        #expect(bucket.acquire(at: .seconds(10)) == .granted)
        #expect(bucket.available(at: .seconds(10)) == 1)
    }

    @Test func lateTakesCountNoEarlierThanAReadingTakenUnderTheLockAfterTheLoanWasEmptied() throws {
        let clocks = SimulatedSystemClocks()
        let clock = ElapsedClock(simulating: clocks.source())
        let storage = RateLimiterStorage(
            RateLimiterStateMachine(try .slidingWindow(limit: 2, window: .seconds(1), segments: 10), at: .zero),
            clock: clock)
        let stale = clock.now()  // a caller reads the clock, then waits for the lock
        // A suspension and a wall clock set back by as much: both cheap bounds now trail.
        clocks.suspend(for: .seconds(5))
        clocks.stepWallClock(by: .seconds(-5))
        clocks.advance(by: .milliseconds(50))
        #expect(storage.tryTakeLentPermit())  // the bound says 0.05 s, within the loan's first segment
        #expect(storage.tryTakeLentPermit())
        let now = clock.now()
        // The takes came at about 5.05 s: they hold the window until about 6.05 s.
        #expect(storage.step(at: stale) { $0.available(at: now) } == 0)
    }

    @Test func aDenialAfterTheClockWasSetBackCountsItsWaitFromTheCallersOwnReading() {
        var bucket = RateLimiterStateMachine(
            try! .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1)), at: .zero)
        #expect(bucket.acquire(at: .seconds(10)) == .granted)  // refilled at 10 s; the next token at 11 s
        #expect(bucket.acquire(at: .seconds(4)) == .denied(retryAfter: .seconds(7)))  // set back 6 s
        #expect(bucket.acquire(at: .milliseconds(10_500)) == .denied(retryAfter: .milliseconds(500)))
        var window = RateLimiterStateMachine(
            try! .slidingWindow(limit: 1, window: .seconds(1), segments: 10), at: .zero)
        #expect(window.acquire(at: .seconds(10)) == .granted)  // frees when its segment leaves, at 11 s
        #expect(window.acquire(at: .seconds(4)) == .denied(retryAfter: .seconds(7)))
    }

    @Test func aBucketBelowCapacityLendsUntilTheRefillThatWouldFillItPastCapacity() {
        var bucket = RateLimiterStateMachine(
            try! .tokenBucket(capacity: 10, tokensPerPeriod: 2, period: .seconds(1)), at: .zero)
        for _ in 0..<7 { #expect(bucket.acquire(at: .zero) == .granted) }
        // 3 tokens: refills at 1, 2 and 3 s bring 5, 7, 9; the one at 4 s would bring 11.
        let loan = bucket.lend()
        #expect(loan == .init(permits: 3, spanStart: .zero, spanEnd: .seconds(4)))
    }

    @Test func aSlidingWindowLendsItsRoomForTheCurrentSegment() {
        var window = RateLimiterStateMachine(
            try! .slidingWindow(limit: 3, window: .seconds(1), segments: 10), at: .zero)
        #expect(window.acquire(at: .milliseconds(250)) == .granted)  // segment 2
        let loan = window.lend()
        #expect(loan == .init(permits: 2, spanStart: .milliseconds(200), spanEnd: .milliseconds(300)))
        #expect(window.acquire(at: .milliseconds(250)) != .granted)  // the room is out on loan
        window.settle(loan, unused: 1, at: .milliseconds(290), takesMayBeLate: false)  // one taken in segment 2
        #expect(window.available(at: .milliseconds(290)) == 1)
        #expect(window.available(at: .milliseconds(1_199)) == 1)
        #expect(window.available(at: .milliseconds(1_200)) == 3)  // segment 2, with both, leaves the window
    }

    /// What the lock-free path does with a loan, replayed on one machine, against another
    /// machine asked at every call: the two must agree on every call, over seeded random
    /// settings and arrival times. A span one period (or segment) too long would let the
    /// loan grant a token the reference refuses, and this test would fail.
    @Test(arguments: [1, 2, 3, 4])
    func takingALentPermitWithinItsSpanIsExactlyWhatTheMachineWouldGrant(seed: UInt64) {
        var generator = SeededRandomNumberGenerator(seed: seed)
        for _ in 0..<40 {
            let algorithm: RateLimiterAlgorithm =
                Bool.random(using: &generator)
                ? try! .tokenBucket(
                    capacity: Int.random(in: 1...12, using: &generator),
                    tokensPerPeriod: Int.random(in: 1...5, using: &generator),
                    period: .milliseconds(Int.random(in: 1...200, using: &generator)))
                : try! .slidingWindow(
                    limit: Int.random(in: 1...12, using: &generator), window: .milliseconds(500),
                    segments: Int.random(in: 1...10, using: &generator))
            var reference = RateLimiterStateMachine(algorithm, at: .zero)
            var lending = RateLimiterStateMachine(algorithm, at: .zero)
            var loan = lending.lend()
            var unused = loan.permits
            var now = Duration.zero
            for _ in 0..<300 {
                now += .microseconds(Int.random(in: 0...60_000, using: &generator))
                let expected = reference.acquire(at: now) == .granted
                let granted: Bool
                if unused > 0, now >= loan.spanStart, now < loan.spanEnd {
                    unused -= 1  // the lock-free path
                    granted = true
                } else {
                    lending.settle(loan, unused: unused, at: now, takesMayBeLate: false)
                    granted = lending.acquire(at: now) == .granted
                    loan = lending.lend()
                    unused = loan.permits
                }
                #expect(granted == expected, "\(algorithm) at \(now)")
            }
        }
    }

    @Test func takesThatMayHaveComeAfterTheSpanAreCountedAsTakenWhenSettled() {
        let bucketAlgorithm = try! RateLimiterAlgorithm.tokenBucket(
            capacity: 2, tokensPerPeriod: 1, period: .seconds(1))
        var exact = RateLimiterStateMachine(bucketAlgorithm, at: .zero)
        var late = RateLimiterStateMachine(bucketAlgorithm, at: .zero)
        let bucketLoan = exact.lend()
        _ = late.lend()
        #expect(bucketLoan.spanEnd == .seconds(1))
        exact.settle(bucketLoan, unused: 0, at: .seconds(5), takesMayBeLate: false)
        late.settle(bucketLoan, unused: 0, at: .seconds(5), takesMayBeLate: true)
        #expect(exact.available(at: .seconds(5)) == 2)  // taken early: the refills since filled it again
        #expect(late.available(at: .seconds(5)) == 0)  // maybe taken just now: nothing left
        #expect(late.available(at: .seconds(6)) == 1)  // and the refills go on from the period's start
        var stillWithin = RateLimiterStateMachine(bucketAlgorithm, at: .zero)
        let early = stillWithin.lend()
        stillWithin.settle(early, unused: 1, at: .milliseconds(999), takesMayBeLate: true)
        #expect(stillWithin.available(at: .milliseconds(999)) == 1)

        let windowAlgorithm = try! RateLimiterAlgorithm.slidingWindow(limit: 2, window: .seconds(1), segments: 10)
        var exactWindow = RateLimiterStateMachine(windowAlgorithm, at: .zero)
        var lateWindow = RateLimiterStateMachine(windowAlgorithm, at: .zero)
        let windowLoan = exactWindow.lend()
        _ = lateWindow.lend()
        exactWindow.settle(windowLoan, unused: 0, at: .milliseconds(1_050), takesMayBeLate: false)
        lateWindow.settle(windowLoan, unused: 0, at: .milliseconds(1_050), takesMayBeLate: true)
        #expect(exactWindow.available(at: .milliseconds(1_050)) == 2)  // segment 0 has left the window
        #expect(lateWindow.available(at: .milliseconds(1_050)) == 0)  // counted in the segment of 1.05 s
        #expect(lateWindow.available(at: .milliseconds(2_000)) == 0)
        #expect(lateWindow.available(at: .milliseconds(2_050)) == 2)
    }

    @Test func aRefillAddsWholePeriodsOnlyAndKeepsThePeriodsPhase() {
        var bucket = RateLimiterStateMachine(
            try! .tokenBucket(capacity: 10, tokensPerPeriod: 3, period: .seconds(1)), at: .zero)
        for _ in 0..<10 { _ = bucket.acquire(at: .zero) }
        // 3.5 periods: three refills of 3, not 3.5 periods' worth; the next refill is due at 4 s.
        #expect(bucket.available(at: .milliseconds(3_500)) == 9)
        for _ in 0..<9 { _ = bucket.acquire(at: .milliseconds(3_500)) }
        #expect(bucket.acquire(at: .milliseconds(3_500)) == .denied(retryAfter: .milliseconds(500)))
        // An idle day fills it, and keeps the phase: the next refill is still on a whole second.
        #expect(bucket.available(at: .seconds(86_400) + .milliseconds(250)) == 10)
        for _ in 0..<10 { _ = bucket.acquire(at: .seconds(86_400) + .milliseconds(250)) }
        #expect(
            bucket.acquire(at: .seconds(86_400) + .milliseconds(250)) == .denied(retryAfter: .milliseconds(750)))
    }

    @Test func aLimiterTakesLentTokensWithinTheSpanAndRefillsThroughTheLockAfterIt() async throws {
        let clock = TestClock()
        let limiter = try RateLimiter(
            .tokenBucket(capacity: 2, tokensPerPeriod: 1, period: .seconds(1)), clock: clock)
        #expect(try await limiter.execute { 1 } == 1)
        #expect(limiter.availablePermits == 1)
        clock.advance(by: .seconds(1))  // the span ends: the next call refills under the lock
        #expect(try await limiter.execute { 2 } == 2)
        #expect(limiter.availablePermits == 1)
        #expect(try await limiter.execute { 3 } == 3)
        await #expect(throws: LimiterRejectionError.self) { try await limiter.execute { 4 } }
    }

    @Test func lateTakesSettledWithAReadingFromBeforeTheSpansEndCountAtTheSpansEnd() {
        // The settling time was read before the lock; the takes that may be late came at or after the span's end.
        let bucketAlgorithm = try! RateLimiterAlgorithm.tokenBucket(
            capacity: 2, tokensPerPeriod: 1, period: .seconds(1))
        var bucket = RateLimiterStateMachine(bucketAlgorithm, at: .zero)
        let bucketLoan = bucket.lend()
        #expect(bucketLoan.spanEnd == .seconds(1))
        bucket.settle(bucketLoan, unused: 1, at: .milliseconds(900), takesMayBeLate: true)
        // Taken at 1 s, when the full bucket had just lost a refill to its capacity: one left, not two.
        #expect(bucket.available(at: .seconds(1)) == 1)
        #expect(bucket.available(at: .seconds(2)) == 2)

        let windowAlgorithm = try! RateLimiterAlgorithm.slidingWindow(limit: 2, window: .seconds(1), segments: 10)
        var window = RateLimiterStateMachine(windowAlgorithm, at: .zero)
        let windowLoan = window.lend()
        #expect(windowLoan.spanEnd == .milliseconds(100))
        window.settle(windowLoan, unused: 0, at: .milliseconds(50), takesMayBeLate: true)
        #expect(window.available(at: .seconds(1)) == 0)  // counted in the segment from 0.1 s, not 0 s
        #expect(window.available(at: .milliseconds(1_100)) == 2)
    }

    /// Replays callers that queue on the limiter's lock at each moment a permit frees: one
    /// read the clock just before that moment, one just after, and the later reading takes
    /// the lock first. Returns the permits granted to readings up to `horizon`.
    private func grantsWhenAnEarlierReadingIsAppliedSecond(
        _ algorithm: RateLimiterAlgorithm, horizon: Duration, earlyBy: Duration
    ) -> Int {
        let storage = RateLimiterStorage(
            RateLimiterStateMachine(algorithm, at: .zero), clock: ElapsedClock(TestClock()))
        func acquire(at now: Duration) -> RateLimiterStateMachine.Decision {
            storage.step(at: now) { $0.acquire(at: now) }
        }
        var granted = 0
        var now = Duration.zero
        while acquire(at: now) == .granted { granted += 1 }
        while true {
            // A refused caller learns when the next permit frees; two more callers arrive about then.
            guard case .denied(let retryAfter) = acquire(at: now) else {
                Issue.record("a permit free right after the last refusal")
                return granted
            }
            let frees = now + retryAfter
            let before = frees - earlyBy
            let after = frees + .milliseconds(1)
            guard after <= horizon else { return granted }
            if acquire(at: after) == .granted { granted += 1 }
            if acquire(at: before) == .granted { granted += 1 }
            now = after
        }
    }

    @Test func aReadingOlderThanOneAlreadyAppliedNeverMovesATokenBucketsPeriodsEarlier() {
        let algorithm = try! RateLimiterAlgorithm.tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(1))
        let granted = grantsWhenAnEarlierReadingIsAppliedSecond(
            algorithm, horizon: .seconds(20), earlyBy: .milliseconds(250))
        // The capacity at the start, then one token per whole period.
        #expect(granted <= 1 + 20)
        #expect(granted >= 20)
    }

    @Test func aReadingOlderThanOneAlreadyAppliedNeverMovesASlidingWindowsSegmentsEarlier() {
        let algorithm = try! RateLimiterAlgorithm.slidingWindow(limit: 1, window: .seconds(1), segments: 4)
        let granted = grantsWhenAnEarlierReadingIsAppliedSecond(
            algorithm, horizon: .seconds(20), earlyBy: .milliseconds(200))
        // At most the limit in each of the 20 whole windows, and one more for a window straddling the last.
        #expect(granted <= 1 + 20)
        #expect(granted >= 15)
    }
}
