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
struct HedgingEventTests {
    /// The observer receives a `hedged` event for each attempt started while another of the call
    /// still runs, and none for an attempt that replaces a failed one with none running. An attempt
    /// whose start comes at the very clock instant another attempt fails is a tie the strategy
    /// may read either way (the failure and the hedge delay are taken in no set order): it may
    /// be reported, never required. Time moves only while the call waits (``driveCall``), to the
    /// next deadline of an attempt or of the hedge delay.
    @Test(arguments: 0..<20)
    func hedgedEventsCountTheAttemptsStartedBesideARunningOne(seed: UInt64) async throws {
        var random = SeededRandomNumberGenerator(seed: seed)
        let clock = CallClock()
        let watchers = WatcherList()
        let events = StrategyEventRecorder()
        let maximumHedges = Int.random(in: 1...3, using: &random)
        let hedging = watchers.add(
            try Hedging(delay: .fixed(.seconds(1)), maximumHedges: maximumHedges, observer: events, clock: clock))
        // Per attempt: fail after `n` seconds, or hang (answer after 50 s).
        let plans = (0...maximumHedges).map { _ in
            (fails: Bool.random(using: &random), after: Int64.random(in: 0...2, using: &random))
        }
        let live = Lock(0)
        let besideRunning = Lock(0)
        let starts = Counter()
        let startInstants = Lock<[CallClock.Instant]>([])
        let endInstants = Lock<[CallClock.Instant]>([])
        let call = Task<Int, any Error> {
            try await CallClock.$isCallTask.withValue(true) {
                try await hedging.execute { () async throws -> Int in
                    let attempt = starts.increment()
                    if attempt > 1 { startInstants.withLock { $0.append(clock.now) } }
                    live.withLock { value in
                        if attempt > 1, value > 0 { besideRunning.withLock { $0 += 1 } }
                        value += 1
                    }
                    defer {
                        endInstants.withLock { $0.append(clock.now) }
                        live.withLock { $0 -= 1 }
                    }
                    let plan = plans[min(attempt - 1, plans.count - 1)]
                    if plan.fails {
                        if plan.after > 0 { try await clock.sleep(for: .seconds(plan.after)) }
                        throw StatusError(status: 503)
                    }
                    try await clock.sleep(for: .seconds(50))
                    return attempt
                }
            }
        }
        let (_, stalled) = await driveCall(call, on: clock, watching: watchers)
        #expect(!stalled, "seed \(seed): the call did not end; plans \(plans)")
        #expect(starts.value <= maximumHedges + 1)
        let ends = endInstants.withLock { $0 }
        let ties = startInstants.withLock { $0 }.filter { ends.contains($0) }.count
        let beside = besideRunning.withLock { $0 }
        let hedged = events.count(.hedged)
        #expect(
            hedged >= beside && hedged <= beside + ties,
            "seed \(seed): \(starts.value) started, \(beside) beside a running one, \(ties) tied, \(hedged) hedged events; plans \(plans)"
        )
    }
}
