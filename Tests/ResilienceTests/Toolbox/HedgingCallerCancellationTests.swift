import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// The caller's cancellation reaches every attempt of a hedged call at once, the hedges and
/// the replacements of failed attempts as well as the first, each of which runs in a task of
/// its own: what is nested in an attempt and fails after the caller gave up reads that
/// failure as the caller's cancellation, not as a failure to count or retry.
///
/// In each test the operation itself cancels the caller's task and then fails, so nothing
/// runs between the cancellation and the failure: a nested layer that does not see the
/// cancellation by then retries or counts the failure.
@Suite("Hedging: the caller's cancellation reaches every attempt at once", .timeLimit(.minutes(5)))
struct HedgingCallerCancellationTests {
    /// A breaker that would count every failure and never opens.
    static func breaker(_ clock: TestClock) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "inner", tripRule: .failureRate(threshold: 1.0, minimumCalls: 10_000, window: .count(10_000)),
            pushback: .disabled, clock: clock)
    }

    /// A policy that retries every failure at once, up to three attempts.
    static func policy(_ clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock)
    }

    @Test func aPolicyInAReplacementDoesNotRetryAFailureThatCameAfterTheCallerCancelled() async throws {
        let clock = TestClock()
        let policy = try Self.policy(clock)
        let hedging = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await hedging.execute {
                try await policy.execute { () throws -> Int in
                    let run = runs.increment()
                    if run == 1 { throw PermanentError() }  // not retried: the replacement starts at once
                    caller.cancel()
                    throw TransientError()
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 2)
    }

    @Test func aBreakerInAReplacementDoesNotCountAFailureThatCameAfterTheCallerCancelled() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock)
        let hedging = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 2, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await hedging.execute {
                try await breaker.execute { () throws -> Int in
                    if runs.increment() == 2 { caller.cancel() }
                    throw TransientError()
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 2)
        // The first attempt's failure counts; the replacement's came after the caller gave up.
        #expect(breaker.snapshot().recentCalls == 1)
    }

    @Test func aPolicyInAHedgeDoesNotRetryAFailureThatCameAfterTheCallerCancelled() async throws {
        let clock = TestClock()
        let policy = try Self.policy(clock)
        // Due at once: the hedge starts as soon as the first attempt suspends.
        let hedging = try Hedging(delay: .fixed(.zero), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await hedging.execute {
                try await policy.execute { () throws -> Int in
                    if runs.increment() == 1 {
                        try await clock.sleep(for: .seconds(3_600))  // until the caller's cancellation
                        return 1
                    }
                    caller.cancel()
                    throw TransientError()
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 2)
    }

    @Test func aBreakerInAHedgeDoesNotCountAFailureThatCameAfterTheCallerCancelled() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock)
        let hedging = try Hedging(delay: .fixed(.zero), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await hedging.execute {
                try await breaker.execute { () throws -> Int in
                    if runs.increment() == 1 {
                        try await clock.sleep(for: .seconds(3_600))
                        return 1
                    }
                    caller.cancel()
                    throw TransientError()
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 2)
        // Neither attempt counts: the first was cancelled by the caller, the hedge failed after it.
        #expect(breaker.snapshot().recentCalls == 0)
    }

    @Test func aPolicyInTheFirstAttemptAfterItSuspendedDoesNotRetryOnceTheCallerCancelled() async throws {
        let clock = TestClock()
        let policy = try Self.policy(clock)
        let hedging = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let call = Task {
            await caller.run {
                try await hedging.execute {
                    try await policy.execute { () throws -> Int in
                        runs.increment()
                        // Past its first suspension: the call waits for it, and the start is settled.
                        try await clock.sleep(for: .seconds(1))
                        caller.cancel()
                        throw TransientError()
                    }
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the first attempt and the hedge timer
        clock.advance(by: .seconds(1))
        let result = await call.value
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 1)
    }

    @Test func anInnerHedgingInAReplacementStartsNoReplacementOnceTheCallerCancelled() async throws {
        let clock = TestClock()
        let outer = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let inner = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await outer.execute {
                try await inner.execute { () throws -> Int in
                    // Runs 1 and 2: the inner call's first attempt and its replacement, in the outer
                    // call's first attempt. Run 3: the inner call's first attempt in the outer
                    // call's replacement, which the inner call would replace in turn.
                    if runs.increment() == 3 { caller.cancel() }
                    throw TransientError()
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 3)
    }

    @Test func anInnerHedgingInAHedgeStartsNoReplacementOnceTheCallerCancelled() async throws {
        let clock = TestClock()
        let outer = try Hedging(delay: .fixed(.zero), maximumHedges: 1, clock: clock)
        let inner = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await outer.execute {
                try await inner.execute { () throws -> Int in
                    if runs.increment() == 1 {
                        try await clock.sleep(for: .seconds(3_600))
                        return 1
                    }
                    // Run 2: the inner call's first attempt in the outer call's hedge.
                    caller.cancel()
                    throw TransientError()
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 2)
    }

    /// A first attempt that fails before it first suspends hands its failure straight to the
    /// call, which takes it before the event its caller's cancellation handler posted. When the
    /// caller cancelled by then (here the operation cancels it, then fails at once), the call
    /// starts no replacement and ends with `CancellationError`, as when it takes the event first.
    @Test func aFailureTakenBeforeTheCancellationsEventStartsNoReplacement() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await hedging.execute { () throws -> Int in
                let run = runs.increment()
                guard run == 1 else { return run }  // a replacement, started after the caller gave up
                caller.cancel()
                throw TransientError()  // replaced at once, had the caller not cancelled
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 1)
        #expect(clock.sleeperCount == 0)
    }

    @Test func standardHTTPInAHedgeNeitherRetriesNorCountsAFailureThatCameAfterTheCallerCancelled() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.zero), maximumHedges: 1, clock: clock)
        let pipeline = try ResiliencePipeline<StandardHTTPStrategies>.standardHTTP(
            totalTimeout: .seconds(25), maximumAttempts: 3, attemptTimeout: .seconds(10), clock: clock)
        let caller = CancellableCaller()
        let runs = Counter()
        let result = await caller.run {
            try await hedging.execute {
                try await pipeline.execute { () throws -> Int in
                    if runs.increment() == 1 {
                        try await clock.sleep(for: .seconds(3_600))
                        return 1
                    }
                    caller.cancel()
                    throw URLError(.networkConnectionLost)  // retried and counted, had the caller not cancelled
                }
            }
        }
        #expect(result.failureValue is CancellationError)
        #expect(runs.value == 2)
        let breaker = pipeline.strategies.inner.inner.inner.outer
        #expect(breaker.snapshot().recentCalls == 0)
        // No retry waits out a backoff: nothing sleeps on the clock any more, and it never moved.
        #expect(clock.sleeperCount == 0)
        #expect(clock.now.offset == .zero)
    }
}

/// The task of a call that its own operation can cancel, as a caller that gives up would.
final class CancellableCaller: Sendable {
    private let task = Lock<Task<Int, any Error>?>(nil)

    /// Cancels the call's task.
    func cancel() {
        self.task.withLock { $0 }?.cancel()
    }

    /// Runs `body` in a task of its own, once ``cancel()`` can reach that task, and returns its result.
    func run(_ body: @escaping @Sendable () async throws -> Int) async -> Result<Int, any Error> {
        let gate = Gate()
        let task = Task<Int, any Error> {
            await gate.wait()
            return try await body()
        }
        self.task.withLock { $0 = task }
        gate.open()
        return await task.result
    }
}
