import Dispatch
import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Where code runs, read synchronously where it is called: on ``DedicatedThread``'s thread, or
/// on the main queue, which runs the main actor's jobs.
private enum Place {
    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the calling code runs on the caller's actor, `DedicatedThread` or the main actor.
    static func isOnTheCallersActor(mainActor: Bool) -> Bool {
        mainActor ? DispatchQueue.getSpecific(key: Self.mainQueueKey) == true : DedicatedThread.executor.isCurrentThread
    }
}

/// Records each event and whether it reached the observer on the caller's actor.
private final class PlaceRecordingObserver: StrategyObserver {
    let mainActor: Bool
    let events = Recorder<String>()
    let offTheActor = Recorder<String>()

    init(mainActor: Bool) { self.mainActor = mainActor }

    func observe(_ event: StrategyEvent) {
        self.events.record("\(event)")
        if !Place.isOnTheCallersActor(mainActor: self.mainActor) { self.offTheActor.record("\(event)") }
    }
}

/// What a test reads of a hedged call once it ended: the events, those heard off the caller's
/// actor, and whether every attempt ran on it.
private struct Heard {
    let events: [String]
    let offTheActor: [String]
    let attemptsOnTheActor: [Bool]
}

/// How each attempt of a hedged call behaves, by its number from 1.
enum HedgedCallPlan: Sendable {
    /// The first attempt answers 1 after 2 s; the hedge, started at 1 s, never answers: the first wins.
    case firstWins
    /// The first attempt never answers, the hedge answers 2 at once: the hedge wins.
    case hedgeWins
    /// The first attempt fails after 0.5 s, its replacement never answers, the hedge started
    /// beside it at 1 s answers 3 at once.
    case replacementThenHedge

    func run(_ attempt: Int, on clock: TestClock) async throws -> Int {
        switch (self, attempt) {
        case (.firstWins, 1):
            try await clock.sleep(for: .seconds(2))
            return 1
        case (.hedgeWins, 1), (.replacementThenHedge, 2), (.firstWins, _):
            try await clock.sleep(for: .seconds(1_000))
            return attempt
        case (.replacementThenHedge, 1):
            try await clock.sleep(for: .milliseconds(500))
            throw TransientError()
        default:
            return attempt
        }
    }

    /// The most hedges the call may start: after the last, no timer is armed for another.
    var maximumHedges: Int { self == .replacementThenHedge ? 2 : 1 }

    /// The attempts the call starts.
    var attempts: Int { self == .replacementThenHedge ? 3 : 2 }

    /// The value of the attempt that wins.
    var winner: Int {
        switch self {
        case .firstWins: 1
        case .hedgeWins: 2
        case .replacementThenHedge: 3
        }
    }

    /// Moves `clock` through the call, each step once the call waits for it.
    func drive(_ clock: TestClock) async {
        await clock.waitForSleepers(count: 2)  // the hedge's timer and the first attempt
        switch self {
        case .firstWins:
            clock.advance(by: .seconds(1))  // the hedge starts and hangs
            await clock.waitForSleepers(count: 2)  // the first attempt and the hedge
            clock.advance(by: .seconds(1))  // the first attempt answers
        case .hedgeWins:
            clock.advance(by: .seconds(1))
        case .replacementThenHedge:
            clock.advance(by: .milliseconds(500))  // the first attempt fails; its replacement starts at once
            await clock.waitForSleepers(count: 2)  // the hedge's timer and the replacement
            clock.advance(by: .milliseconds(500))
        }
    }
}

/// `StrategyObserver`'s events arrive "in the isolation of the caller whose call caused them":
/// a hedged call from a caller on an actor (the main actor, or a global actor with a thread of
/// its own) reports its `hedged` event on that actor, as its attempts run there, whichever
/// attempt wins, after a replacement too, and in a pipeline's hedging stage.
@Suite("Hedging: the observer hears a caller's events on the caller's actor", .timeLimit(.minutes(5)))
struct HedgingObserverIsolationTests {
    /// Runs a call as `plan` says, on the main actor or else on ``DedicatedThread``, through a
    /// pipeline holding the strategy when `inPipeline`.
    private static func call(_ plan: HedgedCallPlan, onMainActor: Bool = false, inPipeline: Bool = false) async throws
        -> Heard
    {
        let clock = TestClock()
        let observer = PlaceRecordingObserver(mainActor: onMainActor)
        let hedging = try Hedging(
            delay: .fixed(.seconds(1)), maximumHedges: plan.maximumHedges, name: "hedging", observer: observer,
            clock: clock)
        let pipeline = ResiliencePipeline { hedging }
        let attempts = Counter()
        let onTheActor = Recorder<Bool>()
        let answered = Counter()
        // Synchronous, so each runs where the attempt calling it runs.
        let begin = { @Sendable () -> Int in
            onTheActor.record(Place.isOnTheCallersActor(mainActor: onMainActor))
            return attempts.increment()
        }
        let answer = { @Sendable (value: Int) -> Int in
            answered.increment()
            return value
        }
        let call =
            onMainActor
            ? Task { @MainActor in
                try await hedging.execute { answer(try await plan.run(begin(), on: clock)) }
            }
            : Task { @DedicatedThread in
                inPipeline
                    ? try await pipeline.execute { answer(try await plan.run(begin(), on: clock)) }
                    : try await hedging.execute { answer(try await plan.run(begin(), on: clock)) }
            }
        await plan.drive(clock)
        try await yieldUntil("an attempt answered") { answered.value == 1 }
        #expect(try await call.value == plan.winner)
        return Heard(
            events: observer.events.values, offTheActor: observer.offTheActor.values,
            attemptsOnTheActor: onTheActor.values)
    }

    private static func expect(_ heard: Heard, _ plan: HedgedCallPlan) {
        #expect(
            heard.attemptsOnTheActor == Array(repeating: true, count: plan.attempts),
            "\(plan): attempts \(heard.attemptsOnTheActor)")
        #expect(heard.events == ["hedging: hedged"], "\(plan)")
        #expect(heard.offTheActor.isEmpty, "\(plan): heard off the caller's actor: \(heard.offTheActor)")
    }

    @Test func aHedgeThatWins() async throws {
        Self.expect(try await Self.call(.hedgeWins), .hedgeWins)
    }

    @Test func aFirstAttemptThatWinsOverAHedge() async throws {
        Self.expect(try await Self.call(.firstWins), .firstWins)
    }

    /// The replacement of a failed attempt is not a hedge; the hedge started beside it is.
    @Test func aHedgeBesideAReplacement() async throws {
        Self.expect(try await Self.call(.replacementThenHedge), .replacementThenHedge)
    }

    @Test func aPipelinesHedgingStage() async throws {
        Self.expect(try await Self.call(.hedgeWins, inPipeline: true), .hedgeWins)
        Self.expect(try await Self.call(.replacementThenHedge, inPipeline: true), .replacementThenHedge)
    }

    /// From the main actor, where an observer may rely on it (`MainActor.assumeIsolated`).
    @Test(arguments: [HedgedCallPlan.hedgeWins, .firstWins, .replacementThenHedge])
    func aMainActorCaller(_ plan: HedgedCallPlan) async throws {
        Self.expect(try await Self.call(plan, onMainActor: true), plan)
    }
}
