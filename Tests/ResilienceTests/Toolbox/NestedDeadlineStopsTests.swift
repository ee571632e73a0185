import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A time limit hears of every `RetryPolicy` nested in its attempt that stopped at its own
/// deadline (`TimeLimitSignal.noteDeadlineStop(_:)`), and reads the stop of the policy whose
/// failure its attempt ends with, known by that failure's identity: another policy stopping in the
/// same attempt (a sibling in `async let`, a policy in a task that outlived an attempt nested in
/// the limit) does not hide it.
///
/// Each policy's first attempt fails at once, and the policy waits two seconds to retry; the clock
/// then jumps past every deadline in one move. The sibling's wait, once over, holds until the policy
/// has stopped (``GatedClock``), so the sibling stops second, the order in which a limit that keeps
/// one stop loses the policy's.
@Suite("A limit reads the stop of the policy whose failure ends its attempt", .timeLimit(.minutes(5)))
struct NestedDeadlineStopsTests {
    struct OwnError: Error {}
    struct SiblingError: Error {}
    struct NoFailure: Error {}

    /// The time limit around the operation.
    enum Limit: CaseIterable, Sendable, CustomStringConvertible {
        case timeout, attemptTimeout

        var description: String {
            switch self {
            case .timeout: "Timeout.execute"
            case .attemptTimeout: "an attemptTimeout"
            }
        }
    }

    /// Where the other policy, whose failure the operation catches, runs.
    enum Sibling: CaseIterable, Sendable, CustomStringConvertible {
        /// Beside the policy, in `async let`.
        case asyncLet
        /// In a task started in an attempt nested in the limit, which outlived that attempt and
        /// which the operation awaits.
        case outlivingTask

        var description: String {
            switch self {
            case .asyncLet: "async let"
            case .outlivingTask: "a task that outlived a nested attempt"
            }
        }
    }

    /// A clock that reads `clock`, and whose sleeps, once over (run to their end or cancelled),
    /// return only once `gate` is open.
    struct GatedClock: Clock {
        let clock: TestClock
        let gate: Gate

        var now: TestClock.Instant { self.clock.now }
        var minimumResolution: Duration { .zero }

        func sleep(until deadline: TestClock.Instant, tolerance: Duration? = nil) async throws {
            do {
                try await self.clock.sleep(until: deadline, tolerance: tolerance)
            } catch {
                await self.gate.wait()
                throw error
            }
            await self.gate.wait()
        }
    }

    /// One call: the limit, due `duration` on `limitClock`, around an operation that runs two
    /// policies: the policy, on `ownClock`, with `own`'s failure and deadline, whose failure the
    /// operation ends with (as `ending` makes it of the two failures), and the sibling, on a
    /// ``GatedClock`` over `clock` that holds its wait until the policy has stopped, with
    /// `sibling`'s. With `afterTheLimitFired`, the operation throws only once the limit has fired
    /// (its timer woke with the jump, or a policy claimed the call for it).
    struct Call: Sendable {
        let limit: Limit
        let duration: Duration
        let clock: TestClock
        let limitClock: any Clock<Duration>
        let ownClock: any Clock<Duration>
        let own: (failure: any Error, deadline: Duration?)
        let sibling: (failure: any Error, deadline: Duration?)
        let siblingRuns: Sibling
        let afterTheLimitFired: Bool
        var ending: @Sendable (_ own: any Error, _ sibling: any Error) -> any Error = { own, _ in own }
        let ownStopped = Gate()

        /// The failure a call of `policy` ends with, each of its attempts failing with `failure`.
        static func failure(of policy: RetryPolicy, _ failure: any Error) async -> any Error {
            do {
                try await policy.execute { () async throws -> Void in throw failure }
                return NoFailure()
            } catch {
                return error
            }
        }

