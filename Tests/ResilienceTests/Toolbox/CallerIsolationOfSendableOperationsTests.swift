import Foundation
import Resilience
import ResilienceTesting
import Testing

/// The entry points whose operation must be `@Sendable` (it runs in a child task, or in
/// several copies at once) still run a `@MainActor` caller's closure in the caller's
/// isolation, as a pipeline does: the closure is isolated to the actor it was written on.
///
/// `#isolation` inside the closure names the actor the closure is isolated to, which is
/// the actor it runs on. (Under `swift test` on Linux the main actor's jobs need not run on
/// the process's main thread, so `Thread.isMainThread` says nothing here.)
@Suite struct CallerIsolationOfSendableOperationsTests {
    @MainActor final class Screen {
        var title = ""
    }

    @Test @MainActor func aPipelineRunsAMainActorCallersClosureOnTheMainActor() async throws {
        let pipeline = try ResiliencePipeline { try Timeout(.seconds(5), clock: TestClock()) }
        let isolated = try await pipeline.execute { #isolation === MainActor.shared }
        #expect(isolated)
    }

    @Test @MainActor func hedgingRunsAMainActorCallersClosureOnTheMainActor() async throws {
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
        let isolated = try await hedging.execute { #isolation === MainActor.shared }
        #expect(isolated, "the closure is not isolated to the caller's actor")
    }

    @Test @MainActor func anAttemptTimeoutRunsAMainActorCallersClosureOnTheMainActor() async throws {
        let policy = try RetryPolicy(clock: TestClock())
        let isolated = try await policy.execute(attemptTimeout: .seconds(5)) { #isolation === MainActor.shared }
        let outcome = await policy.outcome(attemptTimeout: .seconds(5)) { #isolation === MainActor.shared }
        #expect(isolated, "execute: the closure is not isolated to the caller's actor")
        #expect(try outcome.get(), "outcome: the closure is not isolated to the caller's actor")
    }

    /// The closures touch the caller's main-actor state as they are, without `@MainActor in`
    /// (which would not compile were they not isolated to the main actor).
    @Test @MainActor func aMainActorCallersClosureMayTouchItsStateUnderHedgingAndAnAttemptTimeout() async throws {
        let screen = Screen()
        let policy = try RetryPolicy(clock: TestClock())
        try await policy.execute(attemptTimeout: .seconds(5)) { screen.title = "timed" }
        #expect(screen.title == "timed")
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
        try await hedging.execute { screen.title = "hedged" }
        #expect(screen.title == "hedged")
    }

    /// A closure written outside any actor stays nonisolated.
    @Test func aNonisolatedCallersClosureStaysNonisolated() async throws {
        let policy = try RetryPolicy(clock: TestClock())
        let timed = try await policy.execute(attemptTimeout: .seconds(5)) { #isolation == nil }
        let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: TestClock())
        let hedged = try await hedging.execute { #isolation == nil }
        #expect(timed)
        #expect(hedged)
    }
}
