import Foundation
import Resilience
import ResilienceTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An operation that fails after a library time limit fired (it ignored the cancellation,
/// or was past its last cancellation point) says things about its request the rules must
/// honour: the limit's error keeps that failure, so a policy around the limit does not send
/// a `POST` again, nor retry a 429.
@Suite("A time limit keeps the operation's late failure", .timeLimit(.minutes(5)))
struct LateOperationErrorTests {
    /// Which library time limit ends the attempt, under an outer policy of 3 attempts.
    enum Limit: String, CaseIterable, Sendable {
        /// `RetryPolicy.outcome(attemptTimeout:)`.
        case policyAttemptTimeout
        /// A `Timeout` strategy called inside the policy's attempt.
        case timeoutStrategy
        /// A pipeline of a retry policy and a per-attempt `Timeout`.
        case pipelineTimeout
        /// A `Timeout` around a `Hedging` call, inside the policy's attempt.
        case timeoutAroundHedging

        /// How many tasks sleep on the clock while the first attempt waits.
        var sleepers: Int { self == .timeoutAroundHedging ? 2 : 1 }
    }

    /// What the operation fails with after the limit fired.
    enum Late: String, CaseIterable, Sendable {
        /// A validated response to a `POST`: a 503 that reports its request.
        case postAnswered503
        /// The same, wrapped in an app's own error enum.
        case postWrappedInAnAppError
        /// An SDK's `NSError` that records the request's idempotency in its `userInfo`.
        case postInUserInfo
        /// A 429 to an idempotent request.
        case tooManyRequests
        /// A 429 below `NSUnderlyingErrorKey`.
        case tooManyRequestsUnderlying

        var error: any Error {
            let post = Idempotency.http(method: "POST")
            switch self {
            case .postAnswered503:
                return HTTPResponseError(statusCode: 503, requestIdempotency: post)
            case .postWrappedInAnAppError:
                return AppError.transport(HTTPResponseError(statusCode: 503, requestIdempotency: post))
            case .postInUserInfo:
                return NSError(domain: "PaymentsSDK", code: 7, userInfo: [ErrorHints.requestIdempotencyKey: post])
            case .tooManyRequests:
                return StatusError(status: 429)
            case .tooManyRequestsUnderlying:
                return NSError(domain: "SDK", code: 1, userInfo: [NSUnderlyingErrorKey: StatusError(status: 429)])
            }
        }

        /// The stop the outer policy must make after the first attempt.
        var stopReason: RetryStopReason {
            switch self {
            case .postAnswered503, .postWrappedInAnAppError, .postInUserInfo: .notIdempotent
            case .tooManyRequests, .tooManyRequestsUnderlying: .tooManyRequests
            }
        }
    }

    enum AppError: Error {
        case transport(any Error)
    }

    static func outerPolicy(clock: TestClock, maximumAttempts: Int = 3) throws -> RetryPolicy {
        try RetryPolicy(maximumAttempts: maximumAttempts, backoff: .constant(.zero), jitter: .none, clock: clock)
    }

    /// Waits at `gate`, ignoring cancellation, until the task is cancelled.
    static func waitUntilCancelled(at gate: Gate) async {
        await withTaskCancellationHandler {
            await gate.wait()
        } onCancel: {
            gate.open()
        }
    }

    /// Runs `body` under `limit` (5 seconds) inside an outer policy; returns its outcome.
    static func call(
        under limit: Limit, clock: TestClock, maximumAttempts: Int = 3,
        _ body: @escaping @Sendable () async throws -> Int
    ) async throws -> RetryOutcome<Int> {
        let policy = try Self.outerPolicy(clock: clock, maximumAttempts: maximumAttempts)
        switch limit {
        case .policyAttemptTimeout:
            return await policy.outcome(attemptTimeout: .seconds(5)) { try await body() }
        case .timeoutStrategy:
            let timeout = try Timeout(.seconds(5), clock: clock)
            return await policy.outcome { try await timeout.execute { try await body() } }
        case .pipelineTimeout:
            let pipeline = ResiliencePipeline {
                policy
                try! Timeout(.seconds(5), clock: clock)
            }
            // A pipeline reports no outcome: only the count and the error are checked.
            do {
                return RetryOutcome(
                    result: .success(try await pipeline.execute { try await body() }), attempts: 0,
                    stopReason: .succeeded, retryAfter: nil, elapsed: .zero)
            } catch {
                return RetryOutcome(
                    result: .failure(error), attempts: 0, stopReason: .notRetryable, retryAfter: nil,
                    elapsed: .zero)
            }
        case .timeoutAroundHedging:
            let timeout = try Timeout(.seconds(5), clock: clock)
            let hedging = try Hedging(delay: .fixed(.seconds(3_600)), clock: clock)
            return await policy.outcome {
                try await timeout.execute { try await hedging.execute { try await body() } }
            }
        }
    }

    /// Starts `body` under `limit`; once its first attempt waits at `gate` and the limit's timer
    /// sleeps, moves the clock past the limit. Returns the call's outcome.
    static func endFirstAttemptAtItsLimit(
        _ limit: Limit, clock: TestClock, gate: Gate, maximumAttempts: Int = 3,
        _ body: @escaping @Sendable () async throws -> Int
    ) async throws -> RetryOutcome<Int> {
        let call = Task { try await Self.call(under: limit, clock: clock, maximumAttempts: maximumAttempts, body) }
        await gate.waitForWaiters(count: 1)
        await clock.waitForSleepers(count: limit.sleepers)
        clock.advance(by: .seconds(5))
        return try await call.value
    }

    /// The first attempt sends, then waits (ignoring cancellation) until the limit cancels it,
    /// then fails with `late`; any later attempt sends and fails with it at once.
    static func lateFailing(_ late: Late, sent: Counter, gate: Gate) -> @Sendable () async throws -> Int {
        {
            if sent.increment() == 1 { await Self.waitUntilCancelled(at: gate) }
            throw late.error
        }
    }

    @Test(arguments: Limit.allCases, Late.allCases)
    func theLayerAboveDoesNotRepeatTheCall(_ limit: Limit, _ late: Late) async throws {
        let clock = TestClock()
        let sent = Counter()
        let gate = Gate()
        let outcome = try await Self.endFirstAttemptAtItsLimit(
            limit, clock: clock, gate: gate, Self.lateFailing(late, sent: sent, gate: gate))
        #expect(sent.value == 1, "\(late) under \(limit): sent \(sent.value) times")
        let error = try #require(outcome.result.error)
        #expect(error is AttemptTimeoutError || error is TimeoutError, "still a time-out: \(error)")
        if limit != .pipelineTimeout {
            #expect(outcome.attempts == 1)
            #expect(outcome.stopReason == late.stopReason)
        }
    }

    @Test func theLimitErrorKeepsTheLateErrorAndItsReport() async throws {
        for limit in [Limit.policyAttemptTimeout, .timeoutStrategy] {
            let clock = TestClock()
            let gate = Gate()
            let outcome = try await Self.endFirstAttemptAtItsLimit(
                limit, clock: clock, gate: gate, maximumAttempts: 1,
                Self.lateFailing(.postAnswered503, sent: Counter(), gate: gate))
            let error = try #require(outcome.result.error)
            let late: (any Error)?
            let idempotency: Idempotency?
            if let timeout = error as? AttemptTimeoutError {
                (late, idempotency) = (timeout.operationError, timeout.requestIdempotency)
            } else {
                let timeout = try #require(error as? TimeoutError)
                (late, idempotency) = (timeout.operationError, timeout.requestIdempotency)
            }
            #expect((late as? HTTPResponseError)?.statusCode == 503, "\(limit)")
            #expect(idempotency?.isIdempotent == false, "\(limit): the POST travels in the error itself")
        }
    }

    /// A late failure's retry-after hint counts, as the hint of any failure does.
    @Test(arguments: [Limit.policyAttemptTimeout, .timeoutStrategy])
    func aLateHintIsHonoured(_ limit: Limit) async throws {
        let clock = TestClock()
        let gate = Gate()
        let outcome = try await Self.endFirstAttemptAtItsLimit(limit, clock: clock, gate: gate, maximumAttempts: 1) {
            await Self.waitUntilCancelled(at: gate)
            throw StatusError(status: 503, hint: .seconds(30))
        }
        #expect(outcome.retryAfter == .seconds(30))
    }

    /// A late `CancellationError` is the limit's own cancellation said back: nothing is kept.
    @Test(arguments: [Limit.policyAttemptTimeout, .timeoutStrategy])
    func aLateCancellationIsKeptAsNothing(_ limit: Limit) async throws {
        let clock = TestClock()
        let gate = Gate()
        let outcome = try await Self.endFirstAttemptAtItsLimit(limit, clock: clock, gate: gate, maximumAttempts: 1) {
            await Self.waitUntilCancelled(at: gate)
            throw CancellationError()
        }
        let error = try #require(outcome.result.error)
        #expect((error as? AttemptTimeoutError).map { $0.operationError == nil } ?? true)
        #expect((error as? TimeoutError).map { $0.operationError == nil } ?? true)
        #expect(error is AttemptTimeoutError || error is TimeoutError)
    }

    /// An attempt that returns a value after its limit fired gives the call that value, once,
    /// under either limit: the work was done, and a time-out would have it done again.
    @Test(arguments: [Limit.policyAttemptTimeout, .timeoutStrategy])
    func aLateValueIsReturned(_ limit: Limit) async throws {
        let clock = TestClock()
        let gate = Gate()
        let sent = Counter()
        let outcome = try await Self.endFirstAttemptAtItsLimit(limit, clock: clock, gate: gate) {
            if sent.increment() == 1 { await Self.waitUntilCancelled(at: gate) }
            return 7
        }
        #expect(try outcome.result.get() == 7)
        #expect(outcome.attempts == 1)
        #expect(sent.value == 1)
    }

    /// An SDK that runs its own retry policy in a task the limit does not cancel: the inner
    /// policy stops because its request is a `POST`, and its error (which says nothing of the
    /// request) reaches the attempt after the limit fired. The inner policy's word counts.
    ///
    /// The SDK's task is an unstructured one started in the attempt: it inherits the attempt's
    /// scope, so the inner policy is part of the call, but not its cancellation. (A detached
    /// task inherits neither and is part of no call: see `NestedRetries`.)
    @Test(arguments: [Limit.policyAttemptTimeout, .timeoutStrategy])
    func aLateInnerNotIdempotentStopCounts(_ limit: Limit) async throws {
        let clock = TestClock()
        let gate = Gate()
        let sent = Counter()
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, clock: clock)
        let outcome = try await Self.endFirstAttemptAtItsLimit(limit, clock: clock, gate: gate) {
            let first = sent.increment() == 1
            // Unstructured: it inherits the attempt's scope, not its cancellation.
            let sdk = Task<Int, any Error> {
                try await inner.execute(idempotency: .notIdempotent) { () async throws -> Int in
                    if first { await gate.wait() }
                    throw URLError(.networkConnectionLost)
                }
            }
            return try await withTaskCancellationHandler {
                try await sdk.value
            } onCancel: {
                gate.open()  // the SDK's request fails once the attempt has been cancelled
            }
        }
        #expect(sent.value == 1, "sent \(sent.value) times")
        #expect(outcome.stopReason == .notIdempotent)
    }

    // MARK: - An inner policy's wait, cut short by the outer policy's time limit

    /// The server answered 503 with `Retry-After: 30`, and the inner policy waits the 30 s. The
    /// outer policy's attempt time limit (10 s) fires during that wait: the inner call ends with
    /// the failure it waited on, which the limit keeps, so the outer policy waits out the hint
    /// instead of re-sending after its own 1 s backoff, 11 s after the server asked for 30 s.
    @Test func aHintTheInnerPolicyWasWaitingOnIsHonouredByTheOuterPolicy() async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let calls = Recorder<Duration>()

        let call = Task {
            await outer.outcome(attemptTimeout: .seconds(10)) { () async throws -> Int in
                try await inner.execute { () throws -> Int in
                    calls.record(clock.now.offset)
                    if calls.values.count == 1 { throw StatusError(status: 503, hint: .seconds(30)) }
                    return 7
                }
            }
        }
        await clock.waitForSleepRequests(count: 2)  // the outer time limit and the inner 30 s wait
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(10))  // the outer time limit fires during the inner wait
        await clock.waitForSleepRequests(count: 3)  // the outer policy's wait before its retry
        let outerWait = try clock.sleepRequest(2)
        clock.advance(by: outerWait)  // exactly the outer policy's wait: the retry goes out now
        let outcome = await call.value

        #expect(try outcome.get() == 7)
        #expect(outerWait >= .seconds(20), "the outer policy waited \(outerWait) before re-sending")
        #expect(calls.values.count == 2)
        #expect(calls.values.last.map { $0 >= .seconds(30) } == true, "re-sent at \(calls.values)")
    }

    /// The same under a `Timeout` strategy inside the outer policy's attempt: its error keeps
    /// the inner policy's failure, hint included, which the analysis reads less the 10 s the
    /// inner policy had already waited on it.
    @Test func aTimeoutStrategyKeepsTheFailureAnInnerPolicyWaitedOn() async throws {
        let clock = TestClock()
        let timeout = try Timeout(.seconds(10), clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let call = Task {
            try await timeout.execute { () async throws -> Int in
                try await inner.execute { () throws -> Int in throw StatusError(status: 503, hint: .seconds(30)) }
            }
        }
        await clock.waitForSleepers(count: 2)  // the time limit and the inner 30 s wait
        clock.advance(by: .seconds(10))
        let error = try #require(await call.result.error)
        let limit = try #require(error as? TimeoutError)
        #expect(limit.operationError.map { $0 as? StatusError } == StatusError(status: 503, hint: .seconds(30)))
        #expect(FailureAnalysis(error).retryAfter == .seconds(20))
    }

    /// An inner policy that waits for the network after an offline failure, cut short by the
    /// outer policy's time limit, ends with the offline failure: the limit's error says the
    /// device is offline, as the failure did.
    @Test func anOfflineFailureTheInnerPolicyWaitedOnReachesTheOuterPolicy() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let outer = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let call = Task {
            await outer.outcome(attemptTimeout: .seconds(10)) { () async throws -> Int in
                try await inner.execute(waitingFor: wait) { () throws -> Int in throw URLError(.notConnectedToInternet)
                }
            }
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 2)  // the time limit and the wait's own limit
        clock.advance(by: .seconds(10))
        let outcome = await call.value
        let error = try #require(outcome.result.error)
        let limit = try #require(error as? AttemptTimeoutError)
        #expect((limit.operationError as? URLError)?.code == .notConnectedToInternet)
        #expect(FailureAnalysis(error).isOffline)
    }

    /// The same under a `POST`: the request never left the offline device, so the outer policy
    /// sends it again once the network is back, instead of stopping as if it might have
    /// reached the server.
    @Test func aNotIdempotentCallCutShortWhileAnInnerPolicyWaitedForTheNetworkIsSentAgain() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let sent = Counter()
        let ended = Counter()
        let call = Task {
            let outcome = await outer.outcome(attemptTimeout: .seconds(10), idempotency: .notIdempotent) {
                () async throws -> Int in
                try await inner.execute(waitingFor: wait) { () throws -> Int in
                    sent.increment()
                    guard network.connectivity.isOnline else { throw URLError(.notConnectedToInternet) }
                    return 7
                }
            }
            ended.increment()
            return outcome
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 2)  // the time limit and the wait's own limit
        clock.advance(by: .seconds(10))
        network.set(.online)
        // The outer policy either stops now or waits its backoff before sending again.
        try await yieldUntil { ended.value > 0 || clock.sleepRequests.count >= 3 }
        if clock.sleepRequests.count >= 3 { clock.advance(by: clock.sleepRequests[2]) }
        let outcome = await call.value
        #expect(outcome.stopReason == .succeeded)
        #expect(try outcome.get() == 7)
        #expect(sent.value == 2, "one offline attempt that never left, then the one that succeeded")
    }

    /// The same, but the inner policy's first try sent its request and lost the connection before
    /// the next found the network down: the attempt may have reached the server, so the outer
    /// policy does not send it again. The inner policy told the time limit when that try failed.
    @Test func aNotIdempotentCallWhoseAttemptSentARequestBeforeGoingOfflineIsNotSentAgain() async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let sent = Counter()
        let ended = Counter()
        let call = Task {
            let outcome = await outer.outcome(attemptTimeout: .seconds(10), idempotency: .notIdempotent) {
                () async throws -> Int in
                // The inner request is one that may run twice; the outer attempt as a whole may not.
                try await inner.execute(waitingFor: wait, idempotency: .idempotent) { () throws -> Int in
                    sent.increment()
                    if sent.value == 1 { throw URLError(.networkConnectionLost) }
                    guard network.connectivity.isOnline else { throw URLError(.notConnectedToInternet) }
                    return 7
                }
            }
            ended.increment()
            return outcome
        }
        await clock.waitForSleepers(count: 2)  // the time limit and the inner backoff
        clock.advance(by: .seconds(1))
        await network.waitForObservers(count: 1)  // the second try failed offline; the inner policy waits
        await clock.waitForSleepers(count: 2)  // the time limit and the wait's own limit
        clock.advance(by: .seconds(9))
        // The outer policy either stops now or waits its backoff before sending again (its fourth
        // sleep, after the time limit, the inner backoff and the wait's limit). The network comes
        // back only then: back at once, it could wake the inner wait before the limit, due at the
        // same instant, fired, and the inner policy's next try would answer the attempt.
        try await yieldUntil { ended.value > 0 || clock.sleepRequests.count >= 4 }
        network.set(.online)
        if clock.sleepRequests.count >= 4 { clock.advance(by: clock.sleepRequests[3]) }
        let outcome = await call.value
        #expect(outcome.stopReason == .notIdempotent)
        #expect(outcome.attempts == 1)
        #expect(sent.value == 2)
        let limit = try #require(outcome.result.error as? AttemptTimeoutError)
        #expect((limit.operationError as? URLError)?.code == .notConnectedToInternet)
        #expect(FailureAnalysis(limit).delivery == .mayHaveBeenSent)
    }

    /// The ways an attempt sends a `POST` the library knows may not run twice.
    enum DeclaredPost: CaseIterable, Sendable {
        case throughAPolicy
        case throughAPipeline
        case throughHedging
        case throughATimeout
        case throughAConnectivityPolicy
        case throughAPolicyInABreaker

        /// Sends the `POST`, counted in `posts`, which succeeds.
        func send(counting posts: Counter, clock: TestClock) async throws {
            switch self {
            case .throughAPolicy:
                let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
                _ = try await policy.execute(idempotency: .notIdempotent) { () throws -> Int in posts.increment() }
            case .throughAPipeline:
                let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
                let pipeline = ResiliencePipeline { policy }
                _ = try await pipeline.execute(idempotency: .notIdempotent) { () throws -> Int in posts.increment() }
            case .throughHedging:
                let hedging = try Hedging(delay: .fixed(.seconds(1)), clock: clock)
                _ = try await hedging.execute(idempotency: .notIdempotent) { () throws -> Int in posts.increment() }
            case .throughATimeout:
                let timeout = try Timeout(.seconds(100), clock: clock)
                _ = try await timeout.execute(idempotency: .notIdempotent) { () throws -> Int in posts.increment() }
            case .throughAConnectivityPolicy:
                let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
                let wait = ConnectivityWait(monitor: TestConnectivityMonitor(.online), limit: .seconds(5))
                _ = try await policy.execute(waitingFor: wait, idempotency: .notIdempotent) { () throws -> Int in
                    posts.increment()
                }
            case .throughAPolicyInABreaker:
                let policy = try RetryPolicy(maximumAttempts: 3, clock: clock)
                let breaker = try CircuitBreaker(name: "post", tripRule: .consecutiveFailures(3), clock: clock)
                _ = try await breaker.execute {
                    try await policy.execute(idempotency: .notIdempotent) { () throws -> Int in posts.increment() }
                }
            }
        }
    }

    /// The same, but the attempt's earlier request was a `POST` that succeeded, sent through a
    /// call declared not idempotent: it reached the server, so the outer policy does not send the
    /// attempt again, although the attempt's last request never left the offline device.
    @Test(arguments: DeclaredPost.allCases)
    func aNotIdempotentCallWhoseAttemptSentAPostThatSucceededBeforeGoingOfflineIsNotSentAgain(
        post: DeclaredPost
    ) async throws {
        let clock = TestClock()
        let network = TestConnectivityMonitor(.offline)
        let outer = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let wait = ConnectivityWait(monitor: network, limit: .seconds(600))
        let posts = Counter()
        let ended = Counter()
        let call = Task {
            let outcome = await outer.outcome(attemptTimeout: .seconds(10), idempotency: .notIdempotent) {
                () async throws -> Int in
                try await post.send(counting: posts, clock: clock)
                // A request that may run twice, which finds the device offline.
                return try await inner.execute(waitingFor: wait, idempotency: .idempotent) { () throws -> Int in
                    guard network.connectivity.isOnline else { throw URLError(.notConnectedToInternet) }
                    return 7
                }
            }
            ended.increment()
            return outcome
        }
        await network.waitForObservers(count: 1)
        await clock.waitForSleepers(count: 2)  // the time limit and the wait's own limit
        clock.advance(by: .seconds(10))
        // The outer policy either stops now or waits its backoff before sending again; the network
        // comes back only then, so that it cannot wake the inner wait before the limit fired.
        try await yieldUntil { ended.value > 0 || clock.sleepRequests.count >= 3 }
        network.set(.online)
        if clock.sleepRequests.count >= 3 { clock.advance(by: clock.sleepRequests[2]) }
        let outcome = await call.value
        #expect(outcome.stopReason == .notIdempotent, "stopped with \(outcome.stopReason)")
        #expect(posts.value == 1, "the POST that succeeded was sent again")
        let limit = try #require(outcome.result.error as? AttemptTimeoutError)
        #expect(FailureAnalysis(limit).delivery == .mayHaveBeenSent)
    }

    /// An inner policy that waits for a credential refresh, cut short by the outer policy's time
    /// limit, ends with the credential failure, which the limit keeps.
    @Test func aCredentialFailureTheInnerPolicyWaitedOnReachesTheOuterPolicy() async throws {
        let clock = TestClock()
        let gate = Gate()
        let recovery = CredentialRecovery(credential: "old", clock: clock) { _ -> String in
            await gate.wait()
            return "new"
        }
        let outer = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let call = Task {
            await outer.outcome(attemptTimeout: .seconds(10)) {
                try await inner.execute(recovering: recovery, operation: RefreshedTokenAPI.operation)
            }
        }
        await recovery.waitForWaitingCalls(count: 1)
        await clock.waitForSleepers(count: 1)  // the time limit
        clock.advance(by: .seconds(10))
        let outcome = await call.value
        gate.open()
        let limit = try #require(outcome.result.error as? AttemptTimeoutError)
        #expect((limit.operationError as? HTTPResponseError)?.statusCode == 401)
    }

    /// The caller's own cancellation, not a limit of the library's, still ends an inner
    /// policy's wait with `CancellationError`, inside an outer time limit or not.
    @Test(arguments: [false, true])
    func theCallersCancellationDuringAnInnerWaitStillEndsWithCancellation(underALimit: Bool) async throws {
        let clock = TestClock()
        let outer = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let inner = try RetryPolicy(maximumAttempts: 3, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let operation: @Sendable () async throws -> Int = {
            try await inner.execute { () throws -> Int in throw StatusError(status: 503, hint: .seconds(30)) }
        }
        let call = Task {
            underALimit
                ? await outer.outcome(attemptTimeout: .seconds(60), operation: operation)
                : await outer.outcome(operation: operation)
        }
        await clock.waitForSleepers(count: underALimit ? 2 : 1)
        call.cancel()
        let outcome = await call.value
        #expect(outcome.result.error is CancellationError, "ended with \(String(describing: outcome.result.error))")
        #expect(outcome.stopReason == .cancelled)
    }
}

