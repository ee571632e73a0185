import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// The interleaving a shared deadline watcher must get right: the operation finishes
/// just before its deadline, the deadline passes before the caller has run again, and
/// only then does the caller go on.
///
/// The caller and the operation run on ``Held``, whose jobs run only when the test runs
/// them, so the order is chosen, not hoped for, and no time passes but the test clock's.
/// The suite is serialized because every test drives the one held executor.
@Suite("Deadline races", .serialized)
struct DeadlineRaceTests {
    struct OwnError: Error, Equatable {}

    @Test func anOperationThatFailedJustBeforeItsDeadlineReportsItsOwnError() async throws {
        let clock = TestClock()
        let events = EventLog()
        let timeout = try Timeout(.seconds(1), observer: events, clock: clock)
        let run = HeldRun()
        let call = Task { @Held () async throws -> Int in
            try await run.call(timeout) { throw OwnError() }
        }
        let signal = try await run.finishThenPassTheDeadline(of: timeout.watcher, clock)
        await #expect(throws: OwnError.self) { try await call.value }
        #expect(events.kinds.values.isEmpty)  // no time-out reported
        #expect(!signal.hasFired)  // the watcher left the completed call alone
    }

    @Test func anOperationThatReturnedJustBeforeItsDeadlineKeepsItsValue() async throws {
        let clock = TestClock()
        let events = EventLog()
        let timeout = try Timeout(.seconds(1), observer: events, clock: clock)
        let run = HeldRun()
        let call = Task { @Held in try await run.call(timeout) { 42 } }
        let signal = try await run.finishThenPassTheDeadline(of: timeout.watcher, clock)
        #expect(try await call.value == 42)
        #expect(events.kinds.values.isEmpty)
        #expect(!signal.hasFired)  // nothing nested can read the finished call as timed out
    }

    @Test func anOperationStillRunningAtItsDeadlineIsTimedOut() async throws {
        // The other side of the race: the limit claims a call whose operation has not returned.
        let clock = TestClock()
        let timeout = try Timeout(.seconds(1), clock: clock)
        let run = HeldRun()
        let call = Task { @Held () async throws -> Int in
            try await run.call(timeout) { throw OwnError() }
        }
        await run.startAndHoldTheOperation(timeout.watcher, clock)
        await passTheDeadline(of: timeout.watcher, clock)  // the limit claims the running call
        await run.releaseTheOperation(untilCompleted: false)  // it fails on its own, too late
        await run.runUntilTheCallerReturns()
        await #expect(throws: TimeoutError.self) { try await call.value }
        #expect(try #require(run.signal).hasFired)
    }

    @Test func aHedgedAttemptThatFailedJustBeforeTheHedgeDelayEndsTheCallWithItsOwnError() async throws {
        // Hedging shares the watcher: the hedge comes due after the attempt finished but
        // before the caller took the news. The attempt's own end goes first, so the rules
        // see its failure (a 429 starts no hedge) and nothing more runs.
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let run = HeldRun()
        let call = Task { @Held () async throws -> Int in
            try await run.hedge(hedging) { throw StatusError(status: 429) }
        }
        _ = try await run.finishThenPassTheDeadline(of: hedging.watcher, clock)
        let error = await #expect(throws: StatusError.self) { try await call.value }
        #expect(error?.status == 429)
        #expect(run.operations.value == 1)
    }

