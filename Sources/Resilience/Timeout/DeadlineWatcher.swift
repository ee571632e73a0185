/// What a ``DeadlineWatcher`` does for a registration whose deadline has passed.
///
/// It runs on the watcher's task, outside every lock. A conformance that holds
/// one or two references (a signal and a task handle, say) fits in the
/// existential's inline buffer, so registering it allocates nothing.
protocol DeadlineExpiry: Sendable {
    /// The deadline passed before the registration was withdrawn.
    func deadlineReached()
}

/// One task that watches the deadlines of many calls on one clock.
///
/// A call that limits its own duration registers its deadline here instead of
/// starting a timer task of its own: registering is a lock and an insertion into
/// a small heap, and a call that finishes first withdraws its registration the
/// same way. The watcher task sleeps on the injected clock until the earliest
/// deadline and then runs the expiry of every registration that is due.
///
/// The watcher never leaves a sleep behind: when the last registration is
/// withdrawn while it sleeps, the sleep is cancelled (so a test clock shows no
/// sleeper once no call is in flight), and the next registration starts a new
/// watcher task. A watcher with nothing to watch parks on a continuation, not on
/// the clock, and the next registration wakes it; a woken watcher yields a few
/// times before it sleeps, so a call that finishes within those few scheduling
/// rounds costs no sleep at all. A watcher whose owner is gone ends.
///
/// Never calls user code or awaits under its lock: the state machine returns
/// what to do, and the caller does it after unlocking.
final class DeadlineWatcher: Sendable {
    private let clock: ElapsedClock
    private let state = Lock(DeadlineWatcherState())

    /// A watcher of deadlines measured on `clock`.
    init(clock: ElapsedClock) {
        self.clock = clock
    }

    deinit {
        // A parked watcher task holds no reference to the watcher; wake it so that it ends.
        let parked = self.state.withLock { $0.abandon() }
        parked?.resume()
    }

    /// The time now on the watcher's clock.
    func now() -> Duration {
        self.clock.now()
    }

    /// The number of registrations neither withdrawn nor due.
    var registrations: Int {
        self.state.withLock { $0.count }
    }

    /// Registers `expiry` to run once `deadline` (elapsed time on the clock) has passed.
    ///
    /// - Returns: The registration, to withdraw with ``withdraw(_:)`` when the call finishes first.
    func register(_ deadline: Duration, _ expiry: some DeadlineExpiry) -> UInt64 {
        let (id, action) = self.state.withLock { $0.register(deadline, expiry) }
        switch action {
        case .none:
            break
        case .resume(let parked):
            parked.resume()
        case .start(let generation, let superseded):
            superseded?.cancel()
            self.start(generation)
        }
        return id
    }

    /// Withdraws a registration; nothing happens if its deadline already passed.
    func withdraw(_ id: UInt64) {
        let sleeping = self.state.withLock { $0.withdraw(id) }
        sleeping?.cancel()
    }

    /// How often a woken watcher yields and looks again before it sleeps on the clock.
    ///
    /// Sleeping on the clock and then being cancelled because the calls finished costs
    /// a task and a sleep (about as much as the timer task this watcher replaces);
    /// yielding costs neither. A few looks let the calls that finish within a few
    /// scheduling rounds go without any sleep; a longer call waits these few rounds
    /// more before its deadline is watched, which changes nothing, since the watcher
    /// sleeps until the deadline itself, not for a duration. Eight was measured with
    /// the benchmark's `timeout.success` row.
    static let looksBeforeSleeping = 8

    /// Starts the watcher task of `generation`.
    private func start(_ generation: UInt64) {
        // Detached: the watcher outlives the call that started it, so it takes none
        // of that call's task-local values or priority.
        let task = Task.detached { [weak self, clock] in
            var looks = 0
            while true {
                let now = clock.now()
                guard
                    let step = self?.state.withLock({
                        $0.step(generation, now: now, settled: looks >= Self.looksBeforeSleeping)
                    })
                else {
                    return
                }
                switch step {
                case .end:
                    return
                case .fire(let expiries):
                    for expiry in expiries { expiry.deadlineReached() }
                case .settle:
                    // Let the calls that woke it run first: a call that finishes before
                    // the watcher looks again costs no sleep (and no cancelled sleep).
                    looks += 1
                    await Task.yield()
                case .sleep(let deadline):
                    guard !Task.isCancelled else { return }
                    do {
                        try await clock.sleepUntil(deadline)
                    } catch {
                        return  // withdrawn or superseded: a later generation takes over
                    }
                case .park:
                    looks = 0
                    await withUnsafeContinuation { (parked: UnsafeContinuation<Void, Never>) in
                        let resumeNow = self?.state.withLock { $0.park(parked, generation) } ?? true
                        if resumeNow { parked.resume() }
                    }
                }
            }
        }
        let cancelNow = self.state.withLock { $0.keep(task, generation) }
        if cancelNow { task.cancel() }
    }
}

/// The pure state of a ``DeadlineWatcher``: the registrations, a heap of their
/// deadlines, and what the watcher task is doing.
struct DeadlineWatcherState {
    /// What the watcher task is doing.
    enum Watcher {
        /// No watcher task runs.
        case none
        /// The watcher task runs and will look at the registrations before it waits.
        case running
        /// The watcher task waits for a registration, off the clock.
        case parked(UnsafeContinuation<Void, Never>)
        /// The watcher task sleeps on the clock until the deadline.
        case sleeping(until: Duration)
    }

