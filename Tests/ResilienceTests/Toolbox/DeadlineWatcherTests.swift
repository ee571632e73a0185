import ResilienceTesting
import Testing

@testable import Resilience

@Suite("Deadline watcher")
struct DeadlineWatcherTests {
    /// An expiry that does nothing; the state machine tests only look at what it returns.
    struct NoExpiry: DeadlineExpiry {
        func deadlineReached() {}
    }

    @Test func overlappingTimeoutsShareOneSleepOnTheClock() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let calls = (0..<3).map { _ in
            Task { try await timeout.execute { try await clock.sleep(for: .seconds(10)) } }
        }
        await clock.waitForSleepers(count: 4)  // three operations and one watcher
        #expect(clock.sleeperCount == 4)
        clock.advance(by: .seconds(1))
        for call in calls {
            await #expect(throws: TimeoutError.self) { try await call.value }
        }
        #expect(clock.sleepRequests.filter { $0 == .seconds(1) }.count == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aLaterCallTimesOutAtItsOwnDeadlineAfterAnEarlierOne() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(5), clock: clock)
        let early = Task { try await timeout.execute { try await clock.sleep(for: .seconds(60)) } }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(2))
        let late = Task { try await timeout.execute { try await clock.sleep(for: .seconds(60)) } }
        await clock.waitForSleepers(count: 3)  // two operations and the watcher
        clock.advance(by: .seconds(3))  // t = 5 s: the first deadline
        await #expect(throws: TimeoutError.self) { try await early.value }
        await clock.waitForSleepers(count: 2)  // the late operation, and the watcher asleep again
        #expect(clock.sleepRequests.last == .seconds(2))  // until t = 7 s
        clock.advance(by: .seconds(2))
        await #expect(throws: TimeoutError.self) { try await late.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aTimeoutWhoseWatcherStoppedStillEndsTheNextSlowCall() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        #expect(try await timeout.execute { 1 } == 1)
        #expect(clock.sleeperCount == 0)
        let call = Task { try await timeout.execute { try await clock.sleep(for: .seconds(10)) } }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        await #expect(throws: TimeoutError.self) { try await call.value }
    }

    @Test func withdrawingTheLastRegistrationCancelsTheSleepingWatcher() {
        var state = DeadlineWatcherState()
        let (id, action) = state.register(.seconds(5), NoExpiry())
        guard case .start(let generation, superseding: nil) = action else {
            Issue.record("expected a watcher to start, got \(action)")
            return
        }
        #expect(state.step(generation, now: .zero, settled: false) == .settle)
        #expect(state.step(generation, now: .zero, settled: true) == .sleep(until: .seconds(5)))
        let sleeper = Task<Void, Never> {}
        #expect(state.keep(sleeper, generation) == false)
        #expect(state.withdraw(id) == sleeper)
        #expect(state.step(generation, now: .zero, settled: true) == .end)  // superseded
    }

    @Test func anEarlierDeadlineStartsAWatcherThatSleepsLess() {
        var state = DeadlineWatcherState()
        let (_, first) = state.register(.seconds(5), NoExpiry())
        guard case .start(let old, _) = first else {
            Issue.record("no watcher started")
            return
        }
        _ = state.step(old, now: .zero, settled: true)
        let sleeper = Task<Void, Never> {}
        _ = state.keep(sleeper, old)
        let (_, second) = state.register(.seconds(2), NoExpiry())
        guard case .start(let new, superseding: let superseded) = second else {
            Issue.record("expected a new watcher, got \(second)")
            return
        }
        #expect(superseded == sleeper)
        #expect(state.step(old, now: .zero, settled: true) == .end)
        #expect(state.step(new, now: .zero, settled: true) == .sleep(until: .seconds(2)))
    }

    @Test func dueRegistrationsFireOnceAndWithdrawnOnesNever() {
        var state = DeadlineWatcherState()
        let (a, start) = state.register(.seconds(1), NoExpiry())
        guard case .start(let generation, _) = start else {
            Issue.record("no watcher started")
            return
        }
        let (b, _) = state.register(.seconds(1), NoExpiry())
        _ = state.register(.seconds(9), NoExpiry())
        _ = state.withdraw(b)
        guard case .fire(let expired) = state.step(generation, now: .seconds(1), settled: true) else {
            Issue.record("nothing fired")
            return
        }
        #expect(expired.count == 1)
        #expect(state.count == 1)
        #expect(state.withdraw(a) == nil)  // already fired: withdrawing does nothing
        #expect(state.step(generation, now: .seconds(1), settled: true) == .sleep(until: .seconds(9)))
    }

    @Test func aWatcherWithNothingToWatchParksOffTheClockAndTheNextCallWakesIt() async throws {
        var state = DeadlineWatcherState()
        let (id, start) = state.register(.seconds(1), NoExpiry())
        guard case .start(let generation, _) = start else {
            Issue.record("no watcher started")
            return
        }
        #expect(state.withdraw(id) == nil)  // the watcher had not gone to sleep yet
        #expect(state.step(generation, now: .zero, settled: false) == .park)
        await withUnsafeContinuation { (parked: UnsafeContinuation<Void, Never>) in
            #expect(state.park(parked, generation) == false)
            let (_, wake) = state.register(.seconds(2), NoExpiry())
            guard case .resume(let continuation) = wake else {
                Issue.record("expected the parked watcher to be woken, got \(wake)")
                parked.resume()
                return
            }
            continuation.resume()
        }
    }
}

extension DeadlineWatcherState.Step: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.end, .end), (.settle, .settle), (.park, .park): true
        case (.sleep(let a), .sleep(let b)): a == b
        case (.fire(let a), .fire(let b)): a.count == b.count
        default: false
        }
    }
}
