import Foundation
import ResilienceTesting
import ResilienceURLSession
import Synchronization
import Testing

@testable import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Nested retries and deadline propagation")
struct NestedRetriesTests {
    /// A failure named after the test that throws it, so a report says which test threw it.
    private struct ServerDown: Error {
        var test: String
    }

    private func policy(
        attempts: Int = 3, nested: NestedRetries = .innermostLayer, deadline: Duration? = nil, clock: TestClock
    ) throws -> RetryPolicy {
        try RetryPolicy(
            maximumAttempts: attempts, backoff: .constant(.milliseconds(10)), jitter: .none, deadline: deadline,
            nestedRetries: nested, clock: clock)
    }

    @Test func threeNestedLayersSendThreeAttemptsNotTwentySeven() async throws {
        let clock = TestClock()
        let layers = try (0..<3).map { _ in try self.policy(clock: clock) }
        let attempts = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await layers[0].outcome {
                try await layers[1].execute {
                    try await layers[2].execute {
                        attempts.increment()
                        throw ServerDown(test: #function)
                    }
                }
            }
        }
        #expect(attempts.value == 3)
        #expect(outcome.stopReason == .retriedByInnerPolicy)
        #expect(outcome.attempts == 1)
        #expect(outcome.error is ServerDown)
    }

