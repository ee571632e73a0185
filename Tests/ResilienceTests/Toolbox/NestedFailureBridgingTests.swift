import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// A time limit is told of a failure by a policy nested in its attempt: the failure the policy
/// stopped with at its own deadline (`TimeLimitSignal.takeDeadlineStops(of:)`), and the failure
/// it was waiting on when the limit cut its wait short, with how long it had waited
/// (`TimeLimitSignal.takeLateErrorAge(of:)`). The limit finds that failure again in the
/// attempt's error wherever the code in between put it, bridged to `NSError` included, and
/// takes no other failure for it: not one that shares its domain and code.
@Suite("A nested policy's failure found across bridging")
struct NestedFailureBridgingTests {
    struct OwnError: Error {}

    enum AppFailure: Error { case upstream(any Error) }

    /// A failure whose `NSError` form keeps something no other failure has.
    enum Failure: CaseIterable, Sendable, CustomStringConvertible {
        /// An `NSError` instance, an SDK's say: the same object wherever it goes.
        case anNSError
        /// A library time limit's error: its `NSError` form keeps the limit's end.
        case aLimitsError

        var description: String {
            switch self {
            case .anNSError: "an NSError"
            case .aLimitsError: "a limit's error"
            }
        }

        /// A new failure of this kind; all of them share one domain and code.
        func make() -> any Error {
            switch self {
            case .anNSError:
                return NSError(domain: "Upstream", code: 503, userInfo: ["Retry-After": 30])
            case .aLimitsError:
                let clock = TestClock()
                return AttemptTimeoutError(
                    timeout: .seconds(1), requestIdempotency: nil, operationError: nil, operationErrorAge: nil,
                    limitEnd: TimeLimitEnd(clock: ElapsedClock(clock), deadline: .seconds(1)))
            }
        }
    }

    /// Where the code between the policy and the limit puts the policy's failure.
    enum Shape: CaseIterable, Sendable {
        case asThrown, inAnAppEnum, bridged, underNSUnderlyingErrorKey, bridgedUnderNSUnderlyingErrorKey

