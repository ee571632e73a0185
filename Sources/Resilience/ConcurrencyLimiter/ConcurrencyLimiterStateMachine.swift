/// The pure state of a ``ConcurrencyLimiter``'s FIFO queue of waiting callers, and its decisions.
///
/// No locks, no awaits, no atomics: each method returns what the caller must do
/// after unlocking. The slots in use are counted outside it, in the storage's
/// atomic word, so that a call that finds a free slot while no one waits takes it
/// without the lock; the machine is asked only when a caller found no free slot,
/// or a slot is given back while callers wait.
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
    /// Tickets in arrival order; entries before `head`, and entries no longer in `waiting`, are gone.
    /// Never more than twice the live tickets plus a constant (see ``compactIfNeeded()``).
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

    /// Whether no caller waits.
    var isQueueEmpty: Bool { self.waiting.isEmpty }

    /// Whether a caller may take a slot now, with `inFlight` slots in use: only
    /// when one is free and no one waits before it.
    func mayAdmit(inFlight: Int) -> Bool {
        inFlight < self.limit && self.waiting.isEmpty
    }

    /// Takes a place in the queue for a caller that found no free slot, or refuses it.
    mutating func enqueue() -> Admission {
        guard self.waiting.count < self.queueLimit else { return .rejected(queued: self.waiting.count) }
        let ticket = self.nextTicket
        self.nextTicket += 1
        self.order.append(ticket)
        self.waiting.insert(ticket)
        return .queued(ticket: ticket)
    }

    /// A slot was given back: the ticket of the queued caller it passes to, or `nil` when none waits.
    mutating func dequeue() -> UInt64? {
        while self.head < self.order.count {
            let ticket = self.order[self.head]
            self.head += 1
            if self.waiting.remove(ticket) != nil {
                self.compactIfNeeded()
                return ticket
            }
        }
        self.compactIfNeeded()
        return nil
    }

    /// Takes a queued caller out of the queue (cancelled, timed out); `false` when it was no longer there.
    mutating func removeFromQueue(_ ticket: UInt64) -> Bool {
        let removed = self.waiting.remove(ticket) != nil
        self.compactIfNeeded()
        return removed
    }

    /// How many tickets ``order`` keeps, live or gone; for tests.
    var ticketsKept: Int { self.order.count }

    /// Drops the tickets that are gone once they outnumber the live ones by more than a few.
    ///
    /// A ticket whose caller left (cancelled, timed out) stays in ``order`` until the queue
    /// drains past it, which a slot held for long never lets happen: without this, a queue
    /// with one caller waiting behind a hung dependency would keep a ticket for every caller
    /// that timed out meanwhile. Compacting once ``order`` holds more than twice the live
    /// tickets plus a constant costs, amortized, O(1) per ticket that left: the entries it
    /// walks are at most twice those gone since the last compaction. The live tickets keep
    /// their order.
    private mutating func compactIfNeeded() {
        if self.waiting.isEmpty {
            self.order.removeAll(keepingCapacity: true)
            self.head = 0
        } else if self.order.count > 2 * self.waiting.count + 32 {
            var kept = 0
            for index in self.head..<self.order.count where self.waiting.contains(self.order[index]) {
                self.order[kept] = self.order[index]
                kept += 1
            }
            self.order.removeLast(self.order.count - kept)
            self.head = 0
        }
    }
}
