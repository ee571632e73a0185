import ResilienceTesting
import Testing

@testable import Resilience

/// A rejection is thrown as an `any Error` box; a thread throws its last box again while the
/// error stays the same, and a new one the moment it differs.
@Suite struct CircuitBreakerRejectionBoxTests {
    static func openBreaker(named name: String, clock: TestClock) async throws -> CircuitBreaker {
        let breaker = try CircuitBreaker(
            name: name, tripRule: .consecutiveFailures(1), openDuration: .fixed(.seconds(30)), clock: clock)
        await breaker.fail()
        return breaker
    }

    /// The rejection `breaker` throws now, with the address of its box.
    static func rejection(_ breaker: CircuitBreaker) throws -> (error: CircuitBreakerOpenError, box: UnsafeRawPointer) {
        do {
            // `admit()` throws what `execute` throws, without an await that could move the
            // caller to another thread between two calls (the box is kept per thread).
            _ = try breaker.admit()
        } catch {
            // An `any Error` is one reference to its box. Wrapped in an optional, the
            // existential is passed as it is, not opened to the error inside.
            let wrapped: (any Error)? = error
            #expect(MemoryLayout.size(ofValue: wrapped) == MemoryLayout<UnsafeRawPointer>.size)
            let box = withUnsafeBytes(of: wrapped) { $0.load(as: UnsafeRawPointer.self) }
            return (try #require(error as? CircuitBreakerOpenError), box)
        }
        Issue.record("the breaker admitted the call")
        throw CancellationError()
    }

    @Test func theSameRejectionTwiceIsOneBoxAndADifferentWaitANewOne() async throws {
        let clock = TestClock()
        let breaker = try await Self.openBreaker(named: "box", clock: clock)
        clock.advance(by: .seconds(1))
        let first = try Self.rejection(breaker)
        let second = try Self.rejection(breaker)
        #expect(first.error.retryAfter == .seconds(29))
        #expect(second.error == first.error)
        #expect(second.box == first.box)
        clock.advance(by: .milliseconds(1))
        let third = try Self.rejection(breaker)
        #expect(third.error.retryAfter == .milliseconds(28_999), "exact, on a test clock")
        #expect(third.box != first.box)
    }

    @Test func aBoxIsNeverReusedForADifferentRejection() async throws {
        let clock = TestClock()
        let one = try await Self.openBreaker(named: "one", clock: clock)
        let two = try await Self.openBreaker(named: "two", clock: clock)
        let isolated = try await Self.openBreaker(named: "one", clock: clock)
        isolated.isolate()
        clock.advance(by: .seconds(5))
        #expect(
            try Self.rejection(one).error
                == CircuitBreakerOpenError(breakerName: "one", state: .open, retryAfter: .seconds(25)))
        #expect(
            try Self.rejection(two).error
                == CircuitBreakerOpenError(breakerName: "two", state: .open, retryAfter: .seconds(25)))
        #expect(
            try Self.rejection(isolated).error
                == CircuitBreakerOpenError(breakerName: "one", state: .isolated, retryAfter: nil))
        #expect(
            try Self.rejection(one).error
                == CircuitBreakerOpenError(breakerName: "one", state: .open, retryAfter: .seconds(25)))
    }

    @Test func aPolicyThatRetriedARejectionToExhaustionLeavesWordAboutABoxOfItsOwn() async throws {
        // Another call on this thread, rejected the same way, holds the thread's shared box;
        // the word an exhausted policy leaves must not make that call's policy stop.
        let clock = TestClock()
        let breaker = try await Self.openBreaker(named: "exhausted", clock: clock)
        let shared = try Self.rejection(breaker)
        var sharedError: (any Error)?
        do { _ = try breaker.admit() } catch { sharedError = error }
        let thrown = try #require(sharedError)
        let inner = try RetryPolicy(maximumAttempts: 2, clock: clock)
        let mark = NestedRetryLedger.mark
        let ending = inner.noteStop(.exhausted, error: thrown, call: .init(attempts: 2))
        // A call in this task, where the inner policy ran: the word is addressed to it.
        let taker = NestedRetryLedger.Taker(call: 0, task: NestedRetryLedger.currentTask, ownsCall: false)
        #expect(try #require(ending as? CircuitBreakerOpenError) == shared.error)
        #expect(
            NestedRetryLedger.take(thrown, by: taker, writtenAfter: mark) == nil,
            "the shared box carries no word")
        #expect(NestedRetryLedger.take(ending, by: taker, writtenAfter: mark) == .exhausted)
    }

    @Test func aBoxThrownEarlierKeepsItsErrorAfterTheThreadMovesOn() async throws {
        let clock = TestClock()
        let breaker = try await Self.openBreaker(named: "kept", clock: clock)
        let kept = try Self.rejection(breaker)
        var errors: [any Error] = []
        do { _ = try breaker.admit() } catch { errors.append(error) }
        for step in 1...100 {
            clock.advance(by: .milliseconds(step))
            _ = try Self.rejection(breaker)
        }
        let error = try #require(errors.first as? CircuitBreakerOpenError)
        #expect(error == kept.error)
        #expect(error.retryAfter == .seconds(30))
    }

    @Test func tasksRejectedConcurrentlyByTwoBreakersEachGetTheirOwnBreakersError() async throws {
        let clock = TestClock()
        let one = try await Self.openBreaker(named: "one", clock: clock)
        let two = try await Self.openBreaker(named: "two", clock: clock)
        // Each task alternates between the breakers, so every thread replaces its box call after
        // call while boxes it threw earlier are still held by the collected results.
        let results = await withTaskGroup(of: [(String, any Error)].self) { group in
            for task in 0..<8 {
                group.addTask {
                    var seen: [(String, any Error)] = []
                    for call in 0..<200 {
                        let breaker = (task + call).isMultiple(of: 2) ? one : two
                        do {
                            _ = try await breaker.execute { 1 }
                        } catch {
                            seen.append((breaker.name, error))
                        }
                    }
                    return seen
                }
            }
            group.addTask {
                // The wait changes under the rejecting tasks: new boxes while others are in flight.
                for _ in 0..<100 { clock.advance(by: .milliseconds(1)) }
                return []
            }
            var all: [(String, any Error)] = []
            for await seen in group { all += seen }
            return all
        }
        #expect(results.count == 8 * 200)
        for (name, error) in results {
            let rejection = try #require(error as? CircuitBreakerOpenError)
            #expect(rejection.breakerName == name)
            #expect(rejection.state == .open)
            let retryAfter = try #require(rejection.retryAfter)
            #expect(retryAfter > .seconds(29) && retryAfter <= .seconds(30))
        }
    }
}
