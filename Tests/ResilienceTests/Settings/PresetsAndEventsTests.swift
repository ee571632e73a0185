import Foundation
import Resilience
import ResilienceTesting
import Testing

/// Settings valid by construction build policies, budgets, breakers and registries without `try`,
/// and every event can be made by hand to test an observer.
@Suite struct PresetsAndEventsTests {
    // MARK: - Presets

    @Test func aDefaultPolicyNeedsNoTryAndHasThePackageDefaults() async throws {
        let policy = RetryPolicy(configuration: .default)
        #expect(policy.name == "default")
        #expect(policy.configuration == .default)
        #expect(policy.maximumAttempts == 3)
        #expect(policy.backoff == .default)
        #expect(policy.jitter == .full)
        #expect(policy.deadline == nil)
        #expect(policy.maximumRetryAfter == .seconds(60))
        #expect(try await policy.execute { 42 } == 42)
    }

    /// Made in a function that cannot throw: without plain initializers, `RetryPolicy()` and
    /// `CircuitBreaker(name:)` would pick the validating ones and not compile here.
    private static func defaultsWithoutTry() -> (RetryPolicy, CircuitBreaker) {
        (RetryPolicy(), CircuitBreaker(name: "inventory"))
    }

    @Test func thePlainInitializersNeedNoTryAndMatchTheDefaults() async throws {
        let (policy, breaker) = Self.defaultsWithoutTry()
        #expect(policy.name == "default")
        #expect(policy.configuration == .default)
        #expect(policy.configuration == RetryPolicy(configuration: .default).configuration)
        #expect(try await policy.execute { 42 } == 42)

        let reference = CircuitBreaker(name: "inventory", configuration: .default)
        #expect(breaker.name == "inventory")
        #expect(breaker.state == .closed)
        #expect(breaker.configuration.tripRule == reference.configuration.tripRule)
        #expect(breaker.configuration.openDuration == reference.configuration.openDuration)
        #expect(breaker.configuration.maximumProbes == reference.configuration.maximumProbes)
        #expect(breaker.configuration.successesToClose == reference.configuration.successesToClose)
        #expect(breaker.configuration.probeLease == reference.configuration.probeLease)
        #expect(breaker.configuration.pushback == reference.configuration.pushback)
        #expect(breaker.configuration.slowCallRule == nil)

        // Any other setting still goes through validation.
        #expect(throws: ConfigurationError.self) { try RetryPolicy(maximumAttempts: 0) }
        #expect(throws: ConfigurationError.self) { try CircuitBreaker(name: "x", maximumProbes: 0) }
    }

    @Test func thePolicyFromAConfigurationMatchesTheThrowingInitializer() throws {
        let configuration = try RetryPolicyConfiguration(
            maximumAttempts: 5, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(9),
            maximumRetryAfter: .seconds(2))
        let fromConfiguration = RetryPolicy(name: "a", configuration: configuration)
        let fromParameters = try RetryPolicy(
            name: "a", maximumAttempts: 5, backoff: .constant(.seconds(1)), jitter: .none, deadline: .seconds(9),
            maximumRetryAfter: .seconds(2))
        #expect(fromConfiguration.configuration == configuration)
        #expect(fromParameters.configuration == configuration)
    }

    @Test func aDefaultBudgetBreakerAndRegistryNeedNoTry() throws {
        let budget = RetryBudget(configuration: .default)
        #expect(budget.maximumTokens == 10)
        #expect(budget.tokenRatio == 0.1)
        #expect(budget.configuration == .default)

        let breaker = CircuitBreaker(name: "inventory", configuration: .default)
        #expect(breaker.state == .closed)
        #expect(breaker.configuration.tripRule == .consecutiveFailures(5))

        let settings = try CircuitBreakerRegistryConfiguration(
            maximumCount: 2, breaker: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(3)))
        let registry = CircuitBreakerRegistry<String>(name: "hosts", configuration: settings)
        #expect(registry.maximumCount == 2)
        let made = registry.breaker(for: "a")
        #expect(made.name == "hosts[a]")
        #expect(made.configuration.tripRule == .consecutiveFailures(3))
        _ = registry.breaker(for: "b")
        _ = registry.breaker(for: "c")
        #expect(registry.count == 2)

