import ResilienceTesting
import Testing

@testable import Resilience

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The nested-retry ledger past its bound: more callers sharing one error value than it keeps
/// words for, and the records a burst of failures leaves behind.
@Suite("Nested retries: the ledger's bounds", .timeLimit(.minutes(5)))
struct NestedRetriesLedgerBoundTests {
    /// More callers than the ledger keeps words for one error value, each a `POST` (declared not
    /// idempotent) awaiting one shared failed request, each logging the failure (an await) before
    /// rethrowing it unchanged. Each `POST` is sent once, whatever the count.
    @Test(arguments: [40, NestedRetryLedger.Entry.capacity, NestedRetryLedger.Entry.capacity + 1, 100])
    func moreCallersThanTheBoundSharingOneErrorNeverSendAPostTwice(callers: Int) async throws {
        let clock = TestClock()
        let shared = await NestedRetriesSharedErrorTests.failedRequest(id: 1801)
        let results = await NestedRetriesSharedErrorTests.callers(callers, sharing: shared, clock: clock) { _ in
            .notIdempotent
        }
        let twice = results.filter { $0.2 != 1 }
        #expect(
            twice.count == 0, "\(twice.count) of \(callers) POSTs sent more than once (sends: \(Set(twice.map(\.2))))")
        #expect(results.allSatisfy { $0.1.stopReason == .notIdempotent })
    }

    /// More callers than the ledger keeps words for in full, each a plain policy around a plain
    /// inner policy, all awaiting one shared failed request and logging the failure (an await)
    /// before rethrowing it unchanged. Each inner policy retries it to exhaustion, and each outer
    /// policy stops on its word: three attempts a caller, not six.
    @Test(arguments: [72, 200])
    func moreCallersThanTheBoundExhaustingOneErrorEachStopOnTheirOwnWord(callers: Int) async throws {
        let clock = TestClock()
        let shared = await NestedRetriesSharedErrorTests.failedRequest(id: 1802)
        let results = await NestedRetriesSharedErrorTests.callers(callers, sharing: shared, clock: clock) { _ in nil }
        let multiplied = results.filter { $0.2 != 3 }
        #expect(
            multiplied.count == 0,
            "\(multiplied.count) of \(callers) callers made other than 3 attempts (\(Set(multiplied.map(\.2))))")
        #expect(results.allSatisfy { $0.1.stopReason == .retriedByInnerPolicy && $0.1.attempts == 1 })
    }

    /// The control: plain calls, no policy nested in them, throwing one stored error value, while
    /// more calls than the ledger keeps words for in full stop on it. A plain call whose attempt
    /// began before those words were written finds none of its own, and is no outer call whose
    /// inner word gave way: it makes all its attempts.
    @Test func plainCallsThrowingAStoredErrorPastTheBoundMakeAllTheirAttempts() async throws {
        let clock = TestClock()
        let stored: any Error = TransientError(id: 1803)
        let (writers, plain) = (NestedRetryLedger.Entry.capacity + 36, 8)
        let writer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let policy = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let (started, written) = (Countdown(), Countdown())
        let results = await withTaskGroup(of: (Int, RetryOutcome<Void>)?.self) { group -> [(Int, RetryOutcome<Void>)] in
            for _ in 0..<plain {
                group.addTask {
                    let runs = Counter()
                    let outcome = await policy.outcome {
                        if runs.increment() == 1 {
                            // The first attempt began; it fails once every writer stopped.
                            started.increment()
                            await written.wait(untilReaching: writers)
                        }
                        throw stored
                    }
                    return (runs.value, outcome)
                }
            }
            for _ in 0..<writers {
                group.addTask {
                    await started.wait(untilReaching: plain)
                    // Each in a task of its own, alive until all are done: a word of its own each.
                    let outcome = await writer.outcome { throw stored }
                    #expect(outcome.stopReason == .exhausted)
                    written.increment()
                    await written.wait(untilReaching: writers)
                    return nil
                }
            }
            return await group.reduce(into: [(Int, RetryOutcome<Void>)]()) { if let result = $1 { $0.append(result) } }
        }
        #expect(NestedRetryLedger.spilledCount(for: stored) > 0, "no word was kept in brief")
        #expect(results.count == plain)
        for (runs, outcome) in results {
            #expect(runs == 3)
            #expect(outcome.stopReason == .exhausted)
        }
    }

    /// Past the words kept in brief for one error value, the oldest give way: memory stays bounded
    /// while the error lives, and the newest words are still taken.
    @Test func theWordsKeptInBriefForOneErrorAreBounded() {
        let failure: any Error = TransientError(id: 1804)
        let mark = NestedRetryLedger.mark
        let total = NestedRetryLedger.Entry.capacity + NestedRetryLedger.SpilledWords.capacity + 10
        let calls = (0..<total).map { _ in NestedRetryLedger.newCall() }
        for call in calls {
            NestedRetryLedger.record(.exhausted, for: failure, to: .init(call: call, tasks: [1]))
        }
        #expect(NestedRetryLedger.recordCount(for: failure) == NestedRetryLedger.Entry.capacity)
        #expect(NestedRetryLedger.spilledCount(for: failure) == NestedRetryLedger.SpilledWords.capacity)
        func take(_ index: Int) -> NestedRetryLedger.Word? {
            NestedRetryLedger.take(failure, by: .init(call: calls[index], task: 1, ownsCall: true), writtenAfter: mark)
        }
        // The first ten words spilled gave way to the last ten.
        #expect(take(0) == nil)
        #expect(take(9) == nil)
        #expect(take(10) == .exhausted)
        #expect(take(total - NestedRetryLedger.Entry.capacity - 1) == .exhausted)
        #expect(take(total - 1) == .exhausted)
        #expect(take(total - 1) == nil)
    }
}