    /// What a registration asks of the caller once the lock is released.
    enum RegisterAction {
        case none
        /// Wake the parked watcher task.
        case resume(UnsafeContinuation<Void, Never>)
        /// Start a watcher task of this generation, after cancelling the one it supersedes.
        case start(UInt64, superseding: Task<Void, Never>?)
    }

    /// What the watcher task does next.
    enum Step {
        case end
        case fire([any DeadlineExpiry])
        case sleep(until: Duration)
        /// Look again once before sleeping: the calls that woke the watcher may finish at once.
        case settle
        case park
    }

    private struct Registration {
        var deadline: Duration
        var expiry: any DeadlineExpiry
    }

    private struct Due {
        var deadline: Duration
        var id: UInt64
    }

    private var registrations: [UInt64: Registration] = [:]
    /// A binary min-heap of deadlines; an entry whose registration was withdrawn stays until it reaches the top.
    private var heap: [Due] = []
    private var nextID: UInt64 = 0
    private(set) var watcher = Watcher.none
    /// The generation of the live watcher task; an older task that sees a newer generation ends.
    private var generation: UInt64 = 0
    /// The live watcher task, once its starter has kept it.
    private var task: Task<Void, Never>?

    /// The number of registrations not yet withdrawn nor due.
    var count: Int { self.registrations.count }

    mutating func register(_ deadline: Duration, _ expiry: some DeadlineExpiry) -> (UInt64, RegisterAction) {
        self.nextID &+= 1
        let id = self.nextID
        self.registrations[id] = Registration(deadline: deadline, expiry: expiry)
        self.push(Due(deadline: deadline, id: id))
        switch self.watcher {
        case .none:
            return (id, self.replaceWatcher())
        case .parked(let parked):
            self.watcher = .running
            return (id, .resume(parked))
        case .running:
            return (id, .none)
        case .sleeping(let until):
            // Equal durations register in deadline order, so this is rare.
            guard deadline < until else { return (id, .none) }
            return (id, self.replaceWatcher())
        }
    }

    /// Withdraws `id`; returns the watcher task to cancel when it sleeps for nothing.
    mutating func withdraw(_ id: UInt64) -> Task<Void, Never>? {
        guard self.registrations.removeValue(forKey: id) != nil else { return nil }
        if self.registrations.isEmpty {
            self.heap.removeAll(keepingCapacity: true)
            guard case .sleeping = self.watcher else { return nil }
            // Leave no sleep behind: a test clock must show no sleeper once no call is in flight.
            self.generation &+= 1
            self.watcher = .none
            defer { self.task = nil }
            return self.task
        }
        if self.heap.count > 2 * self.registrations.count + 64 { self.rebuildHeap() }
        return nil
    }

    /// The next step of the watcher task of `generation`, at `now`; `settled` once it
    /// looked twice since it was started or woken.
    mutating func step(_ generation: UInt64, now: Duration, settled: Bool) -> Step {
        guard generation == self.generation else { return .end }
        var expired: [any DeadlineExpiry] = []
        while let top = self.heap.first {
            guard let registration = self.registrations[top.id], registration.deadline == top.deadline else {
                self.popTop()  // withdrawn
                continue
            }
            guard top.deadline <= now else { break }
            self.popTop()
            self.registrations[top.id] = nil
            expired.append(registration.expiry)
        }
        if !expired.isEmpty {
            self.watcher = .running
            return .fire(expired)
        }
        guard let top = self.heap.first else {
            self.watcher = .running
            return .park
        }
        guard settled else {
            self.watcher = .running
            return .settle
        }
        self.watcher = .sleeping(until: top.deadline)
        return .sleep(until: top.deadline)
    }

    /// Parks the watcher task of `generation`; `true` when it must go on at once instead.
    mutating func park(_ parked: UnsafeContinuation<Void, Never>, _ generation: UInt64) -> Bool {
        guard generation == self.generation, self.registrations.isEmpty else { return true }
        self.watcher = .parked(parked)
        return false
    }

    /// Keeps the handle of the watcher task of `generation`; `true` when that task is already superseded.
    mutating func keep(_ task: Task<Void, Never>, _ generation: UInt64) -> Bool {
        guard generation == self.generation else { return true }
        self.task = task
        return false
    }

    /// Ends the watcher for good; returns the parked task to wake so that it ends.
    mutating func abandon() -> UnsafeContinuation<Void, Never>? {
        self.generation &+= 1
        defer { self.watcher = .none }
        guard case .parked(let parked) = self.watcher else { return nil }
        return parked
    }

    private mutating func replaceWatcher() -> RegisterAction {
        self.generation &+= 1
        self.watcher = .running
        defer { self.task = nil }
        return .start(self.generation, superseding: self.task)
    }

    // MARK: - Heap

    private mutating func push(_ due: Due) {
        self.heap.append(due)
        var child = self.heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard self.heap[child].deadline < self.heap[parent].deadline else { break }
            self.heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popTop() {
        let last = self.heap.removeLast()
        guard !self.heap.isEmpty else { return }
        self.heap[0] = last
        self.siftDown(from: 0)
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < self.heap.count else { return }
            let right = left + 1
            var least = left
            if right < self.heap.count && self.heap[right].deadline < self.heap[left].deadline { least = right }
            guard self.heap[least].deadline < self.heap[parent].deadline else { return }
            self.heap.swapAt(parent, least)
            parent = least
        }
    }

    private mutating func rebuildHeap() {
        self.heap.removeAll(keepingCapacity: true)
        for (id, registration) in self.registrations { self.heap.append(Due(deadline: registration.deadline, id: id)) }
        var index = self.heap.count / 2
        while index > 0 {
            index -= 1
            self.siftDown(from: index)
        }
    }
}
