import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A call declared not idempotent (or whose classifier declares it so) whose attempt holds a
/// nested call declared not idempotent that succeeded (the `POST`), and then fails in a way that by
/// itself proves nothing was sent (the receipt's `GET` found the connection refused, a limiter or
/// a breaker refused it, the server asked for credentials). The POST reached the server: the
/// attempt may not run again ("Which calls may be repeated": "an attempt that holds it and fails
/// afterwards ... is not run again. The policy around stops with notIdempotent and the attempt's
/// own error ... however its classifier judges that error").
@Suite("A succeeded POST stops the declared call around it", .timeLimit(.minutes(5)))
struct SucceededPOSTInDeclaredCallTests {
    enum After: String, CaseIterable, Sendable {
        case refusedConnection, rateLimiterRejection, breakerRejection, http401
    }

    enum Around: String, CaseIterable, Sendable {
        /// `policy.outcome(idempotency: .notIdempotent)`, the workaround the article shows.
        case declaredPolicy
        /// A policy whose classifier declares a POST: `HTTPRetryClassifier(method: "POST")`.
        case postClassifierPolicy
        /// `pipeline.execute(idempotency: .notIdempotent)` around a plain policy stage.
        case declaredPipeline
        /// A plain policy inside a call declared not idempotent (it inherits the declaration).
        case inheritingPolicy
        /// `Timeout.execute(idempotency: .notIdempotent)` around a plain policy.
        case declaredTimeout
        /// `Hedging.execute(idempotency: .notIdempotent)` around a plain policy.
        case declaredHedging
        /// The `standardHTTP` preset's pipeline, declared not idempotent.
        case declaredStandardHTTP
        /// Control: the same attempt under `policy.outcome(idempotency: .idempotent)`.
        case idempotentControl
    }

    /// How the POST declares itself.
    enum Post: String, CaseIterable, Sendable {
        case declaredPolicy, declaredTimeout, declaredPipeline, declaredHedging
        /// A policy whose classifier declares a POST, with no declaration of its own.
        case postClassifier
        /// The same with a deadline, so that it hands a scope down whatever the scope around it declares.
        case postClassifierWithDeadline
    }

    struct Run {
        var attempts: Int
        var posts: Int
        var stopReason: RetryStopReason?
    }

    static func run(_ around: Around, _ after: After, _ postForm: Post) async throws -> Run {
        let clock = TestClock()
        let orders = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let postOrders = try RetryPolicy(
            maximumAttempts: 1, classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
        let postOrdersWithDeadline = try RetryPolicy(
            maximumAttempts: 1, classifier: HTTPRetryClassifier(method: "POST"), deadline: .seconds(100_000),
            clock: clock)
        let orderTimeout = try Timeout(.seconds(100_000), clock: clock)
        let orderPipeline = ResiliencePipeline { try! ConcurrencyLimiter(limit: 2, clock: clock) }
        let orderHedging = try Hedging(delay: .fixed(.seconds(100_000)), maximumHedges: 1, clock: clock)
        let posts = ReliabilityCounter()
        let attempts = ReliabilityCounter()
        let spent = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(3_600)), name: "receipts",
            maximumWait: .zero, clock: clock)
        _ = try await spent.execute { 1 }
        let open = try CircuitBreaker(
            name: "receipts", tripRule: .consecutiveFailures(1), pushback: .disabled, clock: clock)
        _ = try? await open.execute { () throws -> Int in throw TransientError() }

