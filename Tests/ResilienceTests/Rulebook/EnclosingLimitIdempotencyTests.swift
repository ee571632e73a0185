import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A call that knows its request may not run twice, nested inside an attempt that a
/// library time limit ends: the limit's error must say so, or the layer above sends the
/// request again.
@Suite("An enclosing time limit reports the not-idempotent call it ended", .timeLimit(.minutes(5)))
struct EnclosingLimitIdempotencyTests {
    /// Which library time limit ends the outer attempt.
    enum Limit: String, CaseIterable, Sendable {
        /// `RetryPolicy.outcome(attemptTimeout:)`.
        case policyAttemptTimeout
        /// A `Timeout` strategy called inside the outer policy's attempt.
        case timeoutStrategy
        /// A pipeline of a retry policy and a per-attempt `Timeout`.
        case pipelineTimeout
    }

    /// How the inner call declares that it may not run twice.
    enum Declaration: String, CaseIterable, Sendable {
        case policyDeclaration, postClassifier, pipelineDeclaration, hedgingDeclaration
    }

    static func outerPolicy(clock: TestClock) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    /// The inner call: sends once (counted), then waits for an answer that never comes.
    static func innerCall(_ declaration: Declaration, clock: TestClock, sent: Counter) async throws -> Int {
        let send: @Sendable () async throws -> Int = {
            sent.increment()
            try await clock.sleep(for: .seconds(3_600))
            return 0
        }
        switch declaration {
        case .policyDeclaration:
            let inner = try RetryPolicy(maximumAttempts: 3, clock: clock)
            return try await inner.execute(idempotency: .notIdempotent) { try await send() }
        case .postClassifier:
            let inner = try RetryPolicy(
                maximumAttempts: 3, classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
            return try await inner.execute { try await send() }
        case .pipelineDeclaration:
            let inner = ResiliencePipeline { try! CircuitBreaker(name: "payments", clock: clock) }
            return try await inner.execute(idempotency: .notIdempotent) { try await send() }
        case .hedgingDeclaration:
            let inner = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
            return try await inner.execute(idempotency: .notIdempotent) { try await send() }
        }
    }

    /// Runs `body` under `limit` (5 seconds), and returns the outer policy's stop reason, if it reports one.
    static func call(
        under limit: Limit, clock: TestClock, _ body: @escaping @Sendable () async throws -> Int
    ) async throws -> RetryStopReason? {
        switch limit {
        case .policyAttemptTimeout:
            return try await Self.outerPolicy(clock: clock).outcome(attemptTimeout: .seconds(5)) { try await body() }
                .stopReason
        case .timeoutStrategy:
            let timeout = try Timeout(.seconds(5), clock: clock)
            return try await Self.outerPolicy(clock: clock).outcome { try await timeout.execute { try await body() } }
                .stopReason
        case .pipelineTimeout:
            let pipeline = try ResiliencePipeline {
                try Self.outerPolicy(clock: clock)
                try Timeout(.seconds(5), clock: clock)
            }
            _ = try? await pipeline.execute { try await body() }
            return nil
        }
    }

    /// Ends up to `attempts` attempts of `call`, one after the other, at their 5-second limit:
    /// waits for each attempt's timer to sleep (the only 5-second sleep), then moves the clock
    /// past it. Returns how many limits it ended: fewer than `attempts` when the call ended
    /// first, or when the waiting task was cancelled (by the suite's time limit, say).
    ///
    /// Waits, never spins: a clock wait returns at once once its task is cancelled, so the
    /// driver stops at its next wait when the call has ended (a watcher cancels it then) or
    /// when the task waiting for it is cancelled.
    @discardableResult
    static func driveLimits<Value: Sendable>(
        _ clock: TestClock, attempts: Int, of call: Task<Value, any Error>
    ) async -> Int {
        let driver = Task {
            var ended = 0
            for attempt in 1...attempts {
                var requests = clock.sleepRequests.count
                while clock.sleepRequests.filter({ $0 == .seconds(5) }).count < attempt {
                    requests += 1
                    await clock.waitForSleepRequests(count: requests)
                    if Task.isCancelled { return ended }
                }
                clock.advance(by: .seconds(5))
                ended += 1
            }
            return ended
        }
        // Outlives this function only until the call ends, which the test waits for anyway.
        Task {
            _ = await call.result
            driver.cancel()
        }
        return await withTaskCancellationHandler {
            await driver.value
        } onCancel: {
            driver.cancel()
        }
    }

    @Test(arguments: Limit.allCases, Declaration.allCases)
    func theLayerAboveDoesNotSendTheRequestAgain(_ limit: Limit, _ declaration: Declaration) async throws {
        let clock = TestClock()
        let sent = Counter()
        let call = Task {
            try await Self.call(under: limit, clock: clock) {
                try await Self.innerCall(declaration, clock: clock, sent: sent)
            }
        }
        #expect(await Self.driveLimits(clock, attempts: 1, of: call) == 1, "the attempt reached its limit")
        let stopReason = try await call.value
        #expect(sent.value == 1, "\(declaration) under \(limit): sent \(sent.value) times")
        if let stopReason { #expect(stopReason == .notIdempotent) }
    }

    @Test(arguments: Limit.allCases)
    func anIdempotentCallInsideIsStillRetried(_ limit: Limit) async throws {
        let clock = TestClock()
        let sent = Counter()
        let call = Task {
            try await Self.call(under: limit, clock: clock) {
                let inner = try RetryPolicy(maximumAttempts: 3, clock: clock)
                return try await inner.execute(idempotency: .idempotent) {
                    sent.increment()
                    try await clock.sleep(for: .seconds(3_600))
                    return 0
                }
            }
        }
        #expect(await Self.driveLimits(clock, attempts: 3, of: call) == 3, "each attempt reached its limit")
        let stopReason = try await call.value
        #expect(sent.value == 3, "the outer policy makes its 3 attempts")
        if let stopReason { #expect(stopReason == .exhausted) }
    }

    @Test func theTimeoutErrorReportsTheCallInsideAsNotIdempotent() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(5), clock: clock)
        let sent = Counter()
        let call = Task {
            try await timeout.execute {
                try await Self.innerCall(.policyDeclaration, clock: clock, sent: sent)
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(5))
        let error = try #require(await call.result.error as? TimeoutError)
        #expect(error.requestIdempotency == .notIdempotent)
    }
}

/// Hedging around a call that declared itself not idempotent inside the attempt: no
/// other copy of the attempt may start, though the hedging call itself declared nothing.
@Suite("Hedging starts no copy of an attempt that holds a not-idempotent call", .timeLimit(.minutes(5)))
struct HedgingAroundNotIdempotentCallTests {
    @Test func aFailedAttemptHoldingAPOSTIsNotReplaced() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, clock: clock)
        let sent = Counter()
        let result = await Result {
            try await hedging.execute {
                try await inner.execute(idempotency: .notIdempotent) { () throws -> Int in
                    sent.increment()
                    throw URLError(.networkConnectionLost)
                }
            }
        }
        #expect(sent.value == 1, "the POST was sent \(sent.value) times")
        #expect((try? result.get()) == nil)
    }