/// What a time limit's error means everywhere else stays the same with a late failure kept.
@Suite("A time limit's error with a late failure is still a time-out")
struct LateOperationErrorMeaningTests {
    static let post = Idempotency.http(method: "POST")

    static func limits(keeping late: any Error) -> [any Error] {
        [
            AttemptTimeoutError(timeout: .seconds(5), operationError: late),
            TimeoutError(timeoutName: "t", timeout: .seconds(5), operationError: late),
        ]
    }

    @Test func theRulesReadTheLateFacts() {
        let late = HTTPResponseError(
            statusCode: 429, headers: ["Retry-After": "12"], requestIdempotency: Self.post)
        for error in Self.limits(keeping: late) {
            let analysis = FailureAnalysis(error)
            #expect(analysis.isTooManyRequests)
            #expect(analysis.retryAfter == .seconds(12))
            #expect(analysis.requestIdempotency?.isIdempotent == false)
            #expect(Rulebook.stopReason(for: analysis, idempotency: .idempotent) == .tooManyRequests)
        }
        for error in Self.limits(keeping: URLError(.notConnectedToInternet)) {
            #expect(FailureAnalysis(error).isOffline)
        }
    }

    /// A late offline failure that proves its request never left makes the time-out's request
    /// one that never left too, which a breaker does not count: the dependency was not reached;
    /// a late failure that only proves it was not sent (a limiter's refusal) does not, nor does
    /// an offline one that may have been sent.
    @Test func aLateOfflineFailureThatNeverLeftSaysSoForTheTimeOut() {
        let offline = URLError(.notConnectedToInternet)
        let nested = TimeoutError(timeoutName: "inner", timeout: .seconds(1), operationError: offline)
        for error in Self.limits(keeping: offline) + Self.limits(keeping: nested) {
            let analysis = FailureAnalysis(error)
            #expect(analysis.delivery == .notSent)
            #expect(analysis.interruption == .timeLimit, "still a time-out")
            #expect(Rulebook.countsAsFailure(analysis) == false, "nothing reached the dependency")
            #expect(Rulebook.stopReason(for: analysis, idempotency: .notIdempotent) == nil)
        }
        let lates: [any Error] = [
            LimiterRejectionError(limiterName: "l", reason: .queueFull),
            // Offline, but another request the failure reports may have been sent.
            NSError(
                domain: "SDK", code: 1,
                userInfo: [
                    NSUnderlyingErrorKey: URLError(.notConnectedToInternet),
                    "NSMultipleUnderlyingErrorsKey": [URLError(.networkConnectionLost)],
                ]),
            TimeoutError(timeoutName: "inner", timeout: .seconds(1)),
        ]
        for late in lates {
            for error in Self.limits(keeping: late) {
                #expect(FailureAnalysis(error).delivery == .mayHaveBeenSent, "\(late)")
            }
        }
    }