        func wrap(_ error: any Error) -> any Error {
            switch self {
            case .asThrown: error
            case .inAnAppEnum: AppFailure.upstream(error)
            case .bridged: error as NSError
            case .underNSUnderlyingErrorKey: NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error])
            case .bridgedUnderNSUnderlyingErrorKey:
                NSError(domain: "App", code: 1, userInfo: [NSUnderlyingErrorKey: error as NSError])
            }
        }
    }

    static let end = TimeLimitEnd(clock: ElapsedClock(TestClock()), deadline: .seconds(3))

    @Test(arguments: Failure.allCases, Shape.allCases)
    func aDeadlineStopIsFoundWhereverTheCodeInBetweenPutIt(_ failure: Failure, _ shape: Shape) {
        let signal = TimeLimitSignal()
        let error = failure.make()
        signal.noteDeadlineStop(NestedDeadlineStop(error: error, end: Self.end))
        let found = signal.takeDeadlineStops(of: shape.wrap(error))
        #expect(found.count == 1 && found.first === Self.end)
    }

    /// Another failure of the same domain and code, though the policy's failure keeps what tells
    /// it apart, is not the policy's stop: an enclosing limit that fired reports its own time-out.
    @Test(arguments: Failure.allCases, Shape.allCases)
    func aDeadlineStopIsNotTakenForAnotherFailureOfItsDomainAndCode(_ failure: Failure, _ shape: Shape) {
        let signal = TimeLimitSignal()
        signal.noteDeadlineStop(NestedDeadlineStop(error: failure.make(), end: Self.end))
        #expect(signal.takeDeadlineStops(of: shape.wrap(failure.make())).isEmpty)
    }

    /// A Swift value bridged on Linux keeps only its domain and code: the stop is known by those,
    /// when no stop is found by identity.
    @Test(arguments: Shape.allCases)
    func aSwiftValuesStopIsKnownByItsDomainAndCodeWhenNothingElseSurvives(_ shape: Shape) {
        let signal = TimeLimitSignal()
        let error: any Error = OwnError()
        signal.noteDeadlineStop(NestedDeadlineStop(error: error, end: Self.end))
        let found = signal.takeDeadlineStops(of: shape.wrap(error))
        #expect(found.count == 1 && found.first === Self.end)
    }

    @Test(arguments: Failure.allCases, Shape.allCases)
    func aLateErrorsAgeIsFoundWhereverTheCodeInBetweenPutIt(_ failure: Failure, _ shape: Shape) {
        let signal = TimeLimitSignal()
        let error = failure.make()
        signal.noteLateError(error, age: .seconds(8))
        #expect(signal.takeLateErrorAge(of: shape.wrap(error)) == .seconds(8))
        #expect(signal.takeLateErrorAge(of: shape.wrap(error)) == nil)  // the limit asks once
    }

    /// An age taken for another failure would have the layers above wait less than its server
    /// asked: not even a Swift value's domain and code, which any failure of its type shares,
    /// stands for the failure the policy waited on.
    @Test(arguments: Shape.allCases)
    func aLateErrorsAgeIsNotTakenForAnotherFailure(_ shape: Shape) {
        for failure in Failure.allCases {
            let signal = TimeLimitSignal()
            signal.noteLateError(failure.make(), age: .seconds(8))
            #expect(signal.takeLateErrorAge(of: shape.wrap(failure.make())) == nil, "\(failure)")
        }
        let signal = TimeLimitSignal()
        let error: any Error = OwnError()
        signal.noteLateError(error, age: .seconds(8))
        let wrapped = shape.wrap(error)
        let kept = signal.takeLateErrorAge(of: wrapped)
        switch shape {
        case .asThrown, .inAnAppEnum: #expect(kept == .seconds(8))
        case .bridged, .underNSUnderlyingErrorKey, .bridgedUnderNSUnderlyingErrorKey:
            // The same box on Apple platforms, where bridging keeps the Swift value; a new value on Linux.
            #expect(kept == nil || kept == .seconds(8))
        }
    }

    /// A `URLError` keeps an `NSError` instance inside, yet as a Swift value it is not one: another
    /// `URLError` of the same code, for another URL, is another failure, not the policy's stop.
    @Test func anotherURLErrorOfTheSameCodeIsNotThePolicysStop() {
        let signal = TimeLimitSignal()
        let stopped = URLError(
            .timedOut, userInfo: [NSURLErrorFailingURLErrorKey: URL(string: "https://a.example/x")!])
        signal.noteDeadlineStop(NestedDeadlineStop(error: stopped, end: Self.end))
        let other = URLError(
            .timedOut, userInfo: [NSURLErrorFailingURLErrorKey: URL(string: "https://b.example/y")!])
        #expect(signal.takeDeadlineStops(of: other).isEmpty)
    }

    struct Upstream: Error { let host: String }

    /// End to end: a policy stops at its own deadline (2 s) with `Upstream("a")`; the code in
    /// between then throws another failure in its place, a fresh Swift value never bridged, while
    /// the Timeout (5 s) fired in the same move. That failure is not the policy's stop, even of the
    /// same type (the same bridged domain and code): the limit reports its time-out.
    @Test(arguments: [true, false])
    func anUnbridgedSwiftErrorOfTheSameTypeIsNotThePolicysStop(sameType: Bool) async throws {
        let failure: @Sendable (String) -> any Error = { sameType ? Upstream(host: $0) : OwnError() }
        let clock = TestClock()
        let timeout = try Timeout(.seconds(5), name: "limit", clock: clock)
        let policy = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(2),
            clock: clock, generator: SeededRandomNumberGenerator(seed: 1))
        let call = Task {
            try await timeout.execute { () async throws -> Int in
                do {
                    return try await policy.execute { () async throws -> Int in throw Upstream(host: "a") }
                } catch {
                    // The limit's watcher, woken by the same move, fires and cancels this task first.
                    for _ in 0..<10_000 where !Task.isCancelled { await Task.yield() }
                    #expect(Task.isCancelled, "the limit fired")
                    throw failure("b")
                }
            }
        }
        await clock.waitForSleepers(count: 2)  // the limit's timer and the policy's backoff
        clock.advance(by: .seconds(10))
        let result = await call.result
        #expect(result.failureValue is TimeoutError, "\(result)")
    }
}
