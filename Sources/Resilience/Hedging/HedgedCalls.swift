/// What a hedged call hears about while it waits.
@usableFromInline
enum HedgedCallEvent: Sendable, Equatable {
    /// The attempt with this index finished while the call was not waiting; its task holds the result.
    case finished(Int)
    /// The hedge delay passed.
    case hedgeDue
    /// The caller cancelled the call.
    case callerCancelled
}

/// The pure state of the hedged calls in flight on one ``Hedging``: for each, the
/// events not yet taken and the continuation it waits on, if it waits.
///
/// One table per strategy, under one lock, so that a call allocates no object of
/// its own for it. Events wait in flags, not in a queue: at most eleven attempts
/// finish per call, and the timer and the caller's cancellation each matter once.
/// A call whose first attempt ends before it first suspends never enters it.
struct HedgedCalls {
    private struct Call {
        /// One bit per attempt that finished and was not yet taken.
        var finished: UInt16 = 0
        var hedgeDue = false
        var callerCancelled = false
        /// Whether the caller cancelled the call; unlike ``callerCancelled``, never taken.
        var isCallerCancelled = false
        /// Whether ``HedgedCalls/attempts`` holds attempts of this call.
        var hasAttempts = false
        var parked: (any HedgedCallWaiter)?

        /// Takes the most urgent pending event: a finished attempt, the caller's cancellation, the hedge.
        mutating func take() -> HedgedCallEvent? {
            if self.finished != 0 {
                let index = self.finished.trailingZeroBitCount
                self.finished &= self.finished &- 1
                return .finished(index)
            }
            if self.callerCancelled {
                self.callerCancelled = false
                return .callerCancelled
            }
            if self.hedgeDue {
                self.hedgeDue = false
                return .hedgeDue
            }
            return nil
        }
    }

    private var calls: [UInt64: Call] = [:]
    /// The signals of the attempts each call started after its first, for the caller's
    /// cancellation handler; apart from ``calls``, so that a call that starts none pays nothing.
    private var attempts: [UInt64: [TimeLimitSignal]] = [:]

    /// The number of calls in flight.
    var count: Int { self.calls.count }

    /// Opens the call numbered `id`, a number no call in flight has.
    mutating func open(_ id: UInt64) {
        self.calls[id] = Call()
    }

    /// Forgets the call `id`.
    mutating func close(_ id: UInt64) {
        if self.calls.removeValue(forKey: id)?.hasAttempts == true { self.attempts[id] = nil }
    }

    /// Registers `signal`, the signal of an attempt of the call `id` about to start after the
    /// first; returns `true`, registering nothing, when the caller already cancelled the call.
    mutating func register(_ signal: TimeLimitSignal, of id: UInt64) -> Bool {
        guard var call = self.calls[id] else { return false }
        if call.isCallerCancelled { return true }
        if !call.hasAttempts {
            call.hasAttempts = true
            self.calls[id] = call
        }
        self.attempts[id, default: []].append(signal)
        return false
    }

    /// Records that the caller cancelled the call `id`, and posts it as
    /// ``HedgedCallEvent/callerCancelled``; returns the waiter to resume, as ``post(_:to:)``
    /// does, and the signals of the attempts registered, to cancel.
    mutating func cancelCaller(
        _ id: UInt64
    ) -> (wake: (any HedgedCallWaiter, HedgedCallEvent)?, attempts: [TimeLimitSignal]) {
        guard var call = self.calls[id] else { return (nil, []) }
        call.isCallerCancelled = true
        self.calls[id] = call
        let wake = self.post(.callerCancelled, to: id)
        return (wake, call.hasAttempts ? self.attempts[id] ?? [] : [])
    }

    /// Records `event` for the call `id`; returns the waiter to resume, with the event, when it waits.
    mutating func post(
        _ event: HedgedCallEvent, to id: UInt64
    ) -> (any HedgedCallWaiter, HedgedCallEvent)? {
        guard var call = self.calls[id] else { return nil }
        switch event {
        case .finished(let index): call.finished |= 1 << UInt16(index)
        case .hedgeDue: call.hedgeDue = true
        case .callerCancelled: call.callerCancelled = true
        }
        var wake: (any HedgedCallWaiter, HedgedCallEvent)?
        if let parked = call.parked, let next = call.take() {
            call.parked = nil
            wake = (parked, next)
        }
        self.calls[id] = call
        return wake
    }

    /// Records that attempt `index` of the call `id` ended; returns the waiter to hand the
    /// outcome to, when the call waits with nothing else pending.
    ///
    /// A call that waits has nothing pending (it parks only when nothing is), so the end
    /// handed over directly comes in the order the events happened. A call that does not
    /// wait takes the end later as ``HedgedCallEvent/finished(_:)``, after any event posted before it.
    mutating func end(_ index: Int, of id: UInt64) -> (any HedgedCallWaiter)? {
        guard var call = self.calls[id] else { return nil }
        guard let parked = call.parked else {
            call.finished |= 1 << UInt16(index)
            self.calls[id] = call
            return nil
        }
        call.parked = nil
        self.calls[id] = call
        return parked
    }

    /// The next pending event of the call `id`, or `nil` after parking `parked` to wait for one.
    mutating func next(
        of id: UInt64, parking parked: any HedgedCallWaiter
    ) -> HedgedCallEvent? {
        guard var call = self.calls[id] else { return .callerCancelled }
        if let event = call.take() {
            self.calls[id] = call
            return event
        }
        call.parked = parked
        self.calls[id] = call
        return nil
    }
}

/// A hedged call waiting for its next event: what a strategy's table keeps, without knowing
/// the call's value type.
@usableFromInline
protocol HedgedCallWaiter: Sendable {
    /// Wakes the call with `event`.
    func resume(with event: HedgedCallEvent)
}