    @Test func aLimitNestedInALateErrorIsReadToo() {
        let inner = TimeoutError(
            timeoutName: "inner", timeout: .seconds(1), operationError: StatusError(status: 429))
        for error in Self.limits(keeping: inner) {
            #expect(FailureAnalysis(error).isTooManyRequests)
        }
    }

    /// ``ErrorHints`` answers as the analysis does: a late 429 and a late hint count, through
    /// nested limits and bridged; a late status is not the time-out's.
    @Test func errorHintsAgreeWithTheAnalysisOnALateFailure() {
        let late = HTTPResponseError(statusCode: 429, headers: ["Retry-After": "12"])
        let inner = TimeoutError(timeoutName: "inner", timeout: .seconds(1), operationError: late)
        let errors = Self.limits(keeping: late) + Self.limits(keeping: inner)
        for error in errors {
            for shaped in [error] + BridgedLibraryErrorTests.BridgedShape.allCases.map({ $0.shape(error) }) {
                let analysis = FailureAnalysis(shaped)
                #expect(analysis.isTooManyRequests, "\(shaped)")
                #expect(ErrorHints.isTooManyRequests(shaped) == analysis.isTooManyRequests, "\(shaped)")
                #expect(analysis.retryAfter == .seconds(12), "\(shaped)")
                #expect(ErrorHints.retryAfter(of: shaped) == analysis.retryAfter, "\(shaped)")
                #expect(analysis.httpStatus == nil, "\(shaped)")
                #expect(ErrorHints.httpStatus(of: shaped) == analysis.httpStatus, "\(shaped)")
            }
        }
    }

