/// What a ``DeadlineWatcher`` does for a registration whose deadline has passed.
///
/// It runs on the watcher's task, outside every lock. A conformance that holds
/// one or two references (a signal and a task handle, say) fits in the
/// existential's inline buffer, so registering it allocates nothing.
protocol DeadlineExpiry: Sendable {
    /// The deadline passed before the registration was withdrawn.
    func deadlineReached()

    /// The caller of the registered call was cancelled before the registration was withdrawn.
    func callerCancelled()
}

extension DeadlineExpiry {
    /// Does nothing: only a registration that holds the call's task has a task to cancel.
    func callerCancelled() {}
}

/// One task that watches the deadlines of many calls on one clock.
///
/// A call that limits its own duration registers its deadline here instead of
/// starting a timer task of its own: registering is a lock and an insertion into
/// a small heap, and a call that finishes first withdraws its registration the
/// same way. The watcher task sleeps on the injected clock until the earliest
/// deadline and then runs the expiry of every registration that is due.
///
/// What happens to a sleep when the last registration is withdrawn depends on
/// ``lingers``, chosen from the clock:
///
/// - On a clock whose sleepers nobody can see (the system's `ContinuousClock`
///   and `SuspendingClock`), the sleep lingers: it runs to its end, and a
///   registration due no earlier than that end needs no wake-up at all. A loop
///   of calls with the same limit then shares one sleep per limit, instead of a
///   wake-up, a sleep and its cancellation per call. A sleep that ends with
///   nothing registered parks the watcher; a parked watcher woken by a
///   registration sleeps at once until that registration's deadline, even when
///   it was withdrawn before the watcher looked.
/// - On every other clock (a test clock) the watcher leaves no sleep behind:
///   the sleep is cancelled, so the clock shows no sleeper once no call is in
///   flight, and the next registration starts a new watcher task. A woken
///   watcher yields a few times before it sleeps, so a call that finishes within
///   those few scheduling rounds costs no sleep at all.
///
/// A watcher with nothing to watch parks on a continuation, not on the clock,
/// and the next registration wakes it. A watcher whose owner is gone ends: a
/// parked watcher task is woken, and a sleeping one (a lingering sleep holds the
/// watcher weakly) is cancelled.
///
/// Never calls user code or awaits under its lock: the state machine returns
/// what to do, and the caller does it after unlocking.
final class DeadlineWatcher: Sendable {
    /// The clock its deadlines are measured on.
    let clock: ElapsedClock
    private let state: Lock<DeadlineWatcherState>

    /// Whether a sleep outlives the last registration instead of being cancelled.
    ///
    /// `true` on the system's clocks, where no one can see a sleeper and a sleep
    /// left to run costs nothing until it ends; `false` on every other clock, so
    /// that a test clock shows no sleeper once no call is in flight.
    let lingers: Bool

    /// A watcher of deadlines measured on `clock`.
    ///
    /// - Parameter lingers: Overrides the choice ``lingers`` makes from the clock; for tests.
    init(clock: ElapsedClock, lingers: Bool? = nil) {
        self.clock = clock
        self.lingers = lingers ?? clock.isSystemClock
        self.state = Lock(DeadlineWatcherState(lingers: self.lingers))
    }

    deinit {
        // A watcher task holds the watcher weakly: wake a parked one and cancel a sleeping
        // one (a lingering sleep), so that it ends now rather than at its deadline.
        let (parked, sleeping) = self.state.withLock { $0.abandon() }
        parked?.resume()
        sleeping?.cancel()
    }

    /// The time now on the watcher's clock.
    func now() -> Duration {
        self.clock.now()
    }

    /// The number of registrations neither withdrawn nor due.
    var registrations: Int {
        self.state.withLock { $0.count }
    }

