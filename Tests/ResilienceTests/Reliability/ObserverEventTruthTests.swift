import Foundation
import Resilience
import ResilienceTesting
import Testing

@testable import Resilience

final class RetryObserverLog: RetryObserver {
    let failed = Lock<[RetryAttemptFailedEvent]>([])
    let scheduled = Lock<[RetryScheduledEvent]>([])
    let finished = Lock<[RetryCallFinishedEvent]>([])
    func attemptFailed(_ event: RetryAttemptFailedEvent) { self.failed.withLock { $0.append(event) } }
    func retryScheduled(_ event: RetryScheduledEvent) { self.scheduled.withLock { $0.append(event) } }
    func callFinished(_ event: RetryCallFinishedEvent) { self.finished.withLock { $0.append(event) } }
}

final class BreakerObserverLog: CircuitBreakerObserver {
    let changes = Lock<[CircuitBreakerStateChangeEvent]>([])
    let rejections = Lock<[CircuitBreakerRejectionEvent]>([])
    func stateChanged(_ event: CircuitBreakerStateChangeEvent) { self.changes.withLock { $0.append(event) } }
    func callRejected(_ event: CircuitBreakerRejectionEvent) { self.rejections.withLock { $0.append(event) } }
}

private enum Fate: Int, CaseIterable {
    case success, status503, status429, transient, permanent, limiterFull
}

@Suite(
    .timeLimit(.minutes(5)), .serialized,
    .disabled(
        if: runsUnderThreadSanitizer,
        "seeded rounds on the test clock starve under ThreadSanitizer; run in the plain test step"))
struct ObserverEventTruthTests {
    /// Seeded failure sequences through a policy on the test clock, every wait passed exactly:
    /// the events, the outcome, the statistics and the clock's sleeps tell one story.
    @Test(arguments: 0..<40)
    func retryEventsOutcomeStatisticsAndSleepsAgree(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let maximumAttempts = Int.random(in: 1...5, using: &random)
        let fates = (0..<maximumAttempts).map { _ in
            // Mostly retryable failures, so that retries happen.
            Fate(rawValue: [0, 1, 1, 1, 2, 3, 3, 4, 5].randomElement(using: &random)!)!
        }
        let hint = Duration.seconds(Int64.random(in: 0...3, using: &random))
        let clock = TestClock()
        let log = RetryObserverLog()
        let policy = try RetryPolicy(
            name: "p", maximumAttempts: maximumAttempts,
            backoff: .exponential(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(5)),
            observer: log, clock: clock, generator: SeededRandomNumberGenerator(seed: seed &+ 99))
        let before = await policy.statistics
        let started = Counter()
        let rejection = LimiterRejectionError(limiterName: "l", reason: .queueFull, queued: 0, retryAfter: hint)
        let outcome = await advancingThroughEachWait(clock) {
            await policy.outcome { () async throws -> Int in
                let attempt = started.increment()
                switch fates[attempt - 1] {
                case .success: return attempt
                case .status503: throw StatusError(status: 503)
                case .status429: throw StatusError(status: 429, hint: hint)
                case .transient: throw TransientError(id: attempt)
                case .permanent: throw PermanentError()
                case .limiterFull: throw rejection
                }
            }
        }
        let after = await policy.statistics
        let failed = log.failed.withLock { $0 }
        let scheduled = log.scheduled.withLock { $0 }
        let finished = log.finished.withLock { $0 }
        let attempts = started.value
        let context = "seed \(seed) fates \(fates.prefix(attempts)) outcome \(outcome.stopReason)"

        #expect(outcome.attempts == attempts, "\(context)")
        // A 429 is never retried.
        if let first429 = fates.firstIndex(of: .status429), first429 < attempts {
            #expect(attempts == first429 + 1, "a 429 was retried: \(context)")
            #expect(outcome.stopReason == .tooManyRequests, "\(context)")
        }
        let succeeded = (try? outcome.result.get()) != nil
        #expect(failed.count == attempts - (succeeded ? 1 : 0), "\(context)")
        #expect(failed.map(\.attempt) == Array(1...max(1, failed.count)).prefix(failed.count).map { $0 }, "\(context)")
        // Every retry scheduled is followed by an attempt (no deadline here, nothing else stops it).
        #expect(scheduled.count == attempts - 1, "\(context): \(scheduled.count) scheduled")
        #expect(scheduled.map(\.attempt) == Array(1..<max(1, attempts)).map { $0 }, "\(context)")
        // The waits requested on the clock are the delays announced (a zero delay needs no sleep).
        let announced = scheduled.map(\.delay).filter { $0 > .zero }
        #expect(clock.sleepRequests == announced, "\(context): sleeps \(clock.sleepRequests) vs \(announced)")
        // A hint sets a floor under the delay that followed it.
        for event in scheduled {
            if let floor = event.retryAfter { #expect(event.delay >= floor, "\(context)") }
            if fates[event.attempt - 1] == .limiterFull, hint > .zero {
                #expect(event.delay >= hint, "a limiter's retryAfter did not floor the wait: \(context)")
            }
        }
        // The finished event is the outcome.
        #expect(finished.count == (attempts == 1 && succeeded ? finished.count : 1), "\(context)")
        if let last = finished.last {
            #expect(last.attempts == outcome.attempts, "\(context)")
            #expect(last.stopReason == outcome.stopReason, "\(context)")
            #expect(last.retryAfter == outcome.retryAfter, "\(context)")
            #expect(last.elapsed == outcome.elapsed, "\(context)")
            #expect((last.error == nil) == succeeded, "\(context)")
        }
        // Time moved only by the waits.
        #expect(outcome.elapsed == scheduled.reduce(.zero) { $0 + $1.delay }, "\(context)")
        // Statistics: failed attempts and retries over all calls; the stop reason unless a first-attempt success.
        #expect(after.failedAttempts - before.failedAttempts == failed.count, "\(context)")
        #expect(after.retries - before.retries == scheduled.count, "\(context)")
        let counted = after.stopReasons.values.reduce(0, +) - before.stopReasons.values.reduce(0, +)
        #expect(counted == (attempts == 1 && succeeded ? 0 : 1), "\(context)")
        if counted == 1 {
            #expect(
                after.stopReasons[outcome.stopReason, default: 0] - before.stopReasons[outcome.stopReason, default: 0]
                    == 1, "\(context)")
        }
        if succeeded {
            #expect(outcome.stopReason == .succeeded)
        } else if attempts == maximumAttempts, fates[attempts - 1] != .permanent,
            fates[attempts - 1] != .status429
        {
            #expect(outcome.stopReason == .exhausted, "\(context)")
        }
    }

