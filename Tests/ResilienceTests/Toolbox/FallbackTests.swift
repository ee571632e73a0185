import Resilience
import ResilienceTesting
import Testing

@Suite("Fallback")
struct FallbackTests {
    @Test func answersAFailureWithTheOriginalErrorAtHand() async throws {
        let seen = Recorder<String>()
        let fallback = Fallback<String> { context in
            seen.record("\(context.error)")
            #expect(context.error is TransientError)
            #expect(!context.isRejection)
            return "cached"
        }
        let value = try await fallback.execute { () async throws -> String in throw TransientError(id: 7) }
        #expect(value == "cached")
        #expect(seen.values == ["TransientError(id: 7)"])
    }

    @Test func passesASuccessThroughUntouched() async throws {
        let fallback = Fallback<Int>.value(0)
        #expect(try await fallback.execute { 5 } == 5)
    }

    @Test func neverAnswersForTheCallersCancellation() async throws {
        let used = Counter()
        let fallback = Fallback<Int> { _ in
            used.increment()
            return 0
        }
        await #expect(throws: CancellationError.self) {
            try await fallback.execute { () async throws -> Int in throw CancellationError() }
        }
        #expect(used.value == 0)
    }

    @Test func answersAnOpenBreakerAsARejection() async throws {
        let breaker = try CircuitBreaker(name: "down", tripRule: .consecutiveFailures(1), clock: TestClock())
        _ = try? await breaker.execute { () async throws -> Int in throw TransientError() }
        let fallback = Fallback<Int> { context in context.isRejection ? -1 : -2 }
        let value = try await fallback.execute { try await breaker.execute { 1 } }
        #expect(value == -1)
    }

    @Test func rethrowsWhatItsPredicateDeclines() async throws {
        let fallback = Fallback<Int>(handles: { $0.analysis.httpStatus != 404 }, answer: { _ in 0 })
        await #expect(throws: StatusError.self) {
            try await fallback.execute { () async throws -> Int in throw StatusError(status: 404) }
        }
        #expect(try await fallback.execute { () async throws -> Int in throw StatusError(status: 503) } == 0)
    }

    @Test func reportsEachAnswerToItsObserver() async throws {
        struct Log: StrategyObserver {
            let kinds: Recorder<StrategyEvent.Kind>
            func observe(_ event: StrategyEvent) { self.kinds.record(event.kind) }
        }
        let kinds = Recorder<StrategyEvent.Kind>()
        let fallback = Fallback<Int>(observer: Log(kinds: kinds)) { _ in 0 }
        _ = try await fallback.execute { 1 }
        _ = try await fallback.execute { () async throws -> Int in throw TransientError() }
        #expect(kinds.values == [.fallbackUsed])
    }

    @Test func tenThousandConcurrentCallsEachGetTheirOwnAnswer() async throws {
        let fallback = Fallback<Int> { context in -((context.error as? TransientError)?.id ?? 0) }
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for index in 0..<10_000 {
                group.addTask {
                    let value = try await fallback.execute { () async throws -> Int in
                        if index.isMultiple(of: 2) { throw TransientError(id: index) }
                        return index
                    }
                    return (index, value)
                }
            }
            return try await group.reduce(into: [(Int, Int)]()) { $0.append($1) }
        }
        #expect(results.count == 10_000)
        #expect(results.allSatisfy { index, value in value == (index.isMultiple(of: 2) ? -index : index) })
    }
}