    @Test func aHedgedAttemptThatSucceededJustBeforeTheHedgeDelayWinsAlone() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let run = HeldRun()
        let call = Task { @Held in try await run.hedge(hedging) { 7 } }
        _ = try await run.finishThenPassTheDeadline(of: hedging.watcher, clock)
        #expect(try await call.value == 7)
        #expect(run.operations.value == 1)
    }

    /// A policy's own deadline inside a ``Timeout``, the clock jumping past the policy's wait,
    /// its deadline and the outer deadline at once, and the outer limit firing, cutting the wait
    /// short, before the policy's task runs again (the task is held behind a job the test
    /// blocks on its thread). The policy's deadline came first, so the call ends as when the
    /// clock steps: the policy stops with the failure it waited on, and the outer limit, whose
    /// deadline came later, passes it on and reports no time-out. A policy's deadline of 6 s
    /// came after the outer one: the outer limit keeps the call.
    @Test(arguments: [3, 6])
    func aPolicysDeadlineBeforeAnOuterTimeoutDecidesWhenTheOuterLimitFiresFirst(policyDeadline: Int64)
        async throws
    {
        for _ in 0..<5 {
            let clock = TestClock()
            let events = EventLog()
            let outer = try Timeout(.seconds(5), name: "outer", observer: events, clock: clock)
            let policy = try RetryPolicy(
                maximumAttempts: 5, backoff: .constant(.seconds(2)), jitter: .none, deadline: .seconds(policyDeadline),
                clock: clock)
            let call = Task { @PolicyThread () async throws -> Int in
                try await outer.execute { @PolicyThread () async throws -> Int in
                    try await policy.execute { @PolicyThread () throws -> Int in throw OwnError() }
                }
            }
            await clock.waitForSleepers(count: 2)  // the outer watcher, and the policy's wait until 2 s
            let blocker = PolicyThread.block()
            await blocker.started.wait()  // the thread is taken: the policy's task waits behind it
            await passTheDeadline(of: outer.watcher, clock, at: .seconds(5), movingBy: .seconds(10))
            blocker.release.signal()
            let result = await call.result
            switch result {
            case .failure(is OwnError) where policyDeadline < 5:
                #expect(events.kinds.values.isEmpty)  // no time-out reported
            case .failure(let error as TimeoutError) where policyDeadline > 5:
                #expect(error.timeoutName == "outer")
                #expect(error.operationError is OwnError)
                #expect(events.kinds.values == [.timedOut])
            default:
                Issue.record("the policy's deadline of \(policyDeadline) s, got \(result)")
            }
        }
    }

    /// How the code between the outer limit and the policy wraps the policy's failure.
    enum Wrapping: CaseIterable, Sendable {
        case inAnAppEnum, underNSUnderlyingErrorKey, bridged

        func wrap(_ error: any Error) -> any Error {
            switch self {
            case .inAnAppEnum: AppFailure.upstream(error)
            case .underNSUnderlyingErrorKey: NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
            case .bridged: error as NSError
            }
        }

        func holdsTheFailure(_ error: any Error) -> Bool {
            switch (self, error) {
            case (.inAnAppEnum, AppFailure.upstream(let inner)): inner is OwnError
            case (.underNSUnderlyingErrorKey, let error as NSError): error.domain == "App"
            case (.bridged, let error as NSError): error.domain.hasSuffix("OwnError")
            default: false
            }
        }
    }

    enum AppFailure: Error { case upstream(any Error) }

    /// The same race, the code between the limit and the policy wrapping the policy's failure:
    /// in the app's enum the failure keeps its identity; bridged to `NSError`, or kept in a
    /// `userInfo` and read back, it is boxed anew, and the limit knows it by its bridged domain
    /// and code. The policy's deadline came first: its failure, as wrapped, ends the call.
    @Test(arguments: Wrapping.allCases)
    func aPolicysEarlierDeadlineDecidesWhateverWrapsItsFailure(wrapping: Wrapping) async throws {
        for _ in 0..<5 {
            let clock = TestClock()
            let events = EventLog()
            let outer = try Timeout(.seconds(5), name: "outer", observer: events, clock: clock)
            let policy = try RetryPolicy(
                maximumAttempts: 5, backoff: .constant(.seconds(2)), jitter: .none, deadline: .seconds(3), clock: clock)
            let call = Task { @PolicyThread () async throws -> Int in
                try await outer.execute { @PolicyThread () async throws -> Int in
                    do {
                        return try await policy.execute { @PolicyThread () throws -> Int in throw OwnError() }
                    } catch {
                        throw wrapping.wrap(error)
                    }
                }
            }
            await clock.waitForSleepers(count: 2)  // the outer watcher, and the policy's wait until 2 s
            let blocker = PolicyThread.block()
            await blocker.started.wait()
            await passTheDeadline(of: outer.watcher, clock, at: .seconds(5), movingBy: .seconds(10))
            blocker.release.signal()
            let result = await call.result
            guard case .failure(let error) = result, !(error is TimeoutError) else {
                Issue.record("\(wrapping): the policy's deadline came first, got \(result)")
                continue
            }
            #expect(wrapping.holdsTheFailure(error), "\(wrapping): \(error)")
            #expect(events.kinds.values.isEmpty)  // no time-out reported
        }
    }

    /// The same race, the policy failing with an `NSError` instance (an SDK's), which stays the same
    /// object bridged: the policy's deadline came first, and its failure, bridged, ends the call.
    /// But another `NSError` of the same domain and code that the code in between throws in its
    /// place is not the policy's stop: it is a failure after the outer limit fired, which reports
    /// its time-out and keeps it as its late error.
    @Test(arguments: [false, true])
    func anotherFailureOfThePolicysDomainAndCodeIsNotThePolicysStop(replaced: Bool) async throws {
        for _ in 0..<5 {
            let clock = TestClock()
            let events = EventLog()
            let outer = try Timeout(.seconds(5), name: "outer", observer: events, clock: clock)
            let policy = try RetryPolicy(
                maximumAttempts: 5, backoff: .constant(.seconds(2)), jitter: .none,
                classifier: ClosureRetryClassifier { _, _ in .retry }, deadline: .seconds(3), clock: clock)
            let call = Task { @PolicyThread () async throws -> Int in
                try await outer.execute { @PolicyThread () async throws -> Int in
                    do {
                        return try await policy.execute { @PolicyThread () throws -> Int in
                            throw NSError(domain: "Upstream", code: 7)
                        }
                    } catch {
                        throw replaced ? NSError(domain: "Upstream", code: 7) : error as NSError
                    }
                }
            }
            await clock.waitForSleepers(count: 2)  // the outer watcher, and the policy's wait until 2 s
            let blocker = PolicyThread.block()
            await blocker.started.wait()
            await passTheDeadline(of: outer.watcher, clock, at: .seconds(5), movingBy: .seconds(10))
            blocker.release.signal()
            let result = await call.result
            switch result {
            case .failure(let error as TimeoutError) where replaced:
                #expect((error.operationError as? NSError)?.domain == "Upstream")
                #expect(events.kinds.values == [.timedOut])
            case .failure(let error as NSError) where !replaced && error.domain == "Upstream":
                #expect(events.kinds.values.isEmpty)  // no time-out reported
            default:
                Issue.record("replaced: \(replaced), got \(result)")
            }
        }
    }
}

