import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A retry-after hint runs from when its response arrived (RFC 9110 counts delay-seconds from
/// receipt), not from when a layer above learned of it: a hint an inner policy was already
/// waiting on when an enclosing time limit cut it short reaches the layers above with the
/// time it had waited taken off.
@Suite("A late hint runs from its response", .timeLimit(.minutes(5)))
struct LateHintReceiptTests {
    /// The server answers 503 with `Retry-After: 30` at 0 s; the inner policy waits it out; the
    /// outer policy's attempt time limit fires at 10 s. The outer policy re-sends at 30 s.
    @Test func theOuterPolicyReSendsWhenTheServerSaid() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let sent = Recorder<Duration>()

        let call = Task {
            await outer.outcome(attemptTimeout: .seconds(10)) { () async throws -> Int in
                try await inner.execute { () throws -> Int in
                    sent.record(clock.now.offset)
                    if sent.values.count == 1 { throw StatusError(status: 503, hint: .seconds(30)) }
                    return 7
                }
            }
        }
        await clock.waitForSleepRequests(count: 2)  // the outer time limit and the inner 30 s wait
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        await clock.waitForSleepRequests(count: 3)  // the outer policy's wait before its retry
        let outerWait = try clock.sleepRequest(2)
        clock.advance(by: outerWait)
        let outcome = await call.value

        #expect(try outcome.get() == 7)
        #expect(outerWait == .seconds(20), "the outer policy waited \(outerWait), not the 20 s left of the hint")
        #expect(sent.values == [.zero, .seconds(30)])
        #expect(outcome.retryAfter == .seconds(20))
    }

    /// Under a `Timeout` strategy the time-out's analysis reads the rest of the hint.
    @Test func aTimeoutStrategysErrorReadsTheRestOfTheHint() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(10), clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let call = Task {
            try await timeout.execute { () async throws -> Int in
                try await inner.execute { () throws -> Int in throw StatusError(status: 503, hint: .seconds(30)) }
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        let error = try #require(await call.result.error)
        let limit = try #require(error as? TimeoutError)
        // The failure itself is unchanged; the analysis counts the hint from its response.
        #expect(limit.operationError.map { $0 as? StatusError } == StatusError(status: 503, hint: .seconds(30)))
        #expect(FailureAnalysis(error).retryAfter == .seconds(20))
    }

    /// An operation that fails late on its own (it ignored the cancellation) got its response
    /// when it failed: its hint runs whole from then.
    @Test func aLateResponseOfTheOperationsOwnRunsWhole() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let sent = Counter()
        let call = Task {
            await outer.outcome(attemptTimeout: .seconds(10)) { () async throws -> Int in
                if sent.increment() == 1 {
                    // Ignores the cancellation: the response comes after the limit fired.
                    try? await clock.sleep(for: .seconds(60))
                    throw StatusError(status: 503, hint: .seconds(30))
                }
                return 7
            }
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))
        await clock.waitForSleepRequests(count: 3)
        let outerWait = try clock.sleepRequest(2)
        clock.advance(by: outerWait)
        #expect(try await call.value.get() == 7)
        #expect(outerWait == .seconds(30))
    }

    // MARK: - The age in other shapes

    /// A `Timeout` of 10 s around a policy that waits out a 503's `Retry-After: 30`: the
    /// time-out, with 20 s left of the hint.
    static func timeOutWaitingOnAHint(
        _ clock: TestClock, wrappingTheInnerError wrap: @escaping @Sendable (any Error) -> any Error = { $0 }
    ) async throws -> any Error {
        let timeout = try Timeout(.seconds(10), clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let call = Task {
            try await timeout.execute { () async throws -> Int in
                do {
                    return try await inner.execute { () throws -> Int in
                        throw StatusError(status: 503, hint: .seconds(30))
                    }
                } catch {
                    throw wrap(error)
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the inner wait and the timeout's watcher
        clock.advance(by: .seconds(10))
        return try #require(await call.result.error)
    }

    /// The time-out crossing `NSError` (bridged, copied with its `userInfo`, inside an app's
    /// error) still counts the hint from its response.
    @Test(arguments: LibraryErrorShape.allCases)
    func aTimeOutInEveryShapeReadsTheRestOfTheHint(_ shape: LibraryErrorShape) async throws {
        let error = try await Self.timeOutWaitingOnAHint(TestClock())
        #expect(error is TimeoutError)
        #expect(FailureAnalysis(shape.wrap(error)).retryAfter == .seconds(20), "\(shape)")
        #expect(ErrorHints.retryAfter(of: shape.wrap(error)) == .seconds(20), "\(shape)")
    }

    @Test func aPlainCopyOfTheBridgedTimeOutReadsTheRestOfTheHint() async throws {
        let bridged = try await Self.timeOutWaitingOnAHint(TestClock()) as NSError
        let copy = NSError(domain: bridged.domain, code: bridged.code, userInfo: bridged.userInfo)
        #expect(FailureAnalysis(copy).retryAfter == .seconds(20))
    }

    /// The inner policy's failure wrapped by the code between it and the limit (an app's enum, a
    /// struct that keeps its cause) is the failure it waited on: its hint still runs from its response.
    @Test func theInnerPolicysErrorWrappedBeforeTheLimitKeepsItsAge() async throws {
        let wraps: [@Sendable (any Error) -> any Error] = [
            { SilentAppError.transport($0) }, { ContextError(operation: "sync", cause: $0) },
            { SilentAppError.server(code: 7, cause: ContextError(operation: "sync", cause: $0)) },
        ]
        for (index, wrap) in wraps.enumerated() {
            let error = try await Self.timeOutWaitingOnAHint(TestClock(), wrappingTheInnerError: wrap)
            let limit = try #require(error as? TimeoutError)
            #expect(limit.operationError != nil)
            #expect(FailureAnalysis(error).retryAfter == .seconds(20), "wrapper \(index)")
        }
    }

    /// Where the code between the inner policy and the limit puts the failure the policy waited on.
    enum InnerShape: CaseIterable, Sendable {
        case asThrown, inAnAppEnum, bridged, underNSUnderlyingErrorKey

        func wrap(_ error: any Error) -> any Error {
            switch self {
            case .asThrown: error
            case .inAnAppEnum: SilentAppError.transport(error)
            case .bridged: error as NSError
            case .underNSUnderlyingErrorKey: NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
            }
        }
    }

    /// An `NSError` instance the inner policy waited on (an SDK's failure with a `Retry-After`
    /// in its `userInfo`) is the same object bridged or kept under `NSUnderlyingErrorKey`: its
    /// hint still runs from its response, whatever the code in between did with it.
    @Test(arguments: InnerShape.allCases)
    func anNSErrorTheInnerPolicyWaitedOnKeepsItsAgeWhereverTheCodeInBetweenPutIt(_ shape: InnerShape)
        async throws
    {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(10), clock: clock)
        let inner = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock)
        let call = Task {
            try await timeout.execute { () async throws -> Int in
                do {
                    return try await inner.execute { () throws -> Int in
                        throw NSError(domain: "Upstream", code: 503, userInfo: ["Retry-After": 30])
                    }
                } catch {
                    throw shape.wrap(error)
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the inner 30 s wait and the timeout's watcher
        clock.advance(by: .seconds(10))
        let error = try #require(await call.result.error)
        #expect(error is TimeoutError)
        #expect(FailureAnalysis(error).retryAfter == .seconds(20), "\(shape)")
        #expect(FailureAnalysis(error as NSError).retryAfter == .seconds(20), "\(shape), the time-out bridged")
    }

    /// A Swift value the inner policy waited on, bridged or read back from a `userInfo` (a new
    /// value on Linux), may lose its age, or its hint: the layer above then waits longer than the
    /// server asked, never shorter.
    @Test(arguments: InnerShape.allCases)
    func aSwiftValueTheInnerPolicyWaitedOnNeverWaitsLessThanItsServerAsked(_ shape: InnerShape) async throws {
        let error = try await Self.timeOutWaitingOnAHint(TestClock(), wrappingTheInnerError: shape.wrap)
        let retryAfter = FailureAnalysis(error).retryAfter
        switch shape {
        case .asThrown, .inAnAppEnum: #expect(retryAfter == .seconds(20))
        case .bridged, .underNSUnderlyingErrorKey:
            #expect(retryAfter.map { $0 >= .seconds(20) } ?? true, "\(shape): \(String(describing: retryAfter))")
        }
    }

    /// End to end: an outer policy whose attempt limit cut short an inner policy whose error the
    /// attempt wraps, and whose own time-out the operation bridges, re-sends when the server said.
    @Test func theOuterPolicyReSendsWhenTheServerSaidWhateverWrapsTheErrors() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let timeout = try Timeout(.seconds(10), clock: clock)
        let sent = Recorder<Duration>()
        let call = Task {
            await outer.outcome { () async throws -> Int in
                do {
                    return try await timeout.execute { () async throws -> Int in
                        do {
                            return try await inner.execute { () throws -> Int in
                                sent.record(clock.now.offset)
                                if sent.values.count == 1 { throw StatusError(status: 503, hint: .seconds(30)) }
                                return 7
                            }
                        } catch {
                            throw SilentAppError.transport(error)
                        }
                    }
                } catch {
                    let bridged = error as NSError
                    throw NSError(domain: bridged.domain, code: bridged.code, userInfo: bridged.userInfo)
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the inner 30 s wait and the timeout's watcher
        clock.advance(by: .seconds(10))
        await clock.waitForSleepRequests(count: 3)  // the outer policy's wait before its retry
        let outerWait = try clock.sleepRequest(2)
        clock.advance(by: outerWait)
        let outcome = await call.value
        #expect(try outcome.get() == 7)
        #expect(outerWait == .seconds(20), "the outer policy waited \(outerWait), not the 20 s left of the hint")
        #expect(sent.values == [.zero, .seconds(30)])
    }
}
