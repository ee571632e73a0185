import Resilience
import ResilienceTesting
import Testing

/// What counts as a failure, and server pushback.
@Suite struct CircuitBreakerClassificationTests {
    static func breaker(
        tripRule: CircuitBreakerTripRule = .consecutiveFailures(1),
        classifier: some CircuitBreakerFailureClassifier = DefaultCircuitBreakerFailureClassifier(),
        pushback: CircuitBreakerPushback = .default,
        clock: TestClock = TestClock()
    ) throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "classified", tripRule: tripRule, openDuration: .fixed(.seconds(30)), classifier: classifier,
            pushback: pushback, clock: clock)
    }

    @Test(arguments: [400, 401, 403, 404, 409, 422, 451])
    func clientErrorsDoNotCount(status: Int) async throws {
        let breaker = try Self.breaker()
        await breaker.fail(with: HTTPFailure(status: status))
        #expect(breaker.state == .closed)
        #expect(breaker.snapshot().consecutiveFailures == 0)
    }

    @Test(arguments: [408, 429, 500, 502, 503, 504])
    func timeoutsThrottlingAndServerErrorsCount(status: Int) async throws {
        let breaker = try Self.breaker()
        await breaker.fail(with: HTTPFailure(status: status))
        #expect(breaker.state == .open)
    }

    @Test func errorsWithoutAStatusCount() async throws {
        let breaker = try Self.breaker()
        await breaker.fail(with: ServiceFailure())
        #expect(breaker.state == .open)
    }

    @Test func aCancellationErrorDoesNotCount() async throws {
        let breaker = try Self.breaker()
        await breaker.fail(with: CancellationError())
        #expect(breaker.state == .closed)
    }

    @Test func aCancelledCallDoesNotCountWhateverItThrows() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(clock: clock)
        let call = Task {
            try await breaker.execute {
                do {
                    try await clock.sleep(for: .seconds(10))
                } catch {
                    throw HTTPFailure(status: 503)  // a transport layer reporting the abort its own way
                }
            }
        }
        await clock.waitForSleepers(count: 1)
        call.cancel()
        await #expect(throws: HTTPFailure.self) { try await call.value }
        #expect(breaker.state == .closed)
    }

    @Test func aCancelledCallDoesNotCountEvenWithAClassifierThatCountsEverything() async throws {
        let clock = TestClock()
        let breaker = try Self.breaker(classifier: ClosureCircuitBreakerFailureClassifier { _ in true }, clock: clock)
        let call = Task {
            try await breaker.execute { try await clock.sleep(for: .seconds(10)) }
        }
        await clock.waitForSleepers(count: 1)
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(breaker.state == .closed)
    }

    @Test func aCustomClassifierDecides() async throws {
        // `.closure` needs `@Sendable` spelled out: Swift 6.3 does not infer it through `some` parameters.
        let breaker = try Self.breaker(classifier: .closure { @Sendable error in !(error is ServiceFailure) })
        await breaker.fail(with: ServiceFailure())
        #expect(breaker.state == .closed)
        await breaker.fail(with: HTTPFailure(status: 404))
        #expect(breaker.state == .open)
    }

    @Test func defaultClassifierRules() {
        let classifier = DefaultCircuitBreakerFailureClassifier()
        #expect(!classifier.countsAsFailure(CancellationError()))
        #expect(!classifier.countsAsFailure(HTTPFailure(status: 404)))
        #expect(classifier.countsAsFailure(HTTPFailure(status: 408)))
        #expect(classifier.countsAsFailure(HTTPFailure(status: 429)))
        #expect(classifier.countsAsFailure(HTTPFailure(status: 500)))
        #expect(classifier.countsAsFailure(ServiceFailure()))
        #expect(
            classifier.countsAsFailure(CircuitBreakerOpenError(breakerName: "inner", state: .open, retryAfter: nil)))
    }

    /// The default classifier answers a direct question as the breaker reads the failure,
    /// through the whole chain: a cancellation or a limiter's or a throttle's rejection does not
    /// count however it is wrapped, an inner breaker's rejection does.
    @Test(arguments: LibraryErrorShape.allCases)
    func defaultClassifierRulesReadTheWholeChain(shape: LibraryErrorShape) {
        let classifier = DefaultCircuitBreakerFailureClassifier()
        let notCounted: [any Error] = [
            LimiterRejectionError(limiterName: "uploads", reason: .queueFull),
            AdaptiveThrottleRejection(rejectionProbability: 0.9),
        ]
        for error in notCounted {
            #expect(!classifier.countsAsFailure(shape.wrap(error)), "\(shape): \(error)")
        }
        if !shape.bridges {
            #expect(!classifier.countsAsFailure(shape.wrap(CancellationError())), "\(shape)")
        }
        let inner = CircuitBreakerOpenError(breakerName: "inner", state: .open, retryAfter: nil)
        #expect(classifier.countsAsFailure(shape.wrap(inner)), "\(shape)")
        #expect(classifier.countsAsFailure(shape.wrap(HTTPFailure(status: 503))), "\(shape)")
    }

    /// The classifier judges the error it is asked about, not the task asking.
    @Test func defaultClassifierJudgesTheErrorNotTheTaskAsking() async {
        let classifier = DefaultCircuitBreakerFailureClassifier()
        let counts = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return classifier.countsAsFailure(HTTPFailure(status: 503))
        }.value
        #expect(counts)
    }

    // MARK: - Pushback

    @Test func a429WithRetryAfterFiveSecondsOpensItForAtLeastFiveSeconds() async throws {
        let clock = TestClock()
        let observer = RecordingBreakerObserver()
        let breaker = try CircuitBreaker(
            name: "throttled", tripRule: .consecutiveFailures(5), pushback: .tooManyRequests(), observer: observer,
            clock: clock)
        await breaker.fail(with: HTTPFailure(status: 429, retryAfter: .seconds(5)))
        #expect(breaker.state == .open)
        #expect(observer.changes.first?.reason == .pushback)
        #expect(observer.changes.first?.openDuration == .seconds(5))

        clock.advance(by: .milliseconds(4_999))
        let error = await #expect(throws: CircuitBreakerOpenError.self) {
            try await breaker.execute { 1 }
        }
        #expect(error?.retryAfter == .milliseconds(1))
        clock.advance(by: .milliseconds(1))
        #expect(try await breaker.execute { 2 } == 2)
        #expect(breaker.state == .closed)
    }

    @Test func pushbackIsOnByDefaultFor429() async throws {
        let breaker = try CircuitBreaker(
            name: "default-pushback", tripRule: .consecutiveFailures(5), clock: TestClock())
        await breaker.fail(with: HTTPFailure(status: 429, retryAfter: .seconds(5)))
        #expect(breaker.snapshot().remainingOpenTime == .seconds(5))
    }

    @Test func disabledPushbackLeavesItToTheTripRule() async throws {
        let breaker = try Self.breaker(tripRule: .consecutiveFailures(5), pushback: .disabled)
        await breaker.fail(with: HTTPFailure(status: 429, retryAfter: .seconds(5)))
        #expect(breaker.state == .closed)
        #expect(breaker.snapshot().consecutiveFailures == 1)
    }

    @Test func the429RuleIgnoresHintsOnOtherStatuses() async throws {
        let breaker = try Self.breaker(tripRule: .consecutiveFailures(5))
        await breaker.fail(with: HTTPFailure(status: 503, retryAfter: .seconds(5)))
        #expect(breaker.state == .closed)
    }

    @Test func anyRetryAfterHonoursHintsOnOtherFailures() async throws {
        let breaker = try Self.breaker(tripRule: .consecutiveFailures(5), pushback: .anyRetryAfter())
        await breaker.fail(with: HTTPFailure(status: 503, retryAfter: .seconds(7)))
        #expect(breaker.snapshot().remainingOpenTime == .seconds(7))
    }

    @Test func hintsAreCappedAtTheMaximum() async throws {
        let breaker = try Self.breaker(
            tripRule: .consecutiveFailures(5), pushback: .tooManyRequests(maximum: .seconds(60)))
        await breaker.fail(with: HTTPFailure(status: 429, retryAfter: .seconds(86_400)))
        #expect(breaker.snapshot().remainingOpenTime == .seconds(60))
    }

    @Test func a429WithoutAHintCountsButDoesNotOpenByItself() async throws {
        let breaker = try Self.breaker(tripRule: .consecutiveFailures(2))
        await breaker.fail(with: HTTPFailure(status: 429))
        #expect(breaker.state == .closed)
        await breaker.fail(with: HTTPFailure(status: 429, retryAfter: .zero))
        #expect(breaker.state == .open)
        #expect(breaker.snapshot().remainingOpenTime == .seconds(30))
    }

    @Test func anUncountedFailureCausesNoPushback() async throws {
        let breaker = try Self.breaker(
            tripRule: .consecutiveFailures(5), classifier: ClosureCircuitBreakerFailureClassifier { _ in false },
            pushback: .anyRetryAfter())
        await breaker.fail(with: HTTPFailure(status: 429, retryAfter: .seconds(5)))
        #expect(breaker.state == .closed)
    }
}
