import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Some apps and libraries keep one error value and throw it every time (a `static let`, a
/// cached "offline" error). An outer policy around an inner one, both failing with that stored
/// value, is called again and again in one task: each call sends what the inner policy sends,
/// however many calls came before it, and the outer policy stops each time because the inner
/// one retried.
@Suite("Nested retries: one stored error value, call after call", .timeLimit(.minutes(5)))
struct NestedRetriesStoredErrorTests {
    /// A stored failure of a kind an app keeps.
    enum Stored: String, CaseIterable, CustomTestStringConvertible {
        case swiftStruct, nsError, urlError
        var testDescription: String { self.rawValue }

        /// A new value of this kind, to be stored and thrown again and again.
        func make() -> any Error {
            switch self {
            case .swiftStruct: TransientError(id: 61)
            case .nsError: NSError(domain: "stored", code: 503)
            case .urlError: URLError(.timedOut)
            }
        }
    }

    private typealias Call = NestedSend

    /// Calls `outer` around `inner` `times` times in a row, the inner operation throwing `stored`;
    /// `between` wraps the inner call (a breaker, a time limit), the identity by default.
    private static func calls(
        _ times: Int, stored: any Error, clock: TestClock,
        pair: @escaping @Sendable () throws -> (outer: RetryPolicy, inner: RetryPolicy),
        between: @escaping @Sendable (@escaping @Sendable () async throws -> Void) async throws -> Void = {
            try await $0()
        }
    ) async -> [Call] {
        return await driveThroughEveryWait(clock) { () -> [Call] in
            var calls: [Call] = []
            for _ in 0..<times {
                let attempts = Counter()
                guard let (outer, inner) = try? pair() else { return [] }
                let outcome = await outer.outcome {
                    try await between {
                        try await inner.execute {
                            attempts.increment()
                            throw stored
                        }
                    }
                }
                calls.append(Call(attempts: attempts.value, stop: outcome.stopReason))
            }
            return calls
        }
    }

    @Test(arguments: Stored.allCases)
    func theSamePairCalledAgainSendsThreeEachTime(stored: Stored) async throws {
        let clock = TestClock()
        let (outer, inner) = (try NestedSend.policy(clock), try NestedSend.policy(clock))
        let calls = await Self.calls(5, stored: stored.make(), clock: clock) { (outer, inner) }
        #expect(calls == Array(repeating: NestedSend.nested, count: 5))
    }

    @Test(arguments: Stored.allCases)
    func aPairRebuiltForEachCallSendsThreeEachTime(stored: Stored) async throws {
        let clock = TestClock()
        let calls = await Self.calls(4, stored: stored.make(), clock: clock) {
            (try NestedSend.policy(clock), try NestedSend.policy(clock))
        }
        #expect(calls == Array(repeating: NestedSend.nested, count: 4))
    }

    @Test func aBreakerBetweenTheLayersChangesNothing() async throws {
        let clock = TestClock()
        let (outer, inner) = (try NestedSend.policy(clock), try NestedSend.policy(clock))
        // Never opens here: the stored error goes through it unchanged.
        let breaker = try CircuitBreaker(name: "between", tripRule: .consecutiveFailures(1_000), clock: clock)
        let calls = await Self.calls(
            4, stored: Stored.urlError.make(),
            clock: clock, pair: { (outer, inner) },
            between: { operation in try await breaker.execute { try await operation() } })
        #expect(calls == Array(repeating: NestedSend.nested, count: 4))
    }

    @Test func aTimeoutBetweenTheLayersChangesNothing() async throws {
        let clock = TestClock()
        let (outer, inner) = (try NestedSend.policy(clock), try NestedSend.policy(clock))
        // On a clock of its own that never moves: the limit never fires.
        let timeout = try Timeout(.seconds(60), clock: TestClock())
        let calls = await Self.calls(
            4, stored: Stored.swiftStruct.make(),
            clock: clock, pair: { (outer, inner) },
            between: { operation in try await timeout.execute { try await operation() } })
        #expect(calls == Array(repeating: NestedSend.nested, count: 4))
    }

    /// An outer policy with a deadline hands a scope down and numbers each of its calls: the
    /// same holds there.
    @Test func anOuterCallThatHandsAScopeDownSendsThreeEachTime() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.milliseconds(10)), jitter: .none, deadline: .seconds(60),
            clock: clock)
        let inner = try NestedSend.policy(clock)
        let calls = await Self.calls(4, stored: Stored.nsError.make(), clock: clock) { (outer, inner) }
        #expect(calls == Array(repeating: NestedSend.nested, count: 4))
    }

    /// A call whose inner policy stopped because its request was not idempotent leaves that word
    /// for its own outer policy only: a later idempotent pair failing with the same stored value in
    /// the same task is told its inner policy retried, not that its request may not run twice.
    @Test func aNotIdempotentWordIsNotReadByALaterCall() async throws {
        let clock = TestClock()
        let stored = Stored.swiftStruct.make()
        let (postOuter, postInner) = (try NestedSend.policy(clock), try NestedSend.policy(clock))
        let (getOuter, getInner) = (try NestedSend.policy(clock), try NestedSend.policy(clock))
        let calls = await driveThroughEveryWait(clock) { () -> [Call] in
            var calls: [Call] = []
            for _ in 0..<2 {
                let post = Counter()
                let posted = await postOuter.outcome {
                    try await postInner.execute(idempotency: .notIdempotent) {
                        post.increment()
                        throw stored
                    }
                }
                calls.append(Call(attempts: post.value, stop: posted.stopReason))
                let get = Counter()
                let got = await getOuter.outcome {
                    try await getInner.execute {
                        get.increment()
                        throw stored
                    }
                }
                calls.append(Call(attempts: get.value, stop: got.stopReason))
            }
            return calls
        }
        let post = Call(attempts: 1, stop: .notIdempotent)
        #expect(calls == [post, NestedSend.nested, post, NestedSend.nested])
    }

    /// Two tasks call their own pair again and again at the same time, all failing with one
    /// stored value: each call of each sends three.
    @Test func twoTasksReusingOneStoredErrorEachSendThreeACall() async throws {
        let stored = Stored.urlError.make()
        let pairs = try (0..<2).map { _ in
            let clock = TestClock()
            return (clock, try NestedSend.policy(clock), try NestedSend.policy(clock))
        }
        let results = await withTaskGroup(of: [Call].self) { group in
            for (clock, outer, inner) in pairs {
                group.addTask { await Self.calls(4, stored: stored, clock: clock) { (outer, inner) } }
            }
            return await group.reduce(into: [[Call]]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: Array(repeating: NestedSend.nested, count: 4), count: 2))
    }

    /// Calls with nothing around them to read their word keep joining one record for a stored
    /// value in one task: one record, however many calls there were, its word read by a call
    /// that began before the latest.
    @Test func aRecordNobodyTakesStaysOneRecord() {
        let stored: any Error = TransientError(id: 62)
        let address = NestedRetryLedger.Address(call: NestedRetryLedger.newCall(), tasks: [1])
        for _ in 0..<48 {
            NestedRetryLedger.record(.exhausted, for: stored, to: address)
        }
        #expect(NestedRetryLedger.recordCount(for: stored) == 1)
        let taker = NestedRetryLedger.Taker(call: address.call, task: 1, ownsCall: true)
        #expect(NestedRetryLedger.take(stored, by: taker, writtenAfter: 0) == .exhausted)
    }
}