private struct LedgerBurstDown: Error {}

/// An app's error of its own class, whose `deinit` tells whether it ran under the ledger's lock.
private final class WatchedError: Error, Sendable {
    let atDeinit: @Sendable (_ underTheLedgersLock: Bool) -> Void

    init(atDeinit: @escaping @Sendable (_ underTheLedgersLock: Bool) -> Void) {
        self.atDeinit = atDeinit
    }

    deinit {
        // Held by this thread, the lock stays held however long it waits; held by another thread
        // (a suite running meanwhile), it is released soon.
        var held = NestedRetryLedger.isLockHeld
        for _ in 0..<10_000 where held {
            sched_yield()
            held = NestedRetryLedger.isLockHeld
        }
        self.atDeinit(held)
    }
}

/// The ledger's table after a burst of failures: serialized, it counts the boxes kept.
@Suite("Nested retries: the ledger after a burst", .serialized, .timeLimit(.minutes(5)))
struct NestedRetriesLedgerSweepTests {
    /// A burst of failures whose errors the app held at once (a batch), then released; the
    /// failures after it are allocated where the burst's dead boxes were, so their records replace
    /// dead ones rather than add. The dead records are still swept as failures go on.
    @Test func deadRecordsOfABurstAreSweptAsFailuresGoOn() async throws {
        let clock = TestClock()
        let inner = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        // Small enough that the table stays within bounds other suites running meanwhile count on.
        let burst = 400
        do {
            var held: [any Error] = []
            for _ in 0..<burst {
                let outcome = await outer.outcome { try await inner.execute { throw LedgerBurstDown() } }
                #expect(outcome.stopReason == .retriedByInnerPolicy)
                if let error = outcome.error { held.append(error) }
            }
            #expect(held.count == burst)
        }
        // Every error of the burst is gone; ordinary failures follow, each error gone before the next.
        for _ in 0..<4_000 {
            _ = await outer.outcome { try await inner.execute { throw LedgerBurstDown() } }
        }
        // Dead records are swept once they and the live ones reach twice the live ones (64 at
        // least): the burst's 400 may not all stay. The live ones are other suites' running now.
        let (kept, live) = NestedRetryLedger.counts
        #expect(
            kept - live <= Swift.max(64, 2 * live),
            "\(kept - live) error boxes still have records in the ledger, though none of their errors live (\(live) live)"
        )
    }

    /// The app lets go of an error on another thread just as a sweep finds its record alive,
    /// holding it for that moment: the error's `deinit`, the app's code, runs once the ledger's
    /// lock is released, never under it.
    @Test func anErrorLetGoAsASweepHoldsItIsReleasedOutsideTheLock() async throws {
        let holder = Lock<(any Error)?>(nil)
        let underTheLock = Lock<Bool?>(nil)
        let watched = Self.recordWatchedError(heldBy: holder) { held in underTheLock.withLock { $0 = held } }
        NestedRetryLedger.probeSweeps { box in
            guard ObjectIdentifier(box) == watched else { return }
            // The app's last reference goes now: the sweep's is the only one left.
            let error = holder.withLock { held in held.take() }
            withExtendedLifetime(error) {}
        }
        defer { NestedRetryLedger.probeSweeps(with: nil) }
        // Sweeps the ledger: the probe asks for it.
        NestedRetryLedger.record(
            .exhausted, for: TransientError(id: 2001), to: .init(call: NestedRetryLedger.newCall(), tasks: [1]))
        try await yieldUntil("the error's deinit ran") { underTheLock.withLock { $0 } != nil }
        #expect(underTheLock.withLock { $0 } == false, "the error's deinit ran under the ledger's lock")
    }

    /// Records an exhausted word about a new ``WatchedError`` that only `holder` keeps; returns its box.
    private static func recordWatchedError(
        heldBy holder: Lock<(any Error)?>, atDeinit: @escaping @Sendable (Bool) -> Void
    ) -> ObjectIdentifier {
        let error: any Error = WatchedError(atDeinit: atDeinit)
        NestedRetryLedger.record(.exhausted, for: error, to: .init(call: NestedRetryLedger.newCall(), tasks: [1]))
        holder.withLock { $0 = error }
        return ObjectIdentifier(NestedRetryLedger.box(of: error))
    }
}

