import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// Where a piece of code ran, as `label`: isolated to ``DedicatedThread`` as the compiler
/// sees it, and on its thread as it ran. Synchronous, so that it reads the thread it is called on.
private func place(_ label: String, isolation: isolated (any Actor)? = #isolation) -> String {
    let isolated = isolation === DedicatedThread.shared
    let onThread = DedicatedThread.executor.isCurrentThread
    return
        "\(label): \(isolated && onThread ? "on the caller's actor" : "off it (isolated \(isolated), on its thread \(onThread))")"
}

/// A caller isolated to a global actor of its own keeps it through a hedged call: the call's
/// first attempt, each hedge and replacement (run concurrently, each in a task of its own), and
/// the caller's code after the call all run on the caller's actor, as the operation's isolation
/// is the caller's (`@_inheritActorContext`); a pipeline's stages inside a hedging stage too.
@Suite("Hedging: a caller on a global actor keeps it", .timeLimit(.minutes(5)))
struct HedgingCallerIsolationTests {
    /// Every place recorded, each expected on the caller's actor.
    static func expectOnTheCallersActor(_ places: [String], count: Int) {
        #expect(places.count == count, "\(places)")
        for place in places { #expect(place.hasSuffix("on the caller's actor"), "\(place)") }
    }

    /// The check itself: code run off the caller's actor reads so.
    @Test func codeRunOffTheActorReadsSo() async {
        let off = await Task.detached { place("a detached task") }.value
        #expect(!off.hasSuffix("on the caller's actor"), "\(off)")
    }

    @Test @DedicatedThread func aFirstAttemptThatReturnsAtOnce() async throws {
        let places = Recorder<String>()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
        let value = try await hedging.execute { () async throws -> Int in
            places.record(place("first attempt"))
            return 1
        }
        places.record(place("after the call"))
        #expect(value == 1)
        Self.expectOnTheCallersActor(places.values, count: 2)
    }

    @Test @DedicatedThread func aFirstAttemptThatSuspendsAndWins() async throws {
        let places = Recorder<String>()
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let call = Task { @DedicatedThread in
            let value = try await hedging.execute { () async throws -> Int in
                places.record(place("first attempt, before it suspends"))
                try await clock.sleep(for: .milliseconds(500))
                places.record(place("first attempt, resumed"))
                return 1
            }
            places.record(place("after the call"))
            return value
        }
        await clock.waitForSleepers(count: 2)  // the first attempt, and the hedge's timer
        clock.advance(by: .milliseconds(500))
        #expect(try await call.value == 1)
        places.record(place("the test, after the call"))
        Self.expectOnTheCallersActor(places.values, count: 4)
    }

    @Test @DedicatedThread func aHedgeThatWins() async throws {
        let places = Recorder<String>()
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
        let attempts = Counter()
        let call = Task { @DedicatedThread in
            let value = try await hedging.execute { () async throws -> Int in
                let attempt = attempts.increment()
                places.record(place("attempt \(attempt)"))
                if attempt == 1 { try await clock.sleep(for: .seconds(60)) }
                return attempt
            }
            places.record(place("after the call"))
            return value
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))
        #expect(try await call.value == 2)
        Self.expectOnTheCallersActor(places.values, count: 3)
    }

    @Test @DedicatedThread func aReplacementOfAFailedAttempt() async throws {
        let places = Recorder<String>()
        let clock = TestClock()
        let hedging = try Hedging(delay: .fixed(.seconds(10)), clock: clock)
        let attempts = Counter()
        let call = Task { @DedicatedThread in
            let value = try await hedging.execute { () async throws -> Int in
                let attempt = attempts.increment()
                places.record(place("attempt \(attempt)"))
                if attempt == 1 {
                    try await clock.sleep(for: .seconds(1))
                    throw TransientError()
                }
                return attempt
            }
            places.record(place("after the call"))
            return value
        }
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(1))  // the first attempt fails; its replacement starts at once
        #expect(try await call.value == 2)
        Self.expectOnTheCallersActor(places.values, count: 3)
    }

    /// A pipeline's hedging stage between other stages: the stages inside it and the operation run
    /// on the caller's actor, in the first attempt and in the hedge, and so does the caller after.
    @Test @DedicatedThread func aPipelinesHedgingStage() async throws {
        let places = Recorder<String>()
        let clock = TestClock()
        let attempts = Counter()
        let pipeline = try ResiliencePipeline {
            try RetryPolicy(maximumAttempts: 2, clock: clock)
            try Timeout(.seconds(30), clock: clock)
            try Hedging(delay: .fixed(.seconds(1)), clock: clock)
            PlaceProbe(places: places)
            CircuitBreaker(name: "inside")
        }
        let call = Task { @DedicatedThread in
            let value = try await pipeline.execute { () async throws -> Int in
                let attempt = attempts.increment()
                places.record(place("attempt \(attempt)"))
                if attempt == 1 { try await clock.sleep(for: .seconds(60)) }
                return attempt
            }
            places.record(place("after the call"))
            return value
        }
        // The timeout's timer, the first attempt, and the hedge's timer.
        await clock.waitForSleepers(count: 3)
        clock.advance(by: .seconds(1))
        #expect(try await call.value == 2)
        Self.expectOnTheCallersActor(places.values, count: 5)
    }
}

/// A pipeline stage that records where it runs.
private struct PlaceProbe: ResilienceStrategy {
    let places: Recorder<String>

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        self.places.record(place("the stage inside the hedging stage"))
        return try await operation.run()
    }
}
