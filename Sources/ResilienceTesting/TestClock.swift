import Resilience

/// A clock whose time moves only when a test says so.
///
/// Inject it wherever the package takes a clock; nothing that sleeps on it wakes
/// until the test calls ``advance(by:)`` past the sleeper's deadline. Tests wait
/// for code under test to reach a sleep with ``waitForSleepers(count:)``, an
/// explicit synchronization point, and read the requested waits from
/// ``sleepRequests``.
///
/// ```swift
/// let clock = TestClock()
/// let policy = try RetryPolicy(backoff: .constant(.seconds(2)), jitter: .none, clock: clock)
/// let call = Task { try await policy.execute { try await flakyService.fetch() } }
/// await clock.waitForSleepers(count: 1)   // the first attempt failed; the policy waits
/// #expect(clock.sleepRequests == [.seconds(2)])
/// clock.advance(by: .seconds(2))          // the retry runs now
/// ```
public final class TestClock: Clock, Sendable {
    /// An instant on a ``TestClock``: the time elapsed since the clock was made.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// The offset from the clock's start.
        public var offset: Duration

        /// Creates the instant `offset` after the clock's start.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: self.offset + duration)
        }

        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration {
            other.offset - self.offset
        }

        /// Whether `lhs` comes first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }
    }

    /// A caller of ``advanceToNextDeadline(within:)`` waiting for a sleeper due soon enough.
    private struct DeadlineWaiter {
        var id: UInt64
        var horizon: Duration
        var continuation: CheckedContinuation<Void, Never>
    }

    /// A continuation a move of time resumes, once the lock is released.
    private enum Wake {
        case sleeper(CheckedContinuation<Void, any Error>)
        case waiter(CheckedContinuation<Void, Never>)

        func resume() {
            switch self {
            case .sleeper(let continuation): continuation.resume()
            case .waiter(let continuation): continuation.resume()
            }
        }
    }

    private struct State: CountWaiting {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        /// The parked sleepers, by deadline and then in the order they parked.
        var sleepers = DeadlineHeap<CheckedContinuation<Void, any Error>>()
        /// Sleepers and waiters cancelled before they parked, by ID.
        var cancelledBeforeSleeping: Set<UInt64> = []
        var countWaiters = CountWaiters()
        var sleepRequests: [Duration] = []
        var deadlineWaiters: [DeadlineWaiter] = []
        /// What ``TestClock/probeAdvances(with:)`` set.
        var advanceProbe: (@Sendable () -> Void)?
        /// What moves of time took out and no one has resumed yet, in the order to resume it.
        var wakes: [Wake] = []
        /// Whether a mover resumes ``wakes`` now: the others leave theirs to it.
        var isWaking = false

        /// The earliest deadline of the parked sleepers, if it is at most `horizon` after now.
        func nextDeadline(within horizon: Duration) -> Instant? {
            guard let earliest = self.sleepers.earliestDeadline, earliest <= self.now.advanced(by: horizon) else {
                return nil
            }
            return earliest
        }

        /// Takes out the deadline waiters that a parked sleeper now satisfies, to resume after unlocking.
        mutating func dueWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !self.deadlineWaiters.isEmpty, let earliest = self.sleepers.earliestDeadline else { return [] }
            let now = self.now
            var ready: [CheckedContinuation<Void, Never>] = []
            self.deadlineWaiters.removeAll { waiter in
                guard earliest <= now.advanced(by: waiter.horizon) else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }

        /// Moves time to `instant`, if that is later than now, and queues the sleepers due then
        /// (earliest first, equal deadlines in the order they parked) and the deadline waiters
        /// the move satisfies; returns whether the caller is to resume the queue.
        mutating func moveTime(to instant: Instant) -> Bool {
            guard instant > self.now else { return false }
            self.now = instant
            while let (_, continuation) = self.sleepers.popFirst(dueBy: instant) {
                self.wakes.append(.sleeper(continuation))
            }
            self.wakes += self.dueWaiters().map(Wake.waiter)
            guard !self.wakes.isEmpty, !self.isWaking else { return false }
            self.isWaking = true
            return true
        }

        /// Takes out the queued wakes to resume, or, with none left, ends the resuming.
        mutating func takeWakes() -> [Wake] {
            if self.wakes.isEmpty { self.isWaking = false }
            defer { self.wakes = [] }
            return self.wakes
        }

        /// Removes and returns the waiters whose count the parked sleepers now meet.
        func count(_ measure: CountWaiters.Measure) -> Int {
            measure == .current ? self.sleepers.count : self.sleepRequests.count
        }
    }

    private let state = Lock(State())

    /// Creates a clock at offset zero.
    public init() {}

    /// The current instant.
    public var now: Instant {
        self.state.withLock { $0.now }
    }

    /// Zero: the clock is exact.
    public var minimumResolution: Duration { .zero }

    /// The number of tasks sleeping on the clock now.
    public var sleeperCount: Int {
        self.state.withLock { $0.sleepers.count }
    }

    /// The earliest deadline of the sleepers parked now, and whether a move of time is still
    /// resuming sleepers it woke: for the test drivers of this package, which tell a call that
    /// waits beyond their horizon from one that runs.
    package var nextDeadline: (deadline: Instant?, isResuming: Bool) {
        self.state.withLock { ($0.sleepers.earliestDeadline, $0.isWaking) }
    }

    /// For the tests of this package: has `probe` run in each ``advance(to:)`` after it is
    /// asked for and before it has moved time, on the advancing thread and outside the lock,
    /// so that a test can move the clock in between; `nil` removes it.
    package func probeAdvances(with probe: (@Sendable () -> Void)?) {
        self.state.withLock { $0.advanceProbe = probe }
    }

    /// Every sleep requested so far, as the duration from the clock's time at the request to its deadline.
    public var sleepRequests: [Duration] {
        self.state.withLock { $0.sleepRequests }
    }

    /// Suspends until the clock is advanced to `deadline`.
    ///
    /// - Throws: `CancellationError` as soon as the sleeping task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let (id, ready) = self.state.withLock { state in
            state.nextID += 1
            state.sleepRequests.append(state.now.duration(to: deadline))
            return (state.nextID, state.satisfiedWaiters())
        }
        for waiter in ready { waiter.resume() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Action {
                    case resume
                    case cancel
                    case park([CheckedContinuation<Void, Never>])
                }
                let action: Action = self.state.withLock { state in
                    if state.cancelledBeforeSleeping.remove(id) != nil { return .cancel }
                    if deadline <= state.now { return .resume }
                    state.sleepers.insert(continuation, at: deadline, id: id)
                    return .park(state.satisfiedWaiters() + state.dueWaiters())
                }
                switch action {
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                case .park(let waiters):
                    for waiter in waiters { waiter.resume() }
                }
            }
        } onCancel: {
            let sleeper = self.state.withLock { state -> CheckedContinuation<Void, any Error>? in
                if let continuation = state.sleepers.remove(id: id) { return continuation }
                state.cancelledBeforeSleeping.insert(id)
                return nil
            }
            sleeper?.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come, earliest
    /// first, and sleepers with equal deadlines in the order they began to sleep.
    ///
    /// Time is read and moved under one lock, and the sleepers are resumed after it is released.
    /// When several tasks move the clock at once, each move starts from where the last one left
    /// time, and the sleepers resume in the order of their deadlines across all the moves: a move
    /// that finds another resuming leaves its sleepers to it, and may return before they resume.
    ///
    /// - Precondition: `duration` is not negative: a test clock, like the clocks it
    ///   stands in for, never goes back. Use ``advance(to:)`` to move to an instant
    ///   that may already have passed.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "TestClock.advance(by:) needs a duration of zero or more, not \(duration)")
        let resumes = self.state.withLock { $0.moveTime(to: $0.now.advanced(by: duration)) }
        if resumes { self.resumeWakes() }
    }

    /// Resumes what moves of time took out, in order, until none is left; the lock is held only
    /// to take each batch, never while resuming.
    ///
    /// One mover at a time resumes: a mover that finds another at it leaves its wakes queued
    /// behind the other's, so that sleepers resume in the order of their deadlines even when
    /// several tasks move time at once.
    private func resumeWakes() {
        while true {
            let wakes = self.state.withLock { $0.takeWakes() }
            if wakes.isEmpty { return }
            for wake in wakes { wake.resume() }
        }
    }

    /// Waits until a task sleeps on the clock with a deadline at most `horizon` after now, then
    /// moves time to the earliest deadline of the sleepers and wakes the sleepers due then.
    ///
    /// A driver that runs code under test to its end moves time with this, so that time
    /// moves only when the code waits for it, and never more than that wait. Advancing by a
    /// fixed step whenever anyone sleeps is not the same: a deadline that watches a running
    /// call sleeps too, and a driver that advances while the call runs (its thread held up
    /// by a busy machine, say) moves time under it, so that the call computes its next
    /// waits from a moved now or sees its deadline pass. A horizon shorter than the code's
    /// deadlines leaves them asleep: the clock goes only as far as the waits the code itself
    /// sleeps, and a call that waits on nothing but a deadline is left to finish.
    ///
    /// ```swift
    /// let call = Task { try await policy.execute(attemptTimeout: .seconds(1_000)) { try await fetch() } }
    /// let driver = Task {
    ///     // Backoffs are seconds long; the attempt's 1,000-second limit never fires.
    ///     while await clock.advanceToNextDeadline(within: .seconds(100)) != nil {}
    /// }
    /// let value = try await call.value
    /// driver.cancel()
    /// ```
    ///
    /// - Parameter horizon: How far after now the next deadline may be; zero or more.
    /// - Returns: The instant time moved to, or `nil` when the waiting task was cancelled first.
    @discardableResult
    public func advanceToNextDeadline(within horizon: Duration) async -> Instant? {
        precondition(
            horizon >= .zero, "TestClock.advanceToNextDeadline(within:) needs a horizon of zero or more, not \(horizon)"
        )
        while !Task.isCancelled {
            // Found and moved to under one lock: a sleeper that leaves in between is not waited for.
            let moved: (instant: Instant, resumes: Bool)? = self.state.withLock { state in
                guard let deadline = state.nextDeadline(within: horizon) else { return nil }
                // Every parked deadline is later than now: a sleeper due already never parks.
                return (deadline, state.moveTime(to: deadline))
            }
            if let moved {
                if moved.resumes { self.resumeWakes() }
                return moved.instant
            }
            await self.waitForDeadline(within: horizon)
        }
        return nil
    }

    /// Suspends until a parked sleeper's deadline is at most `horizon` after now, or the
    /// waiting task is cancelled.
    private func waitForDeadline(within horizon: Duration) async {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let parked = self.state.withLock { state in
                    if state.cancelledBeforeSleeping.remove(id) != nil { return false }
                    if state.nextDeadline(within: horizon) != nil { return false }
                    state.deadlineWaiters.append(DeadlineWaiter(id: id, horizon: horizon, continuation: continuation))
                    return true
                }
                if !parked { continuation.resume() }
            }
        } onCancel: {
            let waiter: DeadlineWaiter? = self.state.withLock { state in
                if let index = state.deadlineWaiters.firstIndex(where: { $0.id == id }) {
                    return state.deadlineWaiters.remove(at: index)
                }
                state.cancelledBeforeSleeping.insert(id)
                return nil
            }
            waiter?.continuation.resume()
        }
    }

    /// Moves time back by `duration`, waking no one, to test code against a clock that jumps.
    ///
    /// A `Clock` promises monotonic time, but an injected clock (or a wall clock
    /// behind one) can break the promise; code that must survive that uses this.
    /// Sleepers keep their deadlines and wake when time reaches them again.
    ///
    /// - Precondition: `duration` is not negative.
    public func rewind(by duration: Duration) {
        precondition(duration >= .zero, "TestClock.rewind(by:) needs a duration of zero or more, not \(duration)")
        self.state.withLock { $0.now = $0.now.advanced(by: .zero - duration) }
    }

    /// Moves time forward to `instant`, if it is later than now, waking the sleepers that are due
    /// as ``advance(by:)`` does.
    ///
    /// Time is read and moved under one lock: of several tasks moving the clock at once, none
    /// moves it past the latest instant any of them asked for, and none moves it back.
    public func advance(to instant: Instant) {
        self.state.withLock { $0.advanceProbe }?()
        let resumes = self.state.withLock { $0.moveTime(to: instant) }
        if resumes { self.resumeWakes() }
    }

    /// Suspends until at least `count` tasks are sleeping on the clock, or the waiting task is cancelled.
    ///
    /// This is the synchronization point tests use instead of yielding and hoping:
    /// it returns exactly when the code under test has reached its sleep. It also
    /// returns as soon as the waiting task is cancelled (by a test's time limit, say),
    /// so a test whose code never sleeps fails instead of hanging; check
    /// ``sleeperCount`` after it when that matters.
    public func waitForSleepers(count: Int = 1) async {
        await self.state.wait(until: count, measuring: .current)
    }

    /// Suspends until at least `count` sleeps have been requested since the clock was made,
    /// or the waiting task is cancelled.
    ///
    /// Use it when a sleeper from an earlier step may still be parked, so that the
    /// number of parked sleepers cannot tell whether the next sleep has begun.
    /// Advancing the clock as soon as this returns is safe: a sleep whose deadline
    /// has already passed when it parks returns at once.
    public func waitForSleepRequests(count: Int) async {
        await self.state.wait(until: count, measuring: .total)
    }
}