/// What a call that hears of nested successes leaves behind once it ended.
@Suite("Nested retries: successes noted after their call ended", .serialized, .timeLimit(.minutes(5)))
struct NestedRetriesLateSuccessTests {
    /// A declared call that starts an unstructured task (fire and forget: an analytics `POST`)
    /// and returns; the task's own declared call succeeds after the outer call ended. Nothing is
    /// kept for the ended call.
    @Test func aFireAndForgetPostInsideADeclaredCallLeavesNothingBehind() async throws {
        let clock = TestClock()
        let (outer, inner) = (
            try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock),
            try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        )
        let before = NestedRetryLedger.successEntries
        let calls = 50
        for _ in 0..<calls {
            let gate = Countdown()
            let background = try await outer.execute(idempotency: .notIdempotent) {
                Task {
                    await gate.wait(untilReaching: 1)
                    return try await inner.execute(idempotency: .notIdempotent) { 1 }
                }
            }
            gate.increment()
            _ = try await background.value
        }
        // The table is the process's: calls of suites running meanwhile may hold a few entries
        // while they run (one was seen in a whole run). A leak leaves one per call.
        let after = NestedRetryLedger.successEntries
        #expect(after - before < calls / 5, "\(after - before) entries left behind by \(calls) ended calls")
    }

    /// A call with a deadline (it hands a scope down) whose operation starts a task that sends a
    /// `POST` after the call ended: the success is not kept under the ended call's number.
    @Test func aSuccessNotedAfterItsCallEndedIsNotKeptForEver() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 1, deadline: .seconds(60), clock: clock)
        let post = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let before = NestedRetryLedger.successEntries
        let rounds = 50
        for _ in 0..<rounds {
            let gate = Countdown()
            let sent = Countdown()
            _ = try await outer.execute {
                Task {
                    await gate.wait(untilReaching: 1)
                    _ = try await post.execute(idempotency: .notIdempotent) {}
                    sent.increment()
                }
            }
            gate.increment()
            await sent.wait(untilReaching: 1)
        }
        // The table is the process's: calls of suites running meanwhile may hold a few entries
        // while they run (one was seen in a whole run). A leak leaves one per call.
        let after = NestedRetryLedger.successEntries
        #expect(after - before < rounds / 5, "\(after - before) entries left after \(rounds) calls that all ended")
    }
}
