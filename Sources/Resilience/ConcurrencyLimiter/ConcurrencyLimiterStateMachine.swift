/// The pure state of a ``ConcurrencyLimiter``: slots in use and the FIFO queue of waiting callers.
///
/// No locks, no awaits: each method returns what the caller must do after unlocking.
struct ConcurrencyLimiterStateMachine: Sendable {
    /// What an admission request ended in.
    enum Admission: Equatable {
        /// A slot was free: run now.
        case admitted
        /// Every slot is taken: wait in the queue under this ticket.
        case queued(ticket: UInt64)
        /// Every slot is taken and the queue is full.
        case rejected(queued: Int)
    }

    let limit: Int
    let queueLimit: Int
    private(set) var inFlight = 0
    /// Tickets in arrival order; entries before `head`, and entries no longer in `waiting`, are gone.
    private var order: [UInt64] = []
    private var head = 0
    private var waiting: Set<UInt64> = []
    private var nextTicket: UInt64 = 0

    init(limit: Int, queueLimit: Int) {
        self.limit = limit
        self.queueLimit = queueLimit
    }

    /// How many callers wait in the queue.
    var queuedCount: Int { self.waiting.count }

    /// Takes a slot if one is free and no one waits before the caller.
    mutating func tryAdmit() -> Bool {
        guard self.inFlight < self.limit, self.waiting.isEmpty else { return false }
        self.inFlight += 1
        return true
    }

    /// Takes a slot, or a place in the queue, or refuses.
    mutating func admit() -> Admission {
        if self.tryAdmit() { return .admitted }
        guard self.waiting.count < self.queueLimit else { return .rejected(queued: self.waiting.count) }
        let ticket = self.nextTicket
        self.nextTicket += 1
        self.order.append(ticket)
        self.waiting.insert(ticket)
        return .queued(ticket: ticket)
    }

    /// Gives a slot back; returns the ticket of the queued caller it passes to, if any.
    mutating func release() -> UInt64? {
        while self.head < self.order.count {
            let ticket = self.order[self.head]
            self.head += 1
            if self.waiting.remove(ticket) != nil {
                self.compactIfNeeded()
                return ticket  // the slot passes on: `inFlight` is unchanged
            }
        }
        self.compactIfNeeded()
        self.inFlight -= 1
        return nil
    }

    /// Takes a queued caller out of the queue (cancelled, timed out); `false` when it was no longer there.
    mutating func removeFromQueue(_ ticket: UInt64) -> Bool {
        let removed = self.waiting.remove(ticket) != nil
        if self.waiting.isEmpty {
            self.order.removeAll(keepingCapacity: true)
            self.head = 0
        }
        return removed
    }

    private mutating func compactIfNeeded() {
        if self.head == self.order.count {
            self.order.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.head > 1_024, self.head * 2 > self.order.count {
            self.order.removeFirst(self.head)
            self.head = 0
        }
    }
}