/// A global actor on a thread of its own, which a test can hold (``block()``) so that a task
/// isolated to it that is woken waits until the test lets it run.
@globalActor
private actor PolicyThread {
    static let shared = PolicyThread()
    private static let executor = DedicatedThreadExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }

    /// A job that takes the thread until `release` is signalled; `started` opens once it has it.
    struct Blocker: Sendable {
        let started: Gate
        let release: DispatchSemaphore
    }

    /// Takes the thread with a job that waits for the blocker's release.
    static func block() -> Blocker {
        let blocker = Blocker(started: Gate(), release: DispatchSemaphore(value: 0))
        Task { @PolicyThread in
            blocker.started.open()
            blocker.release.wait()
        }
        return blocker
    }
}

/// Moves the clock by `move` past `deadline` (1 s unless told) and returns once `watcher` has handled it.
///
/// A marker due just after that deadline tells when: the watcher handles due deadlines
/// in order, so once the marker has run, the deadline before it has been handled.
private func passTheDeadline(
    of watcher: DeadlineWatcher, _ clock: TestClock, at deadline: Duration = .seconds(1),
    movingBy move: Duration = .seconds(2)
) async {
    let handled = Gate()
    _ = watcher.register(deadline + .nanoseconds(1), OpenGate(gate: handled))
    clock.advance(by: move)
    await handled.wait()
}

