import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A `RetryPolicy` nested in a time limit, when a clock carries the time past the limit's
/// deadline before the limit's timer has woken (a jump, a timer that wakes late): the policy
/// starts no new attempt and sleeps no backoff once that deadline has passed, and the limit
/// reports its own time-out, as when its timer woke first.
///
/// The limit's clock wakes its sleepers an hour late (`LateWakingClock`), so its timer is
/// still asleep when the first attempt fails after the jump: the race is decided the same way
/// every run, and a policy that retried at once would do so before the limit could stop it.
@Suite("Time limits stop the policies nested in them at their deadline", .timeLimit(.minutes(5)))
struct TimeoutNestedRetryDeadlineTests {
    /// Where the limit sits, and the policy under it.
    enum Nesting: CaseIterable, CustomStringConvertible {
        /// `Timeout.execute` around the policy.
        case timeout
        /// A pipeline's total timeout around its own `RetryPolicy` stage.
        case pipelineTotal
        /// A pipeline's per-attempt timeout around a policy in the operation.
        case pipelineAttempt
        /// A policy's `attemptTimeout` around a policy in the operation.
        case attemptLimit
        /// `Timeout.execute` around a policy around the policy.
        case policyInAPolicy
        /// `Timeout.execute` around a later `Timeout` around the policy.
        case policyInALaterTimeout

        var description: String {
            switch self {
            case .timeout: "Timeout.execute"
            case .pipelineTotal: "a pipeline's total timeout"
            case .pipelineAttempt: "a pipeline's attempt timeout"
            case .attemptLimit: "an attemptTimeout"
            case .policyInAPolicy: "Timeout.execute, two policies in"
            case .policyInALaterTimeout: "Timeout.execute, a later Timeout in"
            }
        }
    }

