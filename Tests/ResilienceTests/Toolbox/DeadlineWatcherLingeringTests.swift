import ResilienceTesting
import Testing

@testable import Resilience

/// The deadline watcher whose sleep outlives the last registration, as on the system's
/// clocks, forced on a test clock so that every sleep can be seen and timed.
@Suite("Deadline watcher: a sleep that lingers", .timeLimit(.minutes(5)))
struct DeadlineWatcherLingeringTests {
    /// An expiry that does nothing; the state machine tests only look at what it returns.
    struct NoExpiry: DeadlineExpiry {
        func deadlineReached() {}
    }

    /// The expiries that ran, by name, in order; a test waits for the next one here.
    final class ExpiryLog: Sendable {
        private struct State {
            var fired: [String] = []
            var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        }

        private let state = Lock(State())

        /// The names of the expiries that ran, in order.
        var fired: [String] { self.state.withLock { $0.fired } }

        /// An expiry that records `name` when it runs.
        func expiry(_ name: String) -> some DeadlineExpiry { Logged(name: name, log: self) }

        /// Returns once `count` expiries have run.
        func waitForFired(count: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = self.state.withLock { state in
                    if state.fired.count >= count { return true }
                    state.waiters.append((count, continuation))
                    return false
                }
                if ready { continuation.resume() }
            }
        }

        fileprivate func record(_ name: String) {
            let ready = self.state.withLock { state in
                state.fired.append(name)
                let count = state.fired.count
                defer { state.waiters.removeAll { $0.count <= count } }
                return state.waiters.filter { $0.count <= count }.map(\.continuation)
            }
            for waiter in ready { waiter.resume() }
        }

        private struct Logged: DeadlineExpiry {
            let name: String
            let log: ExpiryLog

