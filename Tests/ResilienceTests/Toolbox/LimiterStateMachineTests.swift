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
        let loan = bucket.lendTokens()
        #expect(loan?.tokens == 3)
        #expect(loan?.periodStart == .seconds(10))
        #expect(loan?.refillDue == .seconds(11))
        #expect(bucket.acquire(at: .seconds(10)) != .granted)  // every token is out on loan
        bucket.returnTokens(2)
        #expect(bucket.acquire(at: .seconds(10)) == .granted)
        #expect(bucket.available(at: .seconds(10)) == 1)
        var window = RateLimiterStateMachine(try! .slidingWindow(limit: 1, window: .seconds(1)), at: .zero)
        let windowLends = window.lendTokens() != nil
        #expect(!windowLends)
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
}