    /// The limit, two seconds on `late`, around an operation that runs a policy on `clock`
    /// with `backoff`, whose operation is `operation`.
    static func call(
        _ nesting: Nesting, backoff: Duration, late: LateWakingClock, clock: TestClock, events: EventLog,
        operation: @escaping @Sendable () async throws -> Void
    ) throws -> Task<Void, any Error> {
        let limit = Duration.seconds(2)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(backoff), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let outerPolicy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(backoff), jitter: .none, clock: clock,
            generator: SeededRandomNumberGenerator(seed: 2))
        let timeout = try Timeout(limit, name: "limit", observer: events, clock: late)
        let laterTimeout = try Timeout(.seconds(100), name: "later", clock: clock)
        let policied: @Sendable () async throws -> Void = { try await policy.execute { try await operation() } }
        switch nesting {
        case .timeout:
            return Task { try await timeout.execute { try await policied() } }
        case .pipelineTotal:
            let pipeline = ResiliencePipeline {
                timeout
                policy
            }
            return Task { try await pipeline.execute { try await operation() } }
        case .pipelineAttempt:
            let once = try RetryPolicy(maximumAttempts: 1, clock: clock)
            let pipeline = ResiliencePipeline {
                laterTimeout
                once
                timeout
            }
            return Task { try await pipeline.execute { try await policied() } }
        case .attemptLimit:
            let once = try RetryPolicy(maximumAttempts: 1, clock: late)
            return Task { try await once.execute(attemptTimeout: limit) { try await policied() } }
        case .policyInAPolicy:
            return Task { try await timeout.execute { try await outerPolicy.execute { try await policied() } } }
        case .policyInALaterTimeout:
            return Task { try await timeout.execute { try await laterTimeout.execute { try await policied() } } }
        }
    }

    /// Awaits `call`, and tells whether it asked `clock` for a sleep past its first `requests`
    /// ones before it ended; each such sleep, a backoff, is let run to its end, so that the call
    /// ends either way.
    static func result(
        of call: Task<Void, any Error>, sleepingAfter requests: Int, on clock: TestClock
    ) async -> (result: Result<Void, any Error>, slept: Bool) {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var seen = requests
                while true {
                    await clock.waitForSleepRequests(count: seen + 1)
                    // Returns early, cancelled, when the call ended without another sleep.
                    if Task.isCancelled { return seen > requests }
                    seen += 1
                    clock.advance(by: clock.sleepRequests.last ?? .zero)
                }
            }
            let result = await call.result
            group.cancelAll()
            let slept = await group.next() ?? false
            return (result, slept)
        }
    }

    /// The first attempt fails once the clock has jumped past the limit's deadline, its timer
    /// still asleep: the policy sends nothing more, with a backoff of zero or not, sleeps no
    /// backoff, and the limit ends the call with its time-out, keeping the attempt's failure.
    @Test(arguments: Nesting.allCases, [Duration.zero, .seconds(1)])
    func aPolicyInALimitWhoseDeadlinePassedDoesNotTryAgain(nesting: Nesting, backoff: Duration) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let events = EventLog()
        let sends = Counter()
        let call = try Self.call(nesting, backoff: backoff, late: late, clock: clock, events: events) {
            // The first attempt fails after the jump; any other at once.
            if sends.increment() == 1 { try await clock.sleep(for: .seconds(5)) }
            throw TransientError()
        }
        // The limit's timer and the first attempt (and the later timeout's timer, if any).
        await clock.waitForSleepers(count: nesting == .policyInALaterTimeout || nesting == .pipelineAttempt ? 3 : 2)
        let requests = clock.sleepRequests.count
        clock.advance(by: .seconds(10))  // past the deadline; the limit's timer sleeps on
        let (result, slept) = await Self.result(of: call, sleepingAfter: requests, on: clock)
        let context = "\(nesting), backoff \(backoff): \(result)"
        #expect(sends.value == 1, "\(context)")
        #expect(!slept, "a backoff slept after the deadline: \(context)")
        switch result {
        case .failure(let error as TimeoutError) where nesting != .attemptLimit:
            #expect(error.timeoutName == "limit", "\(context)")
            #expect(error.operationError is TransientError, "\(context)")
            #expect(events.kinds.values == [.timedOut], "\(context)")
        case .failure(let error as AttemptTimeoutError) where nesting == .attemptLimit:
            #expect(error.timeout == .seconds(2), "\(context)")
            #expect(error.operationError is TransientError, "\(context)")
        default:
            Issue.record("not the limit's time-out: \(context)")
        }
    }

    /// The same when the clock jumps during a backoff: the wait wakes on time, the limit's timer
    /// does not, and the policy sends nothing more.
    @Test(arguments: [Nesting.timeout, .attemptLimit, .policyInAPolicy])
    func aPolicyWhoseBackoffWokePastTheLimitsDeadlineDoesNotTryAgain(nesting: Nesting) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let events = EventLog()
        let sends = Counter()
        let call = try Self.call(nesting, backoff: .seconds(1), late: late, clock: clock, events: events) {
            sends.increment()
            throw TransientError()
        }
        await clock.waitForSleepers(count: 2)  // the limit's timer and the policy's backoff
        clock.advance(by: .seconds(10))  // past the backoff's end and the deadline
        let (result, _) = await Self.result(of: call, sleepingAfter: clock.sleepRequests.count, on: clock)
        let context = "\(nesting): \(result)"
        #expect(sends.value == 1, "\(context)")
        switch result {
        case .failure(let error as TimeoutError) where nesting != .attemptLimit:
            #expect(error.timeoutName == "limit", "\(context)")
            #expect(error.operationError is TransientError, "\(context)")
        case .failure(let error as AttemptTimeoutError) where nesting == .attemptLimit:
            #expect(error.operationError is TransientError, "\(context)")
        default:
            Issue.record("not the limit's time-out: \(context)")
        }
    }

    /// The earliest deadline still decides: a policy in between whose own deadline came before
    /// the limit's stops the call at it, and its failure goes on, not the limit's time-out. (On
    /// the limit's clock: deadlines on different clocks cannot be ordered.)
    @Test func aPolicyDeadlineThatCameBeforeTheLimitsStillDecides() async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let events = EventLog()
        let timeout = try Timeout(.seconds(5), name: "limit", observer: events, clock: late)
        let middle = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, deadline: .seconds(2), clock: late)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let sends = Counter()
        let call = Task {
            try await timeout.execute {
                try await middle.execute {
                    try await inner.execute { () async throws -> Void in
                        if sends.increment() == 1 { try await clock.sleep(for: .seconds(8)) }
                        throw TransientError()
                    }
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        let result = await call.result
        #expect(sends.value == 1, "\(result)")
        #expect(result.failureValue is TransientError, "\(result)")
        #expect(events.kinds.values.isEmpty)
    }

    /// Before the deadline, nothing changes: a policy in a limit retries at once after a backoff
    /// of zero, and the call succeeds.
    @Test(arguments: Nesting.allCases)
    func aPolicyInALimitRetriesBeforeItsDeadline(nesting: Nesting) async throws {
        let clock = TestClock()
        let late = LateWakingClock(clock: clock)
        let sends = Counter()
        let call = try Self.call(nesting, backoff: .zero, late: late, clock: clock, events: EventLog()) {
            if sends.increment() < 3 { throw TransientError() }
        }
        let result = await call.result
        #expect((try? result.get()) != nil, "\(nesting): \(result)")
        #expect(sends.value == 3, "\(nesting)")
    }
}
