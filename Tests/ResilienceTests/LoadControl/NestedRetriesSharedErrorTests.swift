import ResilienceTesting
import Testing

@testable import Resilience

/// Unrelated callers that await one shared failed request (request coalescing) hold the very
/// same error value. Each caller here nests a policy in an outer one; the code between the layers
/// rethrows the error unchanged after an await (a log write, say), during which the other
/// caller's inner policy stops on that same value. Each caller's outer policy must still read the
/// word its own inner policy left, whichever wrote last and whichever reads first.
@Suite("Nested retries: callers sharing one error value", .timeLimit(.minutes(5)))
struct NestedRetriesSharedErrorTests {
    /// The order of the story's steps, waited for explicitly: no sleeping, no timing.
    private final class Steps: Sendable {
        /// Both inner policies stopped and their callers caught the error.
        let caught = Countdown()
        /// A caller's outer policy finished.
        let finished = Countdown()
    }

    /// Whose outer policy reads the ledger first once both inner policies stopped.
    enum FirstReader: String, CaseIterable, CustomTestStringConvertible {
        case firstWriter, lastWriter
        var testDescription: String { self.rawValue }
    }

    static func policy(_ clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    static func failedRequest(id: Int) async -> Task<Int, any Error> {
        let shared = Task<Int, any Error> { throw TransientError(id: id) }
        _ = await shared.result  // the shared request has failed: every caller gets its one error value
        return shared
    }

    /// `count` callers, each `outer` around `inner` with its own pair of policies, all awaiting
    /// `shared`: each inner policy runs its caller's `idempotency` (a plain call for `nil`), and each caller rethrows its
    /// first failure out of the inner policy unchanged only once every caller caught its own (a
    /// log write, say). Returns each caller's index, outcome and the inner operation's runs.
    static func callers(
        _ count: Int, sharing shared: Task<Int, any Error>, clock: TestClock,
        idempotency: @escaping @Sendable (Int) -> Idempotency?
    ) async -> [(Int, RetryOutcome<Int>, Int)] {
        let caught = Countdown()
        return await withTaskGroup(of: (Int, RetryOutcome<Int>, Int).self) { group in
            for index in 0..<count {
                group.addTask {
                    let (outer, inner) = (try! Self.policy(clock), try! Self.policy(clock))
                    let runs = Counter()
                    let firstFailure = Counter()
                    let outcome = await outer.outcome {
                        do {
                            let operation: @Sendable () async throws -> Int = {
                                runs.increment()
                                return try await shared.value
                            }
                            guard let idempotency = idempotency(index) else {
                                return try await inner.execute(operation: operation)
                            }
                            return try await inner.execute(idempotency: idempotency, operation: operation)
                        } catch {
                            if firstFailure.increment() == 1 {
                                caught.increment()
                                await caught.wait(untilReaching: count)
                            }
                            throw error
                        }
                    }
                    return (index, outcome, runs.value)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// One caller: `outer` around `inner`; `operation` is the inner policy's operation. Its first
    /// failure out of the inner policy is rethrown unchanged once both callers caught theirs and,
    /// for the second reader, once the first reader's outer policy finished.
    private static func call(
        outer: RetryPolicy, inner: RetryPolicy, idempotency: Idempotency? = nil, readsSecond: Bool, steps: Steps,
        operation: @escaping @Sendable () async throws -> Int
    ) async -> RetryOutcome<Int> {
        let firstFailure = Counter()
        let outcome = await outer.outcome {
            do {
                guard let idempotency else { return try await inner.execute(operation: operation) }
                return try await inner.execute(idempotency: idempotency, operation: operation)
            } catch {
                if firstFailure.increment() == 1 {
                    steps.caught.increment()
                    await steps.caught.wait(untilReaching: 2)
                    if readsSecond { await steps.finished.wait(untilReaching: 1) }
                }
                throw error
            }
        }
        steps.finished.increment()
        return outcome
    }

    /// Both inner policies retry the shared error to exhaustion, A's first, then B's. Each outer
    /// policy stops with `retriedByInnerPolicy`: three attempts a caller, not six.
    @Test(arguments: FirstReader.allCases)
    func eachCallerKeepsItsOwnInnerPolicysWord(firstReader: FirstReader) async throws {
        let clock = TestClock()
        let shared = await Self.failedRequest(id: 41)
        let steps = Steps()
        let (attemptsA, attemptsB) = (Counter(), Counter())
        let (outerA, innerA, outerB, innerB) = (
            try Self.policy(clock), try Self.policy(clock), try Self.policy(clock), try Self.policy(clock)
        )
        async let a = Self.call(outer: outerA, inner: innerA, readsSecond: firstReader == .lastWriter, steps: steps) {
            attemptsA.increment()
            return try await shared.value
        }
        async let b = Self.call(outer: outerB, inner: innerB, readsSecond: firstReader == .firstWriter, steps: steps) {
            // B's attempts come after A's inner policy stopped, so B's record is written last.
            await steps.caught.wait(untilReaching: 1)
            attemptsB.increment()
            return try await shared.value
        }
        let (outcomeA, outcomeB) = await (a, b)
        #expect(outcomeA.stopReason == .retriedByInnerPolicy)
        #expect(outcomeB.stopReason == .retriedByInnerPolicy)
        #expect(attemptsA.value == 3)
        #expect(attemptsB.value == 3)
    }

    /// Caller A's inner call is a `POST` (declared not idempotent) and stops after one send;
    /// caller B, unrelated, then retries the same shared error to exhaustion. A's request is
    /// sent once, and B stops on its own inner policy's word, not A's.
    @Test(arguments: FirstReader.allCases)
    func anUnrelatedCallersLaterWordDoesNotSendANotIdempotentRequestAgain(firstReader: FirstReader) async throws {
        let clock = TestClock()
        let shared = await Self.failedRequest(id: 42)
        let steps = Steps()
        let (sendsA, attemptsB) = (Counter(), Counter())
        let (outerA, innerA, outerB, innerB) = (
            try Self.policy(clock), try Self.policy(clock), try Self.policy(clock), try Self.policy(clock)
        )
        async let a = Self.call(
            outer: outerA, inner: innerA, idempotency: .notIdempotent, readsSecond: firstReader == .lastWriter,
            steps: steps
        ) {
            sendsA.increment()
            return try await shared.value
        }
        async let b = Self.call(outer: outerB, inner: innerB, readsSecond: firstReader == .firstWriter, steps: steps) {
            await steps.caught.wait(untilReaching: 1)
            attemptsB.increment()
            return try await shared.value
        }
        let (outcomeA, outcomeB) = await (a, b)
        #expect(sendsA.value == 1)
        #expect(outcomeA.attempts == 1)
        #expect(outcomeA.stopReason == .notIdempotent)
        #expect(attemptsB.value == 3)
        #expect(outcomeB.stopReason == .retriedByInnerPolicy)
    }

    /// Many callers, every third a `POST`, all stop in their inner policies on one shared error
    /// before any outer policy reads: each reads its own word.
    @Test func manyCallersSharingOneErrorEachReadTheirOwnWord() async throws {
        let clock = TestClock()
        let shared = await Self.failedRequest(id: 43)
        let callers = 24
        let results = await Self.callers(callers, sharing: shared, clock: clock) {
            $0 % 3 == 0 ? .notIdempotent : .idempotent
        }
        #expect(results.count == callers)
        for (index, outcome, attempts) in results {
            let isPost = index % 3 == 0
            #expect(outcome.stopReason == (isPost ? .notIdempotent : .retriedByInnerPolicy), "caller \(index)")
            #expect(attempts == (isPost ? 1 : 3), "caller \(index)")
            #expect(outcome.attempts == 1, "caller \(index)")
        }
    }

    /// A word passed up through three layers by one caller keeps one record for the error: the
    /// record each layer took makes room for the word it passes on.
    @Test func aWordPassedUpTheLayersKeepsOneRecord() async throws {
        let clock = TestClock()
        let (outer, middle, inner) = (try Self.policy(clock), try Self.policy(clock), try Self.policy(clock))
        let failure: any Error = TransientError(id: 44)
        let attempts = Counter()
        let outcome = await outer.outcome {
            try await middle.execute {
                try await inner.execute {
                    attempts.increment()
                    throw failure
                }
            }
        }
        #expect(outcome.stopReason == .retriedByInnerPolicy)
        #expect(attempts.value == 3)
        #expect(NestedRetryLedger.recordCount(for: failure) == 1)
    }

    /// A stored error value thrown again and again to unrelated calls, with nothing around them
    /// to take the word, keeps one record a call, up to the ledger's bound for one error, and no
    /// more, however many such calls there are while it lives.
    @Test func aStoredErrorExhaustedByManyUnrelatedCallsKeepsBoundedRecords() async throws {
        let clock = TestClock()
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let stored: any Error = TransientError(id: 45)
        let calls = NestedRetryLedger.Entry.capacity * 3
        let done = Countdown()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<calls {
                group.addTask {
                    // Each in a task of its own, alive until all are done: a call of its own each.
                    let outcome = await policy.outcome { throw stored }
                    #expect(outcome.stopReason == .exhausted)
                    done.increment()
                    await done.wait(untilReaching: calls)
                }
            }
        }
        #expect(NestedRetryLedger.recordCount(for: stored) == NestedRetryLedger.Entry.capacity)
    }

    /// The ledger itself: two calls' words about one error value are kept side by side, and each
    /// call takes its own, once.
    @Test func theLedgerKeepsEachCallsWordAboutOneErrorValue() {
        let failure: any Error = TransientError(id: 46)
        let (callA, callB) = (NestedRetryLedger.newCall(), NestedRetryLedger.newCall())
        let mark = NestedRetryLedger.mark
        NestedRetryLedger.record(.notIdempotent, for: failure, to: .init(call: callA, tasks: [1]))
        NestedRetryLedger.record(.exhausted, for: failure, to: .init(call: callB, tasks: [2]))
        #expect(NestedRetryLedger.recordCount(for: failure) == 2)
        let takerB = NestedRetryLedger.Taker(call: callB, task: 2, ownsCall: true)
        let takerA = NestedRetryLedger.Taker(call: callA, task: 1, ownsCall: true)
        #expect(NestedRetryLedger.take(failure, by: takerB, writtenAfter: mark) == .exhausted)
        #expect(NestedRetryLedger.take(failure, by: takerB, writtenAfter: mark) == nil)
        #expect(NestedRetryLedger.take(failure, by: takerA, writtenAfter: mark) == .notIdempotent)
        #expect(NestedRetryLedger.take(failure, by: takerA, writtenAfter: mark) == nil)
    }

    /// When one error value holds as many words as the ledger keeps in full for it, a new word
    /// displaces the oldest "exhausted" one, kept in brief, never a "not idempotent" one; with only
    /// those left, a further "not idempotent" word is dropped, and a call that finds no word of its
    /// own stops as told so.
    @Test func aFullErrorValueNeverDisplacesANotIdempotentWord() {
        let failure: any Error = TransientError(id: 47)
        let mark = NestedRetryLedger.mark
        let post = NestedRetryLedger.newCall()
        NestedRetryLedger.record(.notIdempotent, for: failure, to: .init(call: post, tasks: [1]))
        var others: [UInt64] = []
        for _ in 0..<NestedRetryLedger.Entry.capacity {
            let call = NestedRetryLedger.newCall()
            others.append(call)
            NestedRetryLedger.record(.exhausted, for: failure, to: .init(call: call, tasks: [1]))
        }
        #expect(NestedRetryLedger.recordCount(for: failure) == NestedRetryLedger.Entry.capacity)
        func taker(_ call: UInt64) -> NestedRetryLedger.Taker {
            .init(call: call, task: 1, ownsCall: true)
        }
        // The oldest "exhausted" word gave way, kept in brief; the newest is kept in full.
        #expect(NestedRetryLedger.recordCount(for: failure) == NestedRetryLedger.Entry.capacity)
        #expect(NestedRetryLedger.spilledCount(for: failure) == 1)
        #expect(NestedRetryLedger.take(failure, by: taker(others[0]), writtenAfter: mark) == .exhausted)
        #expect(
            NestedRetryLedger.take(failure, by: taker(others[others.count - 1]), writtenAfter: mark) == .exhausted
        )
        #expect(NestedRetryLedger.take(failure, by: taker(post), writtenAfter: mark) == .notIdempotent)

        let full: any Error = TransientError(id: 48)
        for _ in 0..<NestedRetryLedger.Entry.capacity {
            NestedRetryLedger.record(
                .notIdempotent, for: full, to: .init(call: NestedRetryLedger.newCall(), tasks: [1]))
        }
        let dropped = NestedRetryLedger.newCall()
        NestedRetryLedger.record(.notIdempotent, for: full, to: .init(call: dropped, tasks: [1]))
        #expect(NestedRetryLedger.take(full, by: taker(dropped), writtenAfter: mark) == .notIdempotent)
        // Dated before a later attempt: it does not stop that one.
        let later = NestedRetryLedger.mark
        #expect(NestedRetryLedger.take(full, by: taker(NestedRetryLedger.newCall()), writtenAfter: later) == nil)
    }
}
