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

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State: CountWaiting {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        /// Sleepers and waiters cancelled before they parked, by ID.
        var cancelledBeforeSleeping: Set<UInt64> = []
        var countWaiters = CountWaiters()
        var sleepRequests: [Duration] = []

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
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return .park(state.satisfiedWaiters())
                }
                switch action {
                case .resume: continuation.resume()
                case .cancel: continuation.resume(throwing: CancellationError())
                case .park(let waiters):
                    for waiter in waiters { waiter.resume() }
                }
            }
        } onCancel: {
            let sleeper: Sleeper? = self.state.withLock { state in
                if let index = state.sleepers.firstIndex(where: { $0.id == id }) {
                    return state.sleepers.remove(at: index)
                }
                state.cancelledBeforeSleeping.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration` and wakes every sleeper whose deadline has come, earliest first.
    ///
    /// - Precondition: `duration` is not negative: a test clock, like the clocks it
    ///   stands in for, never goes back. Use ``advance(to:)`` to move to an instant
    ///   that may already have passed.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "TestClock.advance(by:) needs a duration of zero or more, not \(duration)")
        let woken: [Sleeper] = self.state.withLock { state in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in woken {
            sleeper.continuation.resume()
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

    /// Moves time forward to `instant`, if it is later than now, waking the sleepers that are due.
    public func advance(to instant: Instant) {
        let duration = self.now.duration(to: instant)
        if duration > .zero {
            self.advance(by: duration)
        }
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
