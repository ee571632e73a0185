import Foundation
import Resilience
import ResilienceTesting
import Testing

@testable import Resilience

@Suite(
    .timeLimit(.minutes(5)), .serialized,
    .disabled(
        if: runsUnderThreadSanitizer,
        "seeded rounds on the test clock starve under ThreadSanitizer; run in the plain test step"))
struct StrategyEventTests {
    /// Fallback's observer "Receives a fallbackUsed event each time it answers"; StrategyEvent:
    /// "A Fallback answered for a call that failed". An answer that throws answered nothing.
    @Test func aFallbackWhoseAnswerThrowsSendsNoFallbackUsedEvent() async throws {
        let events = StrategyEventRecorder()
        let fallback = Fallback<Int>(name: "fb", observer: events) { _ in throw PermanentError() }
        await #expect(throws: PermanentError.self) {
            try await fallback.execute { () async throws -> Int in throw TransientError() }
        }
        #expect(events.count(.fallbackUsed) == 0, "a fallbackUsed event for a fallback that did not answer")
    }

    /// Two nested time limits passed in one clock move: one `timedOut` event, from the limit whose
    /// error the caller gets (the earlier deadline), and none from the other.
    @Test(arguments: 0..<16)
    func nestedTimeoutsSendOneTimedOutEventFromTheLimitThatDecided(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        var outerSeconds = Int64.random(in: 1...6, using: &random)
        var innerSeconds = Int64.random(in: 1...6, using: &random)
        if outerSeconds == innerSeconds { innerSeconds += 1 }
        if Bool.random(using: &random) { swap(&outerSeconds, &innerSeconds) }
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let outer = try Timeout(.seconds(outerSeconds), name: "outer", observer: events, clock: clock)
        let inner = try Timeout(.seconds(innerSeconds), name: "inner", observer: events, clock: clock)
        let call = Task {
            try await outer.execute {
                try await inner.execute { () async throws -> Int in
                    try await clock.sleep(for: .seconds(100))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 3)
        let jumpInOne = Bool.random(using: &random)
        let result = await Self.passTenSeconds(on: clock, inOneMove: jumpInOne, sleepers: 3, during: call)
        let expected = innerSeconds < outerSeconds ? "inner" : "outer"
        guard case .failure(let error) = result, let timeout = error as? TimeoutError else {
            Issue.record("seed \(seed): \(result)")
            return
        }
        #expect(timeout.timeoutName == expected, "seed \(seed): \(timeout.timeoutName) claimed, \(expected) came first")
        let timedOut = events.all.filter { $0.kind == .timedOut }
        #expect(timedOut.count == 1, "seed \(seed) jump \(jumpInOne): events \(timedOut.map(\.strategyName))")
        #expect(timedOut.first?.strategyName == expected, "seed \(seed): events \(timedOut.map(\.strategyName))")
    }

    /// A `Timeout` nested in a policy's per-attempt limit whose deadline came first, both passed
    /// in one clock move: the attempt limit claims the attempt, and the nested limit, which ended
    /// the operation, sends no `timedOut` event, as it sends none when the clock steps.
    @Test(arguments: 0..<8)
    func aTimeoutInsideAnEarlierAttemptLimitSendsNoEvent(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let attemptSeconds = Int64.random(in: 1...5, using: &random)
        let innerSeconds = attemptSeconds + Int64.random(in: 1...3, using: &random)
        let jumpInOne = Bool.random(using: &random)
        let clock = TestClock()
        let events = StrategyEventRecorder()
        let policy = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let inner = try Timeout(.seconds(innerSeconds), name: "inner", observer: events, clock: clock)
        let call = Task {
            try await policy.execute(attemptTimeout: .seconds(attemptSeconds)) {
                try await inner.execute { () async throws -> Int in
                    try await clock.sleep(for: .seconds(100))
                    return 1
                }
            }
        }
        await clock.waitForSleepers(count: 3)
        let result = await Self.passTenSeconds(on: clock, inOneMove: jumpInOne, sleepers: 3, during: call)
        guard case .failure(let error) = result else {
            Issue.record("seed \(seed): \(result)")
            return
        }
        #expect(error is AttemptTimeoutError, "seed \(seed) jump \(jumpInOne): \(error)")
        #expect(
            events.count(.timedOut) == 0,
            "seed \(seed) jump \(jumpInOne): the nested limit reported a time-out the attempt limit decided")
    }

    /// A queue timeout nested in a `Timeout` (Timeouts.md: "This holds for ... a ConcurrencyLimiter's queue
    /// timeout, in any nesting ... as it does when the clock steps"): the events tell the same story
    /// whether the clock passes both deadlines in steps or in one jump.
    @Test(arguments: 0..<12)
    func aQueueTimeoutInsideATimeoutTellsOneStoryInStepsAndInAJump(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        var outerSeconds = Int64.random(in: 1...6, using: &random)
        var queueSeconds = Int64.random(in: 1...6, using: &random)
        if outerSeconds == queueSeconds { queueSeconds += 1 }
        if Bool.random(using: &random) { swap(&outerSeconds, &queueSeconds) }
        var stories: [[String]] = []
        var errors: [String] = []
        for jump in [false, true] {
            let clock = TestClock()
            let events = StrategyEventRecorder()
            let limiter = try ConcurrencyLimiter(
                name: "bulk", limit: 1, queueLimit: 1, queueTimeout: .seconds(queueSeconds), observer: events,
                clock: clock)
            let timeout = try Timeout(.seconds(outerSeconds), name: "outer", observer: events, clock: clock)
            let gate = Gate()
            let holder = Task { try await limiter.execute { await gate.wait() } }
            try await yieldUntil { limiter.inFlight > 0 }
            let call = Task { try await timeout.execute { try await limiter.execute { 1 } } }
            await clock.waitForSleepers(count: 2)
            if jump {
                clock.advance(by: .seconds(10))
            } else {
                // In steps: only the first deadline passes, and the call ends before the clock
                // moves again, however late its tasks run.
                clock.advance(by: .seconds(Swift.min(outerSeconds, queueSeconds)))
            }
            let result = await call.result
            gate.open()
            _ = try await holder.value
            stories.append(events.all.filter { $0.kind != .queued }.map { "\($0.strategyName):\($0.kind)" })
            switch result {
            case .failure(let error as TimeoutError): errors.append("timeout \(error.timeoutName)")
            case .failure(let error as LimiterRejectionError): errors.append("rejection \(error.reason)")
            default: errors.append("\(result)")
            }
        }
        #expect(errors[0] == errors[1], "seed \(seed) outer \(outerSeconds) queue \(queueSeconds): \(errors)")
        #expect(
            stories[0] == stories[1],
            "seed \(seed) outer \(outerSeconds) queue \(queueSeconds): steps \(stories[0]) vs jump \(stories[1])")
    }

    /// Moves `clock` ten seconds on while `call` runs, with its `sleepers` asleep, and returns how
    /// the call ended: in one move, or a second at a time, where the first step that wakes a
    /// sleeper (a deadline passed) is the last until the call has ended, however late its tasks
    /// run; the rest of the ten seconds then pass.
    private static func passTenSeconds(
        on clock: TestClock, inOneMove: Bool, sleepers: Int, during call: Task<Int, any Error>
    ) async -> Result<Int, any Error> {
        var passed = 0
        if inOneMove {
            clock.advance(by: .seconds(10))
            passed = 10
        } else {
            while passed < 10, clock.sleeperCount >= sleepers {
                clock.advance(by: .seconds(1))
                passed += 1
            }
        }
        let result = await withTaskCancellationHandler {
            await call.result
        } onCancel: {
            call.cancel()
        }
        clock.advance(by: .seconds(Int64(10 - passed)))
        return result
    }
}