            func deadlineReached() { self.log.record(self.name) }
        }
    }

    /// The deadline the watcher task sleeps until, or `nil` when it does not sleep.
    static func sleepingUntil(_ watcher: DeadlineWatcher) -> Duration? {
        guard case .sleeping(let until) = watcher.phase else { return nil }
        return until
    }

    @Test func theSystemClocksLingerAndEveryOtherClockLeavesNoSleepBehind() {
        #expect(DeadlineWatcher(clock: ElapsedClock(ContinuousClock())).lingers)
        #expect(DeadlineWatcher(clock: ElapsedClock(SuspendingClock())).lingers)
        #expect(!DeadlineWatcher(clock: ElapsedClock(TestClock())).lingers)
        #expect(DeadlineWatcher(clock: ElapsedClock(TestClock()), lingers: true).lingers)
    }

    @Test func theSleepStaysAfterTheLastRegistrationIsWithdrawn() async {
        let clock = TestClock()
        let watcher = DeadlineWatcher(clock: ElapsedClock(clock), lingers: true)
        let log = ExpiryLog()
        let id = watcher.register(.seconds(5), log.expiry("call"))
        await clock.waitForSleepers(count: 1)
        watcher.withdraw(id)
        #expect(clock.sleeperCount == 1)
        #expect(Self.sleepingUntil(watcher) == .seconds(5))
        #expect(clock.sleepRequests == [.seconds(5)])
    }

    @Test func aLaterDeadlineNeitherWakesNorReplacesTheSleep() async {
        let clock = TestClock()
        let watcher = DeadlineWatcher(clock: ElapsedClock(clock), lingers: true)
        let log = ExpiryLog()
        watcher.withdraw(watcher.register(.seconds(5), log.expiry("first")))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        let later = watcher.register(.seconds(6), log.expiry("later"))
        // Woken or replaced, the watcher would be running or sleeping until t = 6 s by now.
        #expect(Self.sleepingUntil(watcher) == .seconds(5))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(4))  // t = 5 s: the lingering sleep ends
        await clock.waitForSleepRequests(count: 2)
        #expect(clock.sleepRequests == [.seconds(5), .seconds(1)])  // one sleep, then on to t = 6 s
        watcher.withdraw(later)
        #expect(log.fired == [])
    }

    @Test func anEarlierDeadlineReArmsTheWatcher() async {
        let clock = TestClock()
        let watcher = DeadlineWatcher(clock: ElapsedClock(clock), lingers: true)
        let log = ExpiryLog()
        watcher.withdraw(watcher.register(.seconds(5), log.expiry("first")))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        _ = watcher.register(.seconds(3), log.expiry("earlier"))
        await clock.waitForSleepRequests(count: 2)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleepRequests == [.seconds(5), .seconds(2)])  // until t = 3 s
        #expect(clock.sleeperCount == 1)  // the sleep until t = 5 s was cancelled
        clock.advance(by: .seconds(2))
        await log.waitForFired(count: 1)
        #expect(log.fired == ["earlier"])
        #expect(clock.now == TestClock.Instant(offset: .seconds(3)))
    }

    @Test func aSleepThatEndsWithNothingRegisteredLeavesNoSleeper() async {
        let clock = TestClock()
        let watcher = DeadlineWatcher(clock: ElapsedClock(clock), lingers: true)
        let log = ExpiryLog()
        watcher.withdraw(watcher.register(.seconds(5), log.expiry("first")))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        #expect(clock.sleeperCount == 0)
        // The next call wakes it, and it sleeps until that call's deadline, not before.
        _ = watcher.register(.seconds(8), log.expiry("next"))
        await clock.waitForSleepRequests(count: 2)
        #expect(clock.sleepRequests == [.seconds(5), .seconds(3)])
        #expect(log.fired == [])
        clock.advance(by: .seconds(3))
        await log.waitForFired(count: 1)
        #expect(log.fired == ["next"])
    }

    @Test func registrationsDueWhileTheSleepLingersFireExactlyOnTime() async {
        let clock = TestClock()
        let watcher = DeadlineWatcher(clock: ElapsedClock(clock), lingers: true)
        let log = ExpiryLog()
        watcher.withdraw(watcher.register(.seconds(5), log.expiry("withdrawn")))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(1))
        _ = watcher.register(.seconds(5), log.expiry("same end"))
        _ = watcher.register(.seconds(7), log.expiry("later"))
        clock.advance(by: .seconds(3))  // t = 4 s
        #expect(Self.sleepingUntil(watcher) == .seconds(5))  // so nothing can fire before t = 5 s
        #expect(log.fired == [])
        clock.advance(by: .seconds(1))  // t = 5 s
        await log.waitForFired(count: 1)
        await clock.waitForSleepRequests(count: 2)
        #expect(log.fired == ["same end"])
        #expect(clock.sleepRequests == [.seconds(5), .seconds(2)])  // on to t = 7 s
        clock.advance(by: .seconds(2))
        await log.waitForFired(count: 2)
        #expect(log.fired == ["same end", "later"])
    }

    @Test func aWatcherWhoseOwnerIsGoneEndsItsLingeringSleep() async {
        let clock = TestClock()
        var watcher: DeadlineWatcher? = DeadlineWatcher(clock: ElapsedClock(clock), lingers: true)
        weak let probe = watcher
        let id = watcher?.register(.seconds(5), NoExpiry())
        await clock.waitForSleepers(count: 1)
        if let id { watcher?.withdraw(id) }
        #expect(clock.sleeperCount == 1)
        watcher = nil
        #expect(probe == nil)
        #expect(clock.sleeperCount == 0)  // cancelled now, not left to run until t = 5 s
    }

    @Test func aDroppedTimeoutEndsItsWatchersLingeringSleep() async throws {
        let clock = TestClock()
        var timeout: Timeout? = Timeout(
            .seconds(5), watcher: DeadlineWatcher(clock: ElapsedClock(clock), lingers: true))
        weak let probe = timeout?.watcher
        do {
            // An operation that suspends, so that its deadline is registered (one that
            // returns before it first suspends leaves the watcher alone).
            let gate = Gate()
            let call = Task { [timeout] in
                try await timeout?.execute {
                    await gate.wait()
                    return 1
                }
            }
            await clock.waitForSleepers(count: 1)
            gate.open()
            #expect(try await call.value == 1)
        }
        #expect(clock.sleeperCount == 1)  // the watcher's sleep, left to run
        timeout = nil
        #expect(probe == nil)
        #expect(clock.sleeperCount == 0)
    }

    // MARK: - State machine

    /// A lingering watcher's state with one registration due at 5 s, and the generation
    /// of the watcher task that registration starts.
    static func lingeringWatcherStarted() throws -> (DeadlineWatcherState, id: UInt64, generation: UInt64) {
        var state = DeadlineWatcherState(lingers: true)
        let (id, action) = state.register(.seconds(5), NoExpiry())
        guard case .start(let generation, superseding: nil) = action else {
            throw WatcherDidNotStart(action: "\(action)")
        }
        return (state, id, generation)
    }

    struct WatcherDidNotStart: Error {
        let action: String
    }

    @Test func aLingeringWatcherSleepsAtOnceAndKeepsTheSleepWhenTheLastCallLeaves() {
        var state = DeadlineWatcherState(lingers: true)
        let (id, action) = state.register(.seconds(5), NoExpiry())
        guard case .start(let generation, superseding: nil) = action else {
            Issue.record("expected a watcher to start, got \(action)")
            return
        }
        #expect(state.step(generation, now: .zero, settled: false) == .sleep(until: .seconds(5)))  // no settling
        let sleeper = Task<Void, Never> {}
        #expect(state.keep(sleeper, generation) == false)
        #expect(state.withdraw(id) == nil)
        let (_, later) = state.register(.seconds(6), NoExpiry())
        guard case .none = later else {
            Issue.record("a later deadline needs no wake-up, got \(later)")
            return
        }
        #expect(state.step(generation, now: .seconds(5), settled: true) == .sleep(until: .seconds(6)))
    }

    @Test func aLingeringSleepThatEndsWithNothingRegisteredParks() throws {
        let (started, id, generation) = try Self.lingeringWatcherStarted()
        var state = started
        #expect(state.step(generation, now: .zero, settled: false) == .sleep(until: .seconds(5)))
        #expect(state.withdraw(id) == nil)
        #expect(state.step(generation, now: .seconds(5), settled: true) == .park)
    }

    @Test func aLingeringWatcherWokenByACallThatAlreadyLeftStillSleepsUntilItsDeadline() throws {
        let (started, id, generation) = try Self.lingeringWatcherStarted()
        var state = started
        #expect(state.withdraw(id) == nil)  // before the watcher task first looked
        #expect(state.step(generation, now: .seconds(1), settled: false) == .sleep(until: .seconds(5)))
        #expect(state.step(generation, now: .seconds(5), settled: true) == .park)
    }

    @Test func aRegistrationThatCameAndWentWhileTheWatcherLookedStopsItFromParking() async throws {
        let (started, first, generation) = try Self.lingeringWatcherStarted()
        var state = started
        #expect(state.withdraw(first) == nil)
        #expect(state.step(generation, now: .seconds(6), settled: true) == .park)  // its deadline has passed
        // Between the look and the park, a call registers and leaves again.
        let (second, _) = state.register(.seconds(9), NoExpiry())
        #expect(state.withdraw(second) == nil)
        var goesOn = false
        await withUnsafeContinuation { (parked: UnsafeContinuation<Void, Never>) in
            goesOn = state.park(parked, generation)
            parked.resume()  // the test goes on either way; `goesOn` says what the watcher would do
        }
        #expect(goesOn)
        #expect(state.step(generation, now: .seconds(6), settled: false) == .sleep(until: .seconds(9)))
    }

    @Test func aWakeDeadlineThatHasPassedLetsTheWatcherPark() throws {
        let (started, id, generation) = try Self.lingeringWatcherStarted()
        var state = started
        #expect(state.withdraw(id) == nil)  // before the watcher task first looked
        #expect(state.step(generation, now: .seconds(5), settled: false) == .park)
    }

    @Test func anEarlierDeadlineReplacesALingeringSleep() throws {
        let (started, id, old) = try Self.lingeringWatcherStarted()
        var state = started
        _ = state.step(old, now: .zero, settled: false)
        let sleeper = Task<Void, Never> {}
        _ = state.keep(sleeper, old)
        _ = state.withdraw(id)
        let (earlier, second) = state.register(.seconds(2), NoExpiry())
        guard case .start(let new, superseding: let superseded) = second else {
            Issue.record("expected a new watcher, got \(second)")
            return
        }
        #expect(superseded == sleeper)
        #expect(state.step(old, now: .zero, settled: false) == .end)
        _ = state.withdraw(earlier)
        #expect(state.step(new, now: .zero, settled: false) == .sleep(until: .seconds(2)))
    }
}
