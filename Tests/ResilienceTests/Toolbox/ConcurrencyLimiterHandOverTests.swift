import Testing

@testable import Resilience

@Suite("Concurrency limiter: slots handed over late")
struct ConcurrencyLimiterHandOverTests {
    /// A late hand-over, after the queue emptied and a newcomer took the free slot
    /// lock-free, must not hand the same slot to the next queued caller too.
    @Test func aLateHandOverNeverPutsMoreCallsInFlightThanTheLimit() throws {
        let storage = ConcurrencyLimiterStorage(limit: 2, queueLimit: 4)
        #expect(storage.tryAdmit())  // A
        #expect(storage.tryAdmit())  // B
        let waiter = QueuedCaller()
        guard case .queued = storage.admit(registering: waiter) else {  // W waits
            Issue.record("W should wait in the queue")
            return
        }
        // A and B give their slots back lock-free; neither has handed over yet.
        #expect(storage.giveBack())
        #expect(storage.giveBack())
        storage.handOver()  // A's hand-over: W runs, the queue is empty, the flag is lowered
        #expect(storage.counts == (inFlight: 1, queued: 0))
        #expect(storage.tryAdmit())  // C takes the free slot lock-free
        let late = QueuedCaller()
        guard case .queued = storage.admit(registering: late) else {  // D waits
            Issue.record("D should wait in the queue")
            return
        }
        storage.handOver()  // B's hand-over comes late: the slot it gave back is C's now
        #expect(storage.counts == (inFlight: 2, queued: 1))
        storage.release()  // W ends: D gets its slot
        #expect(storage.counts == (inFlight: 2, queued: 0))
    }
}