    @Test func optingOutMultipliesAsBefore() async throws {
        let clock = TestClock()
        let layers = try (0..<3).map { _ in try self.policy(nested: .everyLayer, clock: clock) }
        let attempts = Counter()
        _ = await driveThroughEveryWait(clock) {
            await layers[0].outcome {
                try await layers[1].execute {
                    try await layers[2].execute {
                        attempts.increment()
                        throw ServerDown(test: #function)
                    }
                }
            }
        }
        #expect(attempts.value == 27)
    }

    @Test func aPolicyCalledAgainInTheSameTaskStillRetries() async throws {
        let clock = TestClock()
        let inner = try self.policy(clock: clock)
        let outer = try self.policy(clock: clock)
        let attempts = Counter()
        let counts = await driveThroughEveryWait(clock) { () -> [Int] in
            var counts: [Int] = []
            for _ in 0..<3 {
                let before = attempts.value
                _ = await outer.outcome {
                    try await inner.execute {
                        attempts.increment()
                        throw ServerDown(test: #function)
                    }
                }
                counts.append(attempts.value - before)
            }
            return counts
        }
        #expect(counts == [3, 3, 3])
    }

    @Test func aRecordLeftByAPolicyThatIsGoneIsNotTaken() async throws {
        let clock = TestClock()
        let attempts = Counter()
        let counts = await driveThroughEveryWait(clock) { () -> [Int] in
            do {
                // A policy used once and released, leaving its record behind in this task.
                let gone = try? self.policy(clock: clock)
                _ = await gone?.outcome {
                    attempts.increment()
                    throw ServerDown(test: "shared")
                }
            }
            let before = attempts.value
            let other = try? self.policy(clock: clock)
            _ = await other?.outcome {
                attempts.increment()
                throw ServerDown(test: "shared")
            }
            return [before, attempts.value - before]
        }
        #expect(counts == [3, 3])
    }

    @Test func anInnerPolicyThatGaveUpForAnotherReasonLeavesTheOuterFreeToRetry() async throws {
        let clock = TestClock()
        let inner = try RetryPolicy(
            maximumAttempts: 3, classifier: ClosureRetryClassifier { @Sendable _, _ in .doNotRetry }, clock: clock)
        let outer = try self.policy(clock: clock)
        let attempts = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await outer.outcome {
                try await inner.execute {
                    attempts.increment()
                    throw ServerDown(test: #function)
                }
            }
        }
        #expect(attempts.value == 3)
        #expect(outcome.stopReason == .exhausted)
    }

    @Test func nestingIsDetectedAcrossAnAttemptTimeout() async throws {
        let clock = TestClock()
        // No waits: the attempt's time limit is a sleeper the whole time, so nothing drives the clock.
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let outer = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let attempts = Counter()
        let outcome = await Task {
            await outer.outcome(attemptTimeout: .seconds(60)) {
                try await inner.execute {
                    attempts.increment()
                    throw ServerDown(test: #function)
                }
            }
        }.value
        #expect(attempts.value == 3)
        #expect(outcome.stopReason == .retriedByInnerPolicy)
    }

    /// One nested call of a seeded shape: how deep, how many attempts inside, which
    /// kind of error, and whether the outer layer runs its attempts under a time limit.
    private struct NestedShape: Sendable {
        var layers: Int
        var innerAttempts: Int
        var errorKind: Int
        var timeLimited: Bool
        /// Whether the task first runs a lone policy to exhaustion, leaving a record nobody takes.
        var leavesAStrayRecord: Bool

        init(using generator: inout SeededRandomNumberGenerator) {
            self.layers = Int.random(in: 2...4, using: &generator)
            self.innerAttempts = Int.random(in: 2...4, using: &generator)
            self.errorKind = Int.random(in: 0..<3, using: &generator)
            self.timeLimited = Bool.random(using: &generator)
            self.leavesAStrayRecord = Bool.random(using: &generator)
        }

        func error(_ index: Int) -> any Error {
            switch self.errorKind {
            case 0: return ServerDown(test: "stress")  // the same description in every task
            case 1: return NSError(domain: "stress", code: 503)
            default: return URLError(.timedOut)
            }
        }
    }

    private static func send(
        through policies: ArraySlice<RetryPolicy>, shape: NestedShape, attempts: Counter
    ) async throws {
        guard let outer = policies.first else {
            attempts.increment()
            throw shape.error(attempts.value)
        }
        if shape.timeLimited && policies.count == 2 {
            try await outer.execute(attemptTimeout: .seconds(60)) {
                try await Self.send(through: policies.dropFirst(), shape: shape, attempts: attempts)
            }
        } else {
            try await outer.execute {
                try await Self.send(through: policies.dropFirst(), shape: shape, attempts: attempts)
            }
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func manyConcurrentNestedCallsEachSendOnlyTheInnermostAttempts(seed: UInt64) async throws {
        let clock = TestClock()
        var generator = SeededRandomNumberGenerator(seed: seed)
        let shapes = (0..<200).map { _ in NestedShape(using: &generator) }
        let results = try await withThrowingTaskGroup(of: (Int, Int, RetryStopReason?).self) { group in
            for (index, shape) in shapes.enumerated() {
                // Shared outer policies would be the common case; fresh ones per task make every record distinct.
                let policies = try (0..<shape.layers).map { layer in
                    try RetryPolicy(
                        maximumAttempts: layer == shape.layers - 1 ? shape.innerAttempts : 3,
                        backoff: .constant(.zero), jitter: .none, clock: clock)
                }
                group.addTask {
                    if shape.leavesAStrayRecord {
                        let lone = try RetryPolicy(
                            maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
                        _ = await lone.outcome { throw shape.error(0) }
                    }
                    let attempts = Counter()
                    let outcome = await policies[0].outcome {
                        try await Self.send(through: policies.dropFirst(), shape: shape, attempts: attempts)
                    }
                    return (index, attempts.value, outcome.stopReason)
                }
            }
            var results: [(Int, Int, RetryStopReason?)] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(results.count == shapes.count)
        for (index, attempts, stop) in results {
            #expect(attempts == shapes[index].innerAttempts, "task \(index): \(shapes[index])")
            #expect(stop == .retriedByInnerPolicy, "task \(index): \(shapes[index])")
        }
    }

    @Test func twoPoliciesOneAfterTheOtherWithLookAlikeErrorsEachRetryFully() async throws {
        let clock = TestClock()
        let first = try self.policy(clock: clock)
        let second = try self.policy(clock: clock)
        let attempts = Counter()
        let counts = await driveThroughEveryWait(clock) { () -> [Int] in
            _ = await first.outcome {
                attempts.increment()
                throw ServerDown(test: #function)
            }
            let before = attempts.value
            let outcome = await second.outcome {
                attempts.increment()
                throw ServerDown(test: #function)
            }
            return [before, attempts.value - before, outcome.stopReason == .exhausted ? 1 : 0]
        }
        #expect(counts == [3, 3, 1])
    }

    /// Some libraries throw one stored error value every time. A policy that exhausted it
    /// earlier leaves a record that lives as long as the value, for ever for a `static let`;
    /// a later call of another policy, plain or through a pipeline, failing with the same
    /// value must still retry fully.
    @Test func aStoredErrorAnotherPolicyExhaustedEarlierDoesNotStopALaterCall() async throws {
        let clock = TestClock()
        let stored: any Error = ServerDown(test: #function)
        let first = try self.policy(clock: clock)
        let second = try self.policy(clock: clock)
        let third = try self.policy(clock: clock)
        let fourth = try self.policy(clock: clock)
        let attempts = Counter()
        let counts = await driveThroughEveryWait(clock) { () -> [Int] in
            _ = await first.outcome {
                attempts.increment()
                throw stored
            }
            var counts = [attempts.value]
            let outcome = await second.outcome {
                attempts.increment()
                throw stored
            }
            counts += [attempts.value - counts[0], outcome.stopReason == .exhausted ? 1 : 0]
            let before = attempts.value
            _ = try? await third.execute { () async throws -> Int in
                attempts.increment()
                throw stored
            }
            _ = try? await ResiliencePipeline { fourth }.execute { () async throws -> Int in
                attempts.increment()
                throw stored
            }
            return counts + [attempts.value - before]
        }
        #expect(counts == [3, 3, 1, 6])
    }

    @Test func anErrorWrappedBetweenTheLayersIsANewFailureTheOuterRetries() async throws {
        struct SDKError: Error { var underlying: any Error }
        let clock = TestClock()
        let inner = try self.policy(clock: clock)
        let outer = try self.policy(clock: clock)
        let attempts = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await outer.outcome {
                do {
                    try await inner.execute {
                        attempts.increment()
                        throw ServerDown(test: #function)
                    }
                } catch {
                    throw SDKError(underlying: error)
                }
            }
        }
        #expect(attempts.value == 9)
        #expect(outcome.stopReason == .exhausted)
    }

    @Test func anErrorCaughtAndRethrownUnchangedStillStopsTheOuter() async throws {
        let clock = TestClock()
        let inner = try self.policy(clock: clock)
        let outer = try self.policy(clock: clock)
        let attempts = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await outer.outcome {
                do {
                    try await inner.execute {
                        attempts.increment()
                        throw NSError(domain: "server", code: 503)
                    }
                } catch {
                    let result: Result<Void, any Error> = .failure(error)  // handed around, then thrown again
                    try await Task { try result.get() }.value
                }
            }
        }
        #expect(attempts.value == 3)
        #expect(outcome.stopReason == .retriedByInnerPolicy)
    }

    /// Starts a call through `policy`, declared `idempotency` when given, whose every attempt
    /// fails with `shared`'s error; only the first is slow to hand its failure back (a log
    /// write, say: one second on `clock`). Returns once that first attempt has the error in hand.
    private static func startCallSlowToHandBackItsFirstFailure(
        through policy: RetryPolicy, idempotency: Idempotency?, of shared: Task<Int, any Error>, clock: TestClock,
        attempts: Counter
    ) async -> Task<RetryOutcome<Int>, Never> {
        let operation: () async throws -> Int = {
            let attempt = attempts.increment()
            do {
                return try await shared.value
            } catch {
                if attempt == 1 { try? await clock.sleep(for: .seconds(1)) }
                throw error
            }
        }
        let call = Task {
            guard let idempotency else { return await policy.outcome(operation: operation) }
            return await policy.outcome(idempotency: idempotency, operation: operation)
        }
        await clock.waitForSleepers(count: 1)
        return call
    }

    /// Two unrelated calls await one in-flight request (request coalescing: several callers
    /// awaiting one `Task`), so both get the very same error value. Call A, through a lone
    /// policy, retries it to exhaustion while call B's attempt, through another policy with
    /// nothing nested in it, holds that error: A's word is not for B, which retries fully.
    @Test func anUnrelatedPolicyDoesNotTakeALonePolicysWordAboutASharedError() async throws {
        let clock = TestClock()
        let shared = Task<Int, any Error> { throw TransientError(id: 1) }
        _ = await shared.result  // the shared request has failed

        let policyA = try RetryPolicy(
            name: "A", maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: clock)
        let policyB = try RetryPolicy(
            name: "B", maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let attemptsB = Counter()

        let callB = await Self.startCallSlowToHandBackItsFirstFailure(
            through: policyB, idempotency: nil, of: shared, clock: clock, attempts: attemptsB)

        let outcomeA = await policyA.outcome { try await shared.value }
        #expect(outcomeA.stopReason == .exhausted)

        clock.advance(by: .seconds(1))
        let outcomeB = await callB.value
        #expect(outcomeB.stopReason == .exhausted)
        #expect(attemptsB.value == 3)
    }

    /// The same with a `POST`: a lone policy that stops on the shared error because its request
    /// may not run twice does not stop an unrelated idempotent call, plain or declared.
    @Test(arguments: [false, true])
    func anUnrelatedPolicysNotIdempotentWordDoesNotStopAnIdempotentCall(declared: Bool) async throws {
        let clock = TestClock()
        let shared = Task<Int, any Error> { throw TransientError(id: 2) }
        _ = await shared.result

        let policyA = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let policyB = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let attemptsB = Counter()
        let callB = await Self.startCallSlowToHandBackItsFirstFailure(
            through: policyB, idempotency: declared ? .idempotent : nil, of: shared, clock: clock, attempts: attemptsB)

        let outcomeA = await policyA.outcome(idempotency: .notIdempotent) { try await shared.value }
        #expect(outcomeA.stopReason == .notIdempotent)

        clock.advance(by: .seconds(1))
        let outcomeB = await callB.value
        #expect(outcomeB.stopReason == .exhausted)
        #expect(attemptsB.value == 3)
    }

    /// A call that hands a scope down (here, its declared idempotency) numbers itself in it,
    /// so it takes the word of a policy nested in it in a child task of its own making.
    @Test func aDeclaredCallTakesTheWordOfAPolicyInAChildTaskOfItsAttempt() async throws {
        let clock = TestClock()
        let inner = try self.policy(clock: clock)
        let outer = try self.policy(clock: clock)
        let attempts = Counter()
        let outcome = await driveThroughEveryWait(clock) {
            await outer.outcome(idempotency: .idempotent) {
                async let child: Void = inner.execute {
                    attempts.increment()
                    throw ServerDown(test: #function)
                }
                try await child
            }
        }
        #expect(attempts.value == 3)
        #expect(outcome.stopReason == .retriedByInnerPolicy)
    }

    @Test func recordsDoNotOutliveTheirErrors() async throws {
        let policy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.zero), jitter: .none, clock: TestClock())
        for index in 0..<5_000 {
            _ = await policy.outcome { throw ServerDown(test: "\(#function) \(index)") }
        }
        // Every error above is gone; only the records of errors other tests still hold may remain,
        // with at most as many dead ones again before the next sweep.
        #expect(NestedRetryLedger.count < 1_000)
    }

    /// The numbers two nested calls see for the successes noted inside them.
    private final class SuccessNumbers: Sendable {
        let outer = Atomic<UInt64>(0)
        let inner = Atomic<UInt64>(0)
    }

    /// A success noted inside a call with a deadline lives in the ledger no longer than that
    /// call: as the call ends, succeeded or failed, its entry goes, passed on to the call around
    /// it, and the outermost call's goes with it.
    @Test(arguments: [false, true])
    func aSucceededCallsEntryEndsWithTheCallAroundIt(attemptFails: Bool) async throws {
        let clock = TestClock()
        let outer = try self.policy(attempts: 1, deadline: .seconds(3_600), clock: clock)
        let inner = try self.policy(attempts: 1, deadline: .seconds(1_800), clock: clock)
        let declared = try self.policy(attempts: 1, clock: clock)
        let numbers = SuccessNumbers()
        _ = await outer.outcome {
            numbers.outer.store(CallScope.current.succeededCall, ordering: .relaxed)
            do {
                try await inner.execute {
                    numbers.inner.store(CallScope.current.succeededCall, ordering: .relaxed)
                    _ = try await declared.execute(idempotency: .notIdempotent) { 200 }
                    #expect(NestedRetryLedger.latestSuccess(in: numbers.inner.load(ordering: .relaxed)) > 0)
                    if attemptFails { throw ServerDown(test: #function) }
                }
            } catch {}
            #expect(NestedRetryLedger.latestSuccess(in: numbers.inner.load(ordering: .relaxed)) == 0)
            #expect(NestedRetryLedger.latestSuccess(in: numbers.outer.load(ordering: .relaxed)) > 0)
        }
        #expect(numbers.outer.load(ordering: .relaxed) != 0)
        #expect(numbers.inner.load(ordering: .relaxed) != numbers.outer.load(ordering: .relaxed))
        #expect(NestedRetryLedger.latestSuccess(in: numbers.outer.load(ordering: .relaxed)) == 0)
    }

    @Test func outerDeadlineStopsAnInnerPolicysWaits() async throws {
        let clock = TestClock()
        let inner = try RetryPolicy(
            maximumAttempts: 10, backoff: .constant(.seconds(4)), jitter: .none, clock: clock)
        let outer = try self.policy(attempts: 1, deadline: .seconds(10), clock: clock)
        let attempts = Counter()
        let task = Task {
            await outer.outcome {
                try await inner.execute {
                    attempts.increment()
                    throw ServerDown(test: #function)
                }
            }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(4))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(4))
        let outcome = await task.value
        // Attempts at 0 s, 4 s and 8 s; a fourth wait of 4 s would pass the outer 10 s deadline.
        #expect(attempts.value == 3)
        #expect(clock.sleepRequests == [.seconds(4), .seconds(4)])
        #expect(outcome.error is ServerDown)
    }

    @Test func outerDeadlineBoundsAnInnerAttemptTimeout() async throws {
        let clock = TestClock()
        let inner = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let outer = try self.policy(attempts: 1, deadline: .seconds(5), clock: clock)
        let task = Task {
            await outer.outcome {
                try await inner.execute(attemptTimeout: .seconds(60)) {
                    try await clock.sleep(for: .seconds(3_600))
                }
            }
        }
        await clock.waitForSleepers(count: 2)
        #expect(clock.sleepRequests.contains(.seconds(5)))
        clock.advance(by: .seconds(5))
        let outcome = await task.value
        #expect(outcome.error is AttemptTimeoutError)
    }

    @Test func deadlineSurvivesABackwardClockJump() async throws {
        let clock = TestClock()
        let inner = try RetryPolicy(maximumAttempts: 10, backoff: .constant(.seconds(4)), jitter: .none, clock: clock)
        let outer = try self.policy(attempts: 1, deadline: .seconds(10), clock: clock)
        let attempts = Counter()
        let task = Task {
            await outer.outcome {
                try await inner.execute {
                    attempts.increment()
                    throw ServerDown(test: #function)
                }
            }
        }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(4))
        clock.rewind(by: .seconds(2))
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(60))
        _ = await task.value
        // A clock that ran back gives more time, never an endless loop: the call ends.
        #expect(attempts.value <= 4)
    }

    @Test func cancellationDuringAnInnerWaitEndsEveryLayer() async throws {
        let clock = TestClock()
        let inner = try self.policy(clock: clock)
        let outer = try self.policy(clock: clock)
        let attempts = Counter()
        let task = Task {
            await outer.outcome {
                try await inner.execute {
                    attempts.increment()
                    throw ServerDown(test: #function)
                }
            }
        }
        await clock.waitForSleepers(count: 1)
        task.cancel()
        let outcome = await task.value
        #expect(attempts.value == 1)
        #expect(outcome.stopReason == .cancelled)
    }
}

@Suite("Jittered open durations")
struct JitteredOpenDurationTests {
    @Test func spreadsOpenTimesWithinTheSpread() async throws {
        var opens: [Duration] = []
        for client in 0..<50 {
            let clock = TestClock()
            let breaker = try CircuitBreaker(
                name: "c", tripRule: .consecutiveFailures(1),
                openDuration: .fixed(.seconds(30)).jittered(
                    by: 0.2, generator: SeededRandomNumberGenerator(seed: UInt64(client))),
                clock: clock)
            _ = try? await breaker.execute { throw TransientError() }
            var waited = Duration.zero
            while (try? await breaker.execute {}) == nil {
                clock.advance(by: .milliseconds(100))
                waited += .milliseconds(100)
            }
            opens.append(waited)
        }
        #expect(opens.allSatisfy { $0 >= .seconds(24) && $0 <= .milliseconds(36_100) })
        #expect(Set(opens).count > 25)
    }

    @Test func sameSeedSameSchedule() {
        let first = CircuitBreakerOpenDuration.fixed(.seconds(30)).jittered(
            by: 0.2, generator: SeededRandomNumberGenerator(seed: 9))
        let second = CircuitBreakerOpenDuration.fixed(.seconds(30)).jittered(
            by: 0.2, generator: SeededRandomNumberGenerator(seed: 9))
        #expect(first.description == "fixed(30.0 seconds).jittered(by: 0.2)")
        #expect(first.duration(forTrip: 1) == .seconds(30))
        _ = second
    }

    @Test func spreadOutsideZeroToOneIsRejected() {
        #expect(throws: ConfigurationError.self) {
            try CircuitBreaker(name: "c", openDuration: .fixed(.seconds(1)).jittered(by: 1.5))
        }
    }
}

@Suite("Request metadata headers")
struct RequestMetadataHeaderTests {
    @Test func sendsTheAttemptNumberAndTheTimeLeftAndCutsTheTimeout() throws {
        var request = URLRequest(url: URL(string: "https://example.com/items")!)
        request.timeoutInterval = 60
        let headers = RetryRequestHeaders(timeLeft: "X-Time-Left-Ms", attempt: "X-Attempt")
        let sent = headers.applied(to: request, attempt: 2, timeLeft: .milliseconds(2_500))
        #expect(sent.value(forHTTPHeaderField: "X-Attempt") == "2")
        #expect(sent.value(forHTTPHeaderField: "X-Time-Left-Ms") == "2500")
        #if canImport(FoundationNetworking)
            // FoundationNetworking drops the fraction: the cut is rounded up to whole seconds.
            #expect(sent.timeoutInterval == 3)
        #else
            #expect(sent.timeoutInterval == 2.5)
        #endif
    }

    /// Less than a second left: FoundationNetworking would count 0.9 s as zero whole
    /// seconds and time out at once, so there the cut is one second.
    @Test func aSubSecondTimeLeftCutsTheTimeoutToNoLessThanASecondOnLinux() throws {
        var request = URLRequest(url: URL(string: "https://example.com/items")!)
        request.timeoutInterval = 60
        let sent = RetryRequestHeaders(timeLeft: "T").applied(to: request, attempt: 1, timeLeft: .milliseconds(900))
        #expect(sent.value(forHTTPHeaderField: "T") == "900")
        #if canImport(FoundationNetworking)
            #expect(sent.timeoutInterval == 1)
        #else
            #expect(sent.timeoutInterval == 0.9)
        #endif
    }

    @Test func sendsNoTimeLeftWithoutADeadlineAndNothingUnnamed() throws {
        let request = URLRequest(url: URL(string: "https://example.com/items")!)
        let sent = RetryRequestHeaders(attempt: "A").applied(to: request, attempt: 1, timeLeft: nil)
        #expect(sent.value(forHTTPHeaderField: "A") == "1")
        #expect(sent.allHTTPHeaderFields?.count == 1)
        #expect(sent.timeoutInterval == request.timeoutInterval)
    }

    @Test func aPassedDeadlineSendsZero() throws {
        let request = URLRequest(url: URL(string: "https://example.com/items")!)
        let sent = RetryRequestHeaders(timeLeft: "T").applied(to: request, attempt: 3, timeLeft: .seconds(-1))
        #expect(sent.value(forHTTPHeaderField: "T") == "0")
    }
}

@Suite struct JitteredOpenDurationSettingsTests {
    @Test func aJitterSpreadIsDecodedEncodedAndValidated() throws {
        let json = Data(#"{"kind": "fixed", "duration": "30s", "jitter": 0.2}"#.utf8)
        let decoded = try JSONDecoder().decode(CircuitBreakerOpenDuration.self, from: json)
        #expect(decoded.description.contains("jittered(by: 0.2)"))
        let encoded = try JSONEncoder().encode(decoded)
        let object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        #expect(object["jitter"] as? Double == 0.2)

        let invalid = Data(#"{"kind": "fixed", "duration": "30s", "jitter": 1.5}"#.utf8)
        let error = try #require(throws: ConfigurationError.self) {
            try JSONDecoder().decode(CircuitBreakerOpenDuration.self, from: invalid)
        }
        #expect(error.setting.hasSuffix("jitter"))
    }
}