/// A deadline expiry that opens a gate.
private struct OpenGate: DeadlineExpiry {
    let gate: Gate

    func deadlineReached() {
        self.gate.open()
    }
}

/// One call made on ``Held``, with an operation that the test holds before it ends, and
/// the steps that drive it job by job.
///
/// Each step runs held jobs until something the test can see has happened, never a
/// counted number of jobs: how many hops the runtime makes is not the test's business.
private final class HeldRun: Sendable {
    /// The held operation, parked on ``Held`` until the test lets it end.
    private let parked = Lock<CheckedContinuation<Void, Never>?>(nil)
    /// How many times the operation ran.
    let operations = Counter()
    private let seen = Recorder<TimeLimitSignal?>()
    private let returned = Counter()

    /// The signal the operation ran under: the time limit's, or the hedged attempt's.
    var signal: TimeLimitSignal? { self.seen.values.first ?? nil }

    /// Calls `timeout` from ``Held`` with an operation that runs on ``Held`` too.
    @Held func call<Value: Sendable>(_ timeout: Timeout, _ body: @escaping @Sendable () throws -> Value)
        async throws -> Value
    {
        defer { _ = self.returned.increment() }
        return try await timeout.execute {
            Held.shared.assertIsolated()
            self.seen.record(CallScope.current.timeLimits)
            _ = self.operations.increment()
            await self.hold()
            return try body()
        }
    }

    /// Calls `hedging` from ``Held`` with attempts that run on ``Held`` too.
    @Held func hedge<Value: Sendable>(_ hedging: Hedging, _ body: @escaping @Sendable () throws -> Value)
        async throws -> Value
    {
        defer { _ = self.returned.increment() }
        return try await hedging.execute { @Held in
            self.seen.record(CallScope.current.supersessions)
            _ = self.operations.increment()
            await self.hold()
            return try body()
        }
    }

    /// Parks the operation, on ``Held``, until ``releaseTheOperation(untilCompleted:)``.
    @Held private func hold() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.parked.withLock { $0 = continuation }
        }
    }

    /// Runs the caller until the operation is held and the caller has registered its deadline
    /// of 1 s, and waits until the watcher sleeps until that deadline.
    func startAndHoldTheOperation(_ watcher: DeadlineWatcher, _ clock: TestClock) async {
        await Held.executor.run { self.parked.withLock { $0 != nil } && watcher.registrations == 1 }
        await clock.waitForSleepers(count: 1)
    }

    /// Lets the operation end and runs it until its task has marked its end (`untilCompleted`)
    /// or has run once more; the caller, woken by the operation's end, is held.
    func releaseTheOperation(untilCompleted: Bool) async {
        self.parked.withLock { parked in
            defer { parked = nil }
            return parked
        }?.resume()
        if untilCompleted {
            await Held.executor.run { self.signal?.isCompleted == true }
        } else {
            await Held.executor.runOne()
        }
    }

    /// Runs held jobs until the caller has returned from the strategy.
    func runUntilTheCallerReturns() async {
        await Held.executor.run { self.returned.value > 0 }
    }

    /// The race: the operation runs to its end, the deadline passes and is handled while the
    /// caller is held, and only then does the caller go on. Returns the operation's signal.
    func finishThenPassTheDeadline(of watcher: DeadlineWatcher, _ clock: TestClock) async throws -> TimeLimitSignal {
        await self.startAndHoldTheOperation(watcher, clock)
        await self.releaseTheOperation(untilCompleted: true)
        await passTheDeadline(of: watcher, clock)
        await self.runUntilTheCallerReturns()
        return try #require(self.signal)
    }
}

/// A global actor whose jobs run only when a test runs them.
@globalActor
private actor Held {
    static let shared = Held()
    static let executor = ManualExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        Self.executor.asUnownedSerialExecutor()
    }
}