    @Test func aSlowAttemptHoldingAPOSTIsNotHedged() async throws {
        let clock = TestClock()
        let events = EventLog()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, observer: events, clock: clock)
        let sent = Counter()
        let call = Task {
            try await hedging.execute {
                let inner = ResiliencePipeline { try! CircuitBreaker(name: "orders", clock: clock) }
                return try await inner.execute(idempotency: .notIdempotent) {
                    sent.increment()
                    try await clock.sleep(for: .seconds(5))
                    return 7
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the attempt and the hedge's timer
        clock.advance(by: .seconds(1))
        // The hedge's timer fired: wait until its watcher has told the call (it parks, or sleeps
        // again for a next hedge, only once it has). The call, parked with nothing else pending,
        // is handed the hedge at once, so it decides on it before it hears of the attempt's end
        // below: a hedge would start here.
        try await yieldUntil("the hedge's watcher told the call") {
            switch hedging.watcher.phase {
            case .none, .parked: true
            case .sleeping(let until): until > hedging.watcher.now()
            case .running: false
            }
        }
        clock.advance(by: .seconds(4))
        #expect(try await call.value == 7)
        #expect(sent.value == 1, "the POST was sent \(sent.value) times")
        #expect(!events.kinds.values.contains(.hedged))
    }

    @Test func anAttemptHoldingOnlyIdempotentCallsIsStillReplaced() async throws {
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), maximumHedges: 2, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let sent = Counter()
        let value = try await hedging.execute {
            try await inner.execute(idempotency: .idempotent) { () throws -> Int in
                if sent.increment() == 1 { throw URLError(.networkConnectionLost) }
                return 3
            }
        }
        #expect(value == 3)
        #expect(sent.value == 2)
    }
}