        let attempt: @Sendable () async throws -> Int = {
            _ = attempts.increment()
            let send: @Sendable () async throws -> Int = { posts.increment() }  // the POST
            switch postForm {
            case .declaredPolicy: _ = try await orders.execute(idempotency: .notIdempotent, operation: send)
            case .postClassifier: _ = try await postOrders.execute(operation: send)
            case .postClassifierWithDeadline: _ = try await postOrdersWithDeadline.execute(operation: send)
            case .declaredTimeout: _ = try await orderTimeout.execute(idempotency: .notIdempotent, operation: send)
            case .declaredPipeline: _ = try await orderPipeline.execute(idempotency: .notIdempotent, operation: send)
            case .declaredHedging: _ = try await orderHedging.execute(idempotency: .notIdempotent, operation: send)
            }
            // The receipt's GET, which never reaches the server:
            switch after {
            case .refusedConnection: throw URLError(.cannotConnectToHost)
            case .rateLimiterRejection: return try await spent.execute { 1 }
            case .breakerRejection: return try await open.execute { 1 }
            case .http401: throw HTTPResponseError(statusCode: 401)
            }
        }
        // Waits up to an hour, so that a rejection's hint does not end the call first.
        func policy(_ classifier: any RetryClassifier = ClosureRetryClassifier { _, _ in .retry }) throws
            -> RetryPolicy
        {
            try RetryPolicy(
                maximumAttempts: 3, backoff: .constant(.zero), jitter: .none, classifier: classifier,
                maximumRetryAfter: .seconds(7_200), clock: clock)
        }
        let plain = try policy()
        let post = try policy(HTTPRetryClassifier(method: "POST"))
        let outer = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let timeout = try Timeout(.seconds(100_000), clock: clock)
        let hedging = try Hedging(delay: .fixed(.seconds(100_000)), maximumHedges: 1, clock: clock)
        let standard = try ResiliencePipeline<StandardHTTPStrategies>.standardHTTP(
            totalTimeout: .seconds(100_000), maximumAttempts: 3, attemptTimeout: .seconds(100_000), clock: clock)
        let call = Task { () -> RetryOutcome<Int>? in
            switch around {
            case .declaredPolicy:
                return await plain.outcome(idempotency: .notIdempotent, operation: attempt)
            case .idempotentControl:
                return await plain.outcome(idempotency: .idempotent, operation: attempt)
            case .postClassifierPolicy:
                return await post.outcome(operation: attempt)
            case .declaredPipeline:
                let pipeline = ResiliencePipeline { plain }
                _ = try? await pipeline.execute(idempotency: .notIdempotent, operation: attempt)
                return nil
            case .declaredTimeout:
                _ = try? await timeout.execute(idempotency: .notIdempotent) {
                    try await plain.execute(operation: attempt)
                }
                return nil
            case .declaredHedging:
                _ = try? await hedging.execute(idempotency: .notIdempotent) {
                    try await plain.execute(operation: attempt)
                }
                return nil
            case .declaredStandardHTTP:
                _ = try? await standard.execute(idempotency: .notIdempotent, operation: attempt)
                return nil
            case .inheritingPolicy:
                return await outer.outcome(idempotency: .notIdempotent) {
                    try await plain.outcome(operation: attempt).get()
                }
            }
        }
        // Moves time to the end of each wait the call sleeps (a rejection's hint, an hour at most),
        // never to the time limits and hedges 100,000 seconds away, which sleep while the call runs.
        let mover = Task.detached {
            while await clock.advanceToNextDeadline(within: .seconds(7_200)) != nil {}
        }
        let outcome = await call.value
        mover.cancel()
        return Run(attempts: attempts.value, posts: posts.value, stopReason: outcome?.stopReason)
    }

    /// An enclosing call that may not run twice (declared, inherited, or a POST classifier's)
    /// hears of the nested POST's success, however the POST declares itself, and does not retry a
    /// failure that proves only the later request never left.
    @Test(
        "A call declared not idempotent does not run again an attempt whose POST succeeded",
        arguments: [
            Around.declaredPolicy, .postClassifierPolicy, .declaredPipeline, .declaredHedging, .inheritingPolicy,
        ],
        After.allCases)
    func declaredCallAfterSucceededPOST(around: Around, after: After) async throws {
        for postForm in Post.allCases {
            try await Self.check(around, after, postForm)
        }
    }

    /// A POST whose policy's classifier declares it (`HTTPRetryClassifier(method: "POST")`) tells
    /// the layers around it of its success when an enclosing call declared it not idempotent: the
    /// declaration is what it is judged by, on its failures and on its success alike.
    @Test(
        "A POST classifier's success is heard under an enclosing not-idempotent declaration",
        arguments: [Around.declaredTimeout, .declaredStandardHTTP], After.allCases)
    func postClassifierUnderADeclaration(around: Around, after: After) async throws {
        try await Self.check(around, after, .postClassifier)
        try await Self.check(around, after, .postClassifierWithDeadline)
    }

    /// Under a call declared `.idempotent`, the same POST classifier's word gives way to the
    /// declaration on its success too, as it does on its failures: the attempt runs again after a
    /// failure the declared call retries, and the POST goes out once per attempt.
    @Test("A POST classifier's success does not stop a call declared idempotent", arguments: After.allCases)
    func postClassifierUnderAnIdempotentDeclaration(after: After) async throws {
        for postForm in [Post.postClassifier, .postClassifierWithDeadline] {
            let run = try await Self.run(.idempotentControl, after, postForm)
            #expect(run.attempts >= 2, "\(after), POST by \(postForm): the attempt ran \(run.attempts) times")
            #expect(
                run.posts == run.attempts,
                "\(after), POST by \(postForm): \(run.posts) POSTs in \(run.attempts) attempts")
        }
    }

    /// The control: the same attempt under `.idempotent` runs again after a failure that proves
    /// nothing was sent when its nested call may run twice, so the tests above can fail.
    @Test("Without a nested call that may not run twice, the attempt runs again")
    func idempotentNestedCallLetsTheAttemptRunAgain() async throws {
        let clock = TestClock()
        let attempts = ReliabilityCounter()
        let inner = try RetryPolicy(maximumAttempts: 1, clock: clock)
        let outer = try RetryPolicy(
            maximumAttempts: 3, backoff: .constant(.zero), jitter: .none,
            classifier: ClosureRetryClassifier { _, _ in .retry }, clock: clock)
        let outcome = await outer.outcome(idempotency: .idempotent) { () async throws -> Int in
            _ = attempts.increment()
            _ = try await inner.execute { 1 }
            throw URLError(.cannotConnectToHost)
        }
        #expect(attempts.value == 3)
        #expect(outcome.stopReason == .exhausted)
    }

    static func check(_ around: Around, _ after: After, _ postForm: Post) async throws {
        let run = try await Self.run(around, after, postForm)
        #expect(run.posts == 1, "\(around), \(after), POST by \(postForm): the POST was sent \(run.posts) times")
        #expect(run.attempts == 1, "\(around), \(after), POST by \(postForm): the attempt ran \(run.attempts) times")
        if let reason = run.stopReason, around != .inheritingPolicy {
            #expect(
                reason == .notIdempotent || (after == .http401 && reason == .authenticationRequired),
                "\(around), \(after), POST by \(postForm): stopped with \(reason)")
        }
    }
}