    /// What the watcher task is doing now; for tests.
    var phase: DeadlineWatcherState.Watcher {
        self.state.withLock { $0.watcher }
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

    /// Withdraws a registration whose expiry has not run, and says whether it did: `false`
    /// once the watcher took it as due, so that its expiry runs, or ran, all the same.
    func withdrawIfPending(_ id: UInt64) -> Bool {
        let (pending, sleeping) = self.state.withLock { ($0.isPending(id), $0.withdraw(id)) }
        sleeping?.cancel()
        return pending
    }

    /// Tells the expiry of a registration neither withdrawn nor due that its caller was
    /// cancelled (``DeadlineExpiry/callerCancelled()``), outside the lock.
    func cancel(_ id: UInt64) {
        let expiry = self.state.withLock { $0.expiry(of: id) }
        expiry?.callerCancelled()
    }

    /// How often a woken watcher yields and looks again before it sleeps on the clock,
    /// unless it ``lingers``.
    ///
    /// Sleeping on the clock and then being cancelled because the calls finished costs
    /// a task and a sleep (about as much as the timer task this watcher replaces);
    /// yielding costs neither. A few looks let the calls that finish within a few
    /// scheduling rounds go without any sleep; a longer call waits these few rounds
    /// more before its deadline is watched, which changes nothing, since the watcher
    /// sleeps until the deadline itself, not for a duration. Eight was measured with
    /// the benchmark's `timeout.success` row before watchers on the system's clocks
    /// lingered; it now governs only the other clocks (a `TestClock`, a user's own),
    /// which no benchmark row measures. A lingering watcher does not yield: its
    /// sleep is shared by the calls that come after, and it starts that sleep even when
    /// the call that woke it has finished, so the yields would buy nothing.
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

    /// Whether a sleep outlives the last registration; see ``DeadlineWatcher/lingers``.
    let lingers: Bool
    private var registrations: [UInt64: Registration] = [:]
    /// A binary min-heap of deadlines; an entry whose registration was withdrawn stays until it reaches the top.
    private var heap: [Due] = []
    private var nextID: UInt64 = 0
    private(set) var watcher = Watcher.none
    /// The generation of the live watcher task; an older task that sees a newer generation ends.
    private var generation: UInt64 = 0
    /// The live watcher task, once its starter has kept it.
    private var task: Task<Void, Never>?
    /// When lingering: the earliest deadline registered since the watcher task last
    /// looked, which it sleeps until even if that registration is withdrawn first.
    private var wakeDeadline: Duration?

    /// The state of a watcher that lingers or not (see ``DeadlineWatcher/lingers``).
    init(lingers: Bool = false) {
        self.lingers = lingers
    }

    /// The number of registrations not yet withdrawn nor due.
    var count: Int { self.registrations.count }

    /// Whether the registration `id` is neither withdrawn nor taken as due by the watcher.
    func isPending(_ id: UInt64) -> Bool { self.registrations[id] != nil }

    mutating func register(_ deadline: Duration, _ expiry: some DeadlineExpiry) -> (UInt64, RegisterAction) {
        self.nextID &+= 1
        let id = self.nextID
        self.registrations[id] = Registration(deadline: deadline, expiry: expiry)
        self.push(Due(deadline: deadline, id: id))
        switch self.watcher {
        case .none:
            self.noteWake(deadline)
            return (id, self.replaceWatcher())
        case .parked(let parked):
            self.noteWake(deadline)
            self.watcher = .running
            return (id, .resume(parked))
        case .running:
            self.noteWake(deadline)
            return (id, .none)
        case .sleeping(let until):
            // Equal durations register in deadline order, so this is rare.
            guard deadline < until else { return (id, .none) }
            self.noteWake(deadline)
            return (id, self.replaceWatcher())
        }
    }

    /// When lingering, remembers `deadline` for the watcher task's next look: it sleeps
    /// until the earliest such deadline even if the registration is withdrawn first.
    private mutating func noteWake(_ deadline: Duration) {
        guard self.lingers else { return }
        if let wake = self.wakeDeadline, wake <= deadline { return }
        self.wakeDeadline = deadline
    }

    /// The expiry of `id`, unless it was withdrawn or came due.
    func expiry(of id: UInt64) -> (any DeadlineExpiry)? {
        self.registrations[id]?.expiry
    }

    /// Withdraws `id`; returns the watcher task to cancel when it sleeps for nothing
    /// and does not linger.
    mutating func withdraw(_ id: UInt64) -> Task<Void, Never>? {
        guard self.registrations.removeValue(forKey: id) != nil else { return nil }
        if self.registrations.isEmpty {
            self.heap.removeAll(keepingCapacity: true)
            // A lingering sleep runs on: the next calls' deadlines come later, and need no wake-up.
            guard case .sleeping = self.watcher, !self.lingers else { return nil }
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
    /// looked often enough since it was started or woken (a lingering watcher never waits
    /// to settle).
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
        let wake = self.wakeDeadline
        self.wakeDeadline = nil
        guard let top = self.heap.first else {
            if let wake, wake > now {
                // Lingering, woken by a call that has already finished: sleep until its
                // deadline anyway, so that the calls after it share the sleep.
                self.watcher = .sleeping(until: wake)
                return .sleep(until: wake)
            }
            self.watcher = .running
            return .park
        }
        guard settled || self.lingers else {
            self.watcher = .running
            return .settle
        }
        self.watcher = .sleeping(until: top.deadline)
        return .sleep(until: top.deadline)
    }

    /// Parks the watcher task of `generation`; `true` when it must go on at once instead
    /// (a registration came, or, when lingering, came and went, since it last looked).
    mutating func park(_ parked: UnsafeContinuation<Void, Never>, _ generation: UInt64) -> Bool {
        guard generation == self.generation, self.registrations.isEmpty, self.wakeDeadline == nil else {
            return true
        }
        self.watcher = .parked(parked)
        return false
    }

    /// Keeps the handle of the watcher task of `generation`; `true` when that task is already superseded.
    mutating func keep(_ task: Task<Void, Never>, _ generation: UInt64) -> Bool {
        guard generation == self.generation else { return true }
        self.task = task
        return false
    }

    /// Ends the watcher for good; returns the parked task to wake, or the sleeping task to
    /// cancel, so that it ends.
    mutating func abandon() -> (parked: UnsafeContinuation<Void, Never>?, sleeping: Task<Void, Never>?) {
        self.generation &+= 1
        defer {
            self.watcher = .none
            self.task = nil
        }
        switch self.watcher {
        case .parked(let parked): return (parked, nil)
        case .sleeping: return (nil, self.task)
        case .none, .running: return (nil, nil)
        }
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