        // The throwing initializer that takes a breaker configuration is still chosen for `.default`.
        let shared = try CircuitBreakerRegistry<String>(name: "shared", configuration: .default, maximumCount: 7)
        #expect(shared.maximumCount == 7)
    }

    @Test func decodedSettingsBuildAPolicyWithTheCodeThatIsNotSettings() async throws {
        let json = #"{"maximumAttempts": 2, "backoff": {"kind": "constant", "delay": "250ms"}, "jitter": "none"}"#
        let configuration = try JSONDecoder().decode(RetryPolicyConfiguration.self, from: Data(json.utf8))
        let clock = TestClock()
        let events = Recorder<RetryScheduledEvent>()
        let policy = RetryPolicy(
            name: "inventory", configuration: configuration, observer: ScheduledLog(events: events), clock: clock,
            generator: SeededRandomNumberGenerator(seed: 1))
        let attempts = Counter()
        let outcome = await withTaskGroup(of: RetryOutcome<Int>.self) { group in
            group.addTask {
                await policy.outcome {
                    if attempts.increment() == 1 { throw TransientError() }
                    return 7
                }
            }
            await advanceThroughSleeps(clock, count: 1)
            return await group.next()!
        }
        #expect(try outcome.get() == 7)
        #expect(clock.sleepRequests == [.milliseconds(250)])
        #expect(events.values.map(\.policyName) == ["inventory"])
        #expect(events.values.map(\.delay) == [.milliseconds(250)])
    }

    @Test func aDecodedBreakerConfigurationTakesAClassifierAfterwards() throws {
        var configuration = try JSONDecoder().decode(
            CircuitBreakerConfiguration.self,
            from: Data(#"{"tripRule": {"kind": "consecutiveFailures", "count": 1}}"#.utf8))
        configuration.classifier = ClosureCircuitBreakerFailureClassifier { _ in false }
        let breaker = CircuitBreaker(name: "lenient", configuration: configuration)
        #expect(breaker.configuration.classifier.countsAsFailure(TransientError()) == false)
    }

    // MARK: - Events a test makes by hand

    struct ScheduledLog: RetryObserver {
        var events: Recorder<RetryScheduledEvent>
        func retryScheduled(_ event: RetryScheduledEvent) { self.events.record(event) }
    }

    /// A user's observer under test: it counts retries per policy and remembers breakers that opened.
    final class Metrics: RetryObserver, CircuitBreakerObserver {
        let lines = Recorder<String>()

        func attemptFailed(_ event: RetryAttemptFailedEvent) {
            self.lines.record("\(event.policyName) attempt \(event.attempt) failed, status \(event.httpStatus ?? 0)")
        }

        func retryScheduled(_ event: RetryScheduledEvent) {
            self.lines.record("\(event.policyName) retry in \(event.delay)")
        }

        func callFinished(_ event: RetryCallFinishedEvent) {
            self.lines.record("\(event.policyName) \(event.stopReason) after \(event.attempts)")
        }

        func stateChanged(_ event: CircuitBreakerStateChangeEvent) {
            self.lines.record("\(event.breakerName) \(event.from) -> \(event.to) for \(event.openDuration ?? .zero)")
        }

        func callRejected(_ event: CircuitBreakerRejectionEvent) {
            self.lines.record("\(event.breakerName) rejected while \(event.state)")
        }
    }

    @Test func handMadeEventsReachAUsersObserver() {
        let metrics = Metrics()
        metrics.attemptFailed(.init(policyName: "search", attempt: 1, error: TransientError(), httpStatus: 503))
        metrics.retryScheduled(
            .init(policyName: "search", attempt: 1, delay: .milliseconds(200), error: TransientError()))
        metrics.callFinished(.init(policyName: "search", attempts: 2, stopReason: .succeeded, elapsed: .seconds(1)))
        metrics.stateChanged(
            .init(
                breakerName: "db", from: .closed, to: .open, reason: .tripped, generation: 1, at: .seconds(3),
                openDuration: .seconds(30)))
        metrics.callRejected(.init(breakerName: "db", state: .open, retryAfter: .seconds(29)))
        #expect(
            metrics.lines.values == [
                "search attempt 1 failed, status 503",
                "search retry in 0.2 seconds",
                "search succeeded after 2",
                "db closed -> open for 30.0 seconds",
                "db rejected while open",
            ])
    }

    @Test func aHandMadeSnapshotDefaultsItsCountsToZero() {
        let snapshot = CircuitBreakerSnapshot(
            name: "db", state: .open, remainingOpenTime: .seconds(5), takenAt: .seconds(10))
        #expect(snapshot.name == "db")
        #expect(snapshot.state == .open)
        #expect(snapshot.consecutiveFailures == 0)
        #expect(snapshot.failureRate == nil)
        #expect(snapshot.remainingOpenTime == .seconds(5))
        #expect(
            snapshot
                == CircuitBreakerSnapshot(
                    name: "db", state: .open, remainingOpenTime: .seconds(5), takenAt: .seconds(10)))
    }

    @Test func everyRetryEventCarriesThePolicysName() async throws {
        let metrics = Metrics()
        let clock = TestClock()
        let policy = try RetryPolicy(
            name: "billing", maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, observer: metrics,
            clock: clock)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { _ = await policy.outcome { () throws -> Int in throw StatusError(status: 503) } }
            await advanceThroughSleeps(clock, count: 1)
            await group.waitForAll()
        }
        #expect(
            metrics.lines.values == [
                "billing attempt 1 failed, status 503",
                "billing retry in 1.0 seconds",
                "billing attempt 2 failed, status 503",
                "billing exhausted after 2",
            ])
    }
}