    /// A late limiter's refusal is a time-out too, which no breaker counts: it ended in front of
    /// the dependency (see `CircuitBreakerHealthCountingTests`).
    @Test func itStaysATimeOutForEverythingElse() {
        let lates: [any Error] = [HTTPResponseError(statusCode: 404), URLError(.cancelled), PermanentError()]
        for late in lates {
            let limits = Self.limits(keeping: late)
            // Bridged, the late error is kept under a key of the library's, not below the time-out.
            let bridged = limits.flatMap { limit in
                [BridgedLibraryErrorTests.BridgedShape.bridged, .plainCopy].map { $0.shape(limit) }
            }
            for error in limits + bridged {
                let analysis = FailureAnalysis(error)
                #expect(analysis.interruption == .timeLimit)
                #expect(analysis.delivery == .mayHaveBeenSent)
                #expect(analysis.httpStatus == nil)
                #expect(!analysis.isLocalRejection)
                #expect(Rulebook.countsAsFailure(analysis) == true, "a breaker counts it")
                let context = RetryContext(attempt: 1)
                #expect(HTTPRetryClassifier().decision(for: error, context: context) == nil, "\(late)")
                #expect(DefaultRetryClassifier().decision(for: error, context: context)?.isRetryable == true)
                #expect(ErrorHints.httpStatus(of: error) == nil)
                #expect((error as NSError).userInfo[NSUnderlyingErrorKey] == nil)
                #expect((error as NSError).code == 1)
            }
        }
    }

    @Test func equalityLeavesTheLateErrorOut() {
        #expect(
            AttemptTimeoutError(timeout: .seconds(5), operationError: TransientError())
                == AttemptTimeoutError(timeout: .seconds(5)))
        #expect(
            TimeoutError(timeoutName: "t", timeout: .seconds(5), operationError: TransientError())
                == TimeoutError(timeoutName: "t", timeout: .seconds(5)))
    }
}
