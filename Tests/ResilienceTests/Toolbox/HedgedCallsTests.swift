import Testing

@testable import Resilience

@Suite("Hedged calls table")
struct HedgedCallsTests {
    @Test func anAttemptThatEndsWhileTheCallWaitsIsHandedOverAndLeavesNothingPending() {
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        let waiter = RecordingWaiter()
        #expect(calls.next(of: id, parking: waiter) == nil)
        let handedTo = calls.end(0, of: id)
        #expect(handedTo is RecordingWaiter)
        // Nothing waits as `.finished`, so the call does not take the end twice.
        #expect(calls.next(of: id, parking: RecordingWaiter()) == nil)
    }

    @Test func anAttemptThatEndsWhileTheCallIsBusyWaitsAsFinished() {
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        #expect(calls.end(0, of: id) == nil)
        #expect(calls.next(of: id, parking: RecordingWaiter()) == .finished(0))
    }

    @Test func aHedgeDueBeforeTheEndWakesTheCallAndTheEndThenWaitsAsFinished() {
        // The timer wins the race: the call is woken with the hedge, and the attempt's
        // end, coming while the call handles it, is kept for the call's next look.
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        #expect(calls.next(of: id, parking: RecordingWaiter()) == nil)
        let wake = calls.post(.hedgeDue, to: id)
        #expect(wake?.1 == .hedgeDue)
        #expect(calls.end(0, of: id) == nil)
        #expect(calls.next(of: id, parking: RecordingWaiter()) == .finished(0))
    }

    @Test func anEndAfterTheCallClosedIsDropped() {
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        calls.close(id)
        #expect(calls.end(0, of: id) == nil)
        #expect(calls.count == 0)
    }

    @Test func theCallersCancellationWakesTheCallAndHandsOverTheRegisteredAttempts() {
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        let (hedge, replacement) = (TimeLimitSignal(), TimeLimitSignal())
        #expect(calls.register(hedge, of: id) == false)
        #expect(calls.register(replacement, of: id) == false)
        #expect(calls.next(of: id, parking: RecordingWaiter()) == nil)
        let (wake, attempts) = calls.cancelCaller(id)
        #expect(wake?.1 == .callerCancelled)
        #expect(attempts.map(ObjectIdentifier.init) == [ObjectIdentifier(hedge), ObjectIdentifier(replacement)])
    }

    @Test func anAttemptRegisteredAfterTheCallerCancelledIsToStartCancelled() {
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        _ = calls.cancelCaller(id)
        #expect(calls.register(TimeLimitSignal(), of: id) == true)
        // The cancellation is still posted once, for the call to take.
        #expect(calls.next(of: id, parking: RecordingWaiter()) == .callerCancelled)
        #expect(calls.next(of: id, parking: RecordingWaiter()) == nil)
    }

    @Test func closingACallForgetsItsRegisteredAttempts() {
        var calls = HedgedCalls()
        let id: UInt64 = 1
        calls.open(id)
        #expect(calls.register(TimeLimitSignal(), of: id) == false)
        calls.close(id)
        calls.open(id)
        #expect(calls.cancelCaller(id).attempts.isEmpty)
    }
}

/// A waiter that only says it was resumed.
private struct RecordingWaiter: HedgedCallWaiter {
    func resume(with event: HedgedCallEvent) {}
}