    /// Cancelling a call while it waits: no attempt starts after the cancel, the scheduled retry it
    /// cut short is not followed by an attempt (a documented stop: cancelled), and the outcome says so.
    @Test(arguments: 0..<10)
    func cancelledWaitEndsWithATruthfulStory(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let clock = TestClock()
        let log = RetryObserverLog()
        let maximumAttempts = Int.random(in: 2...5, using: &random)
        let cancelAfterWait = Int.random(in: 1...(maximumAttempts - 1), using: &random)
        let policy = try RetryPolicy(
            name: "p", maximumAttempts: maximumAttempts,
            backoff: .constant(.seconds(1)), jitter: .none, observer: log, clock: clock)
        let started = Counter()
        let task = Task {
            await policy.outcome { () async throws -> Int in
                started.increment()
                throw StatusError(status: 503)
            }
        }
        for wait in 1...cancelAfterWait {
            await clock.waitForSleepRequests(count: wait)
            if wait == cancelAfterWait {
                task.cancel()
            } else {
                clock.advance(by: .seconds(1))
            }
        }
        let outcome = await task.value
        #expect(outcome.stopReason == .cancelled)
        #expect(outcome.result.error is CancellationError)
        #expect(started.value == cancelAfterWait)
        #expect(outcome.attempts == started.value)
        let finished = log.finished.withLock { $0 }
        #expect(finished.count == 1)
        #expect(finished.first?.attempts == started.value)
        #expect(finished.first?.stopReason == .cancelled)
        #expect(log.scheduled.withLock { $0.count } == cancelAfterWait)
        #expect(log.failed.withLock { $0.count } == cancelAfterWait)
    }

    /// Seeded calls straight through a breaker: one rejection event per `CircuitBreakerOpenError`,
    /// the operation ran for every call not rejected, and the state-change events form one chain
    /// that ends in the breaker's state.
    @Test(arguments: 0..<20)
    func breakerEventsMatchWhatHappened(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let clock = TestClock()
        let log = BreakerObserverLog()
        let breaker = try CircuitBreaker(
            name: "b", tripRule: .consecutiveFailures(Int.random(in: 1...3, using: &random)),
            openDuration: .fixed(.seconds(5)), observer: log, clock: clock)
        let ran = Counter()
        var rejected = 0
        var calls = 0
        for _ in 0..<60 {
            let fate = Fate(rawValue: Int.random(in: 0...5, using: &random))!
            calls += 1
            do {
                _ = try await breaker.execute { () async throws -> Int in
                    ran.increment()
                    switch fate {
                    case .success: return 1
                    case .status503: throw StatusError(status: 503)
                    case .status429: throw StatusError(status: 429, hint: .seconds(2))
                    case .transient: throw TransientError()
                    case .permanent: throw PermanentError()
                    case .limiterFull: throw LimiterRejectionError(limiterName: "l", reason: .queueFull, queued: 0)
                    }
                }
            } catch is CircuitBreakerOpenError {
                rejected += 1
            } catch {}
            if Int.random(in: 0...3, using: &random) == 0 {
                clock.advance(by: .seconds(Int64.random(in: 1...6, using: &random)))
            }
        }
        let changes = log.changes.withLock { $0 }
        #expect(log.rejections.withLock { $0.count } == rejected)
        #expect(ran.value + rejected == calls)
        for (earlier, later) in zip(changes, changes.dropFirst()) {
            #expect(earlier.to == later.from, "state-change events do not chain: \(earlier.to) then \(later.from)")
            #expect(earlier.generation < later.generation)
            #expect(earlier.at <= later.at)
        }
        if let first = changes.first { #expect(first.from == .closed) }
        if let last = changes.last {
            let state = breaker.snapshot().state
            // An open breaker whose time is up may read half-open without an event yet.
            #expect(
                last.to == state || (last.to == .open && state == .halfOpen), "last event \(last.to), state \(state)")
        }
    }
}