        func start(events: EventLog) throws -> Task<Void, any Error> {
            let ownPolicy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(2)), jitter: .none, deadline: self.own.deadline,
                clock: self.ownClock, generator: SeededRandomNumberGenerator(seed: 1))
            let siblingPolicy = try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.seconds(2)), jitter: .none, deadline: self.sibling.deadline,
                clock: GatedClock(clock: self.clock, gate: self.ownStopped),
                generator: SeededRandomNumberGenerator(seed: 2))
            let nested = try RetryPolicy(maximumAttempts: 1, clock: self.limitClock)
            let call = self
            let ownCall: @Sendable () async -> any Error = {
                let error = await Self.failure(of: ownPolicy, call.own.failure)
                call.ownStopped.open()
                return error
            }
            let siblingCall: @Sendable () async -> any Error = {
                await Self.failure(of: siblingPolicy, call.sibling.failure)
            }
            let operation: @Sendable () async throws -> Void = {
                let ownError: any Error
                let siblingError: any Error
                switch call.siblingRuns {
                case .asyncLet:
                    async let sibling = siblingCall()
                    ownError = await ownCall()
                    siblingError = await sibling
                case .outlivingTask:
                    let task = try await nested.execute(attemptTimeout: .seconds(100)) { Task { await siblingCall() } }
                    ownError = await ownCall()
                    // Its wait holds until the policy stopped, just above; no clock holds it after the jump.
                    siblingError = await task.value
                }
                if call.afterTheLimitFired {
                    try await yieldUntil("the limit fired") { CallScope.current.timeLimitFired }
                }
                throw call.ending(ownError, siblingError)
            }
            switch self.limit {
            case .timeout:
                let timeout = try Timeout(self.duration, name: "limit", observer: events, clock: self.limitClock)
                return Task { try await timeout.execute { try await operation() } }
            case .attemptTimeout:
                let once = try RetryPolicy(maximumAttempts: 1, clock: self.limitClock)
                let duration = self.duration
                return Task { try await once.execute(attemptTimeout: duration) { try await operation() } }
            }
        }

        /// Starts the call, jumps the clock ten seconds, past every deadline, in one move once both
        /// policies wait to retry and the limit's timer sleeps (a sleep of `timer`), and returns how
        /// the call ended.
        func run(events: EventLog, timer: Duration) async throws -> Result<Void, any Error> {
            let task = try self.start(events: events)
            // Each asked for from the start of the call: the clock has not moved. A timeout's watcher
            // looks at the clock a few times before it sleeps: it sleeps once its timer is asked for.
            while !self.clock.sleepRequests.contains(timer)
                || self.clock.sleepRequests.filter({ $0 == .seconds(2) }).count < 2
            {
                await self.clock.waitForSleepRequests(count: self.clock.sleepRequests.count + 1)
                try Task.checkCancellation()
            }
            self.clock.advance(by: .seconds(10))
            return await task.result
        }
    }

    /// The limit's deadline (3 s) came first; the policy's (5 s) and its sibling's (4 s) came
    /// later. The limit's timer wakes late, so both policies stop at their deadlines after the jump,
    /// the limit's timer still asleep, and the operation ends with the policy's failure. Had the
    /// clock stepped, the limit would have cancelled the policy's wait at 3 s: it claims the call
    /// and reports its time-out, keeping the policy's failure, though the sibling stopped last.
    @Test(arguments: Limit.allCases, Sibling.allCases)
    func aSiblingsStopDoesNotHideThePolicysStopFromALimitThatCameFirst(limit: Limit, sibling: Sibling) async throws {
        let clock = TestClock()
        let events = EventLog()
        let call = Call(
            limit: limit, duration: .seconds(3), clock: clock, limitClock: LateWakingClock(clock: clock),
            ownClock: LateWakingClock(clock: clock, lag: .zero), own: (OwnError(), .seconds(5)),
            sibling: (SiblingError(), .seconds(4)), siblingRuns: sibling, afterTheLimitFired: false)
        let result = try await call.run(events: events, timer: .seconds(3 + 3_600))
        let context = "\(limit), \(sibling): \(result)"
        switch (limit, result) {
        case (.timeout, .failure(let error as TimeoutError)):
            #expect(error.timeoutName == "limit", "\(context)")
            #expect(error.operationError is OwnError, "\(context)")
            #expect(events.kinds.values == [.timedOut], "\(context)")
        case (.attemptTimeout, .failure(let error as AttemptTimeoutError)):
            #expect(error.operationError is OwnError, "\(context)")
        default:
            Issue.record("the limit came first: \(context)")
        }
    }

    /// The policy's deadline (3 s) came before the limit's (5 s), and so did its sibling's (4 s).
    /// The limit's timer wakes with the jump and fires; the operation ends with the policy's
    /// failure. Had the clock stepped, the policy would have stopped at 3 s with that failure: the
    /// limit passes it on, with no time-out of its own, though the sibling stopped last.
    @Test(arguments: Limit.allCases, Sibling.allCases)
    func aSiblingsStopDoesNotHideThePolicysEarlierStopFromALimitThatFired(limit: Limit, sibling: Sibling) async throws {
        let clock = TestClock()
        let events = EventLog()
        let call = Call(
            limit: limit, duration: .seconds(5), clock: clock, limitClock: clock, ownClock: clock,
            own: (OwnError(), .seconds(3)), sibling: (SiblingError(), .seconds(4)), siblingRuns: sibling,
            afterTheLimitFired: true)
        let result = try await call.run(events: events, timer: .seconds(5))
        let context = "\(limit), \(sibling): \(result)"
        #expect(result.failureValue is OwnError, "the policy's deadline came first: \(context)")
        #expect(events.kinds.values.isEmpty, "\(context)")
    }
}
