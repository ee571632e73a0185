import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// A seeded cross product of the two hard rules (a 429 is never retried; a request that may have
// reached the server is never sent again for a call declared not idempotent) over the error shapes
// that carry them and the entry points that nest: the delivery record (`ErrorHints.requestDeliveryKey`,
// `HTTPResponseError.recordedDelivery`), `URLError.unknown`, 429s as `NSError` statuses, CloudKit
// errors and batch items, late operation errors of the library's limits (as values and bridged),
// and a succeeded not-idempotent call followed, in the same attempt, by a failure that by itself
// proves nothing was sent (a refused connection, a limiter's or a breaker's rejection, a 401).

/// What one run of the operation does, by the class the rules read it as.
enum HardRuleStepClass: String, CaseIterable, Sendable {
    case ok, notSent, maybe, tooMany, sentThenRejected
}

struct HardRuleStep: Sendable, CustomStringConvertible {
    var cls: HardRuleStepClass
    var variant: Int
    var wraps: [ErrorShape]  // innermost first

    var description: String {
        "\(self.cls.rawValue)#\(self.variant)\(self.wraps.isEmpty ? "" : "\(self.wraps.map { "\($0)".replacingOccurrences(of: "ErrorShape.", with: "") })")"
    }

    static let notSentVariants = 9
    static let maybeVariants = 17
    static let tooManyVariants = 12
    static let sentThenRejectedVariants = 7
    static let niCallVariants = 5

    /// Wrappers that keep a not-sent failure not sent (no batch, which CloudKit answered).
    static let neutralWraps: [ErrorShape] = [
        .nsUnderlying, .restService, .declaredWrapper, .silentEnum, .silentEnumWithPayload, .contextStruct,
    ]
    static let cautiousWraps: [ErrorShape] = neutralWraps + [.nsMultipleUnderlying, .cloudKitPartialFailureItem]

    static func draw(using g: inout SeededRandomNumberGenerator) -> HardRuleStep {
        let weighted: [HardRuleStepClass] = [
            .ok, .notSent, .notSent, .notSent, .maybe, .maybe, .tooMany, .sentThenRejected,
        ]
        let cls = weighted.randomElement(using: &g)!
        let variant: Int =
            switch cls {
            case .ok: 0
            case .notSent: Int.random(in: 0..<notSentVariants, using: &g)
            case .maybe: Int.random(in: 0..<maybeVariants, using: &g)
            case .tooMany: Int.random(in: 0..<tooManyVariants, using: &g)
            case .sentThenRejected:
                Int.random(in: 0..<sentThenRejectedVariants, using: &g) * 10
                    + Int.random(in: 0..<niCallVariants, using: &g)
            }
        let pool = cls == .notSent ? neutralWraps : cautiousWraps
        let wraps =
            cls == .ok || cls == .sentThenRejected
            ? [] : (0..<Int.random(in: 0...2, using: &g)).map { _ in pool.randomElement(using: &g)! }
        return HardRuleStep(cls: cls, variant: variant, wraps: wraps)
    }

    static let maybe: RequestDelivery = .mayHaveBeenSent

    /// The failure a not-sent, may-have-been-sent or 429 step throws, before its wrappers.
    static func bare(_ cls: HardRuleStepClass, _ variant: Int) -> any Error {
        switch cls {
        case .notSent:
            switch variant {
            case 0: return URLError(.cannotConnectToHost)
            case 1: return URLError(.cannotFindHost)
            case 2: return URLError(.dnsLookupFailed)
            case 3: return URLError(.notConnectedToInternet)
            case 4: return RefusedBeforeSending()
            case 5: return HTTPResponseError(statusCode: 401)
            case 6:
                // A library limit's error whose late failure proves the device was offline.
                return TimeoutError(
                    timeoutName: "sdk", timeout: .seconds(2), operationError: URLError(.notConnectedToInternet))
            case 7:
                return NSError(
                    domain: "SDK", code: 1, userInfo: [ErrorHints.requestDeliveryKey: RequestDelivery.notSent])
            default: return URLError(.userAuthenticationRequired)
            }
        case .maybe:
            switch variant {
            case 0: return URLError(.cannotConnectToHost, userInfo: [ErrorHints.requestDeliveryKey: maybe])
            case 1:
                return NSError(
                    domain: "SDK", code: 2,
                    userInfo: [
                        ErrorHints.requestDeliveryKey: maybe, NSUnderlyingErrorKey: URLError(.cannotConnectToHost),
                    ])
            case 2:
                return NSError(
                    domain: "SDK", code: 3,
                    userInfo: [
                        NSUnderlyingErrorKey: NSError(
                            domain: "Mid", code: 4,
                            userInfo: [
                                NSUnderlyingErrorKey: URLError(
                                    .cannotFindHost, userInfo: [ErrorHints.requestDeliveryKey: maybe])
                            ])
                    ])
            case 3: return HTTPResponseError(statusCode: 401, recordedDelivery: .mayHaveBeenSent)
            case 4: return HTTPResponseError(statusCode: 503)
            case 5: return URLError(.unknown)
            case 6: return URLError(.timedOut)
            case 7: return URLError(.networkConnectionLost)
            case 8: return URLError(.badServerResponse)
            case 9:
                // The late failure was offline, but it records that its request may have left.
                return TimeoutError(
                    timeoutName: "sdk", timeout: .seconds(2),
                    operationError: URLError(.notConnectedToInternet, userInfo: [ErrorHints.requestDeliveryKey: maybe]))
            case 10: return AttemptTimeoutError(timeout: .seconds(2), operationError: URLError(.cannotConnectToHost))
            case 11:
                let bridged =
                    TimeoutError(timeoutName: "sdk", timeout: .seconds(2), operationError: RefusedBeforeSending())
                    as NSError
                return NSError(domain: bridged.domain, code: bridged.code, userInfo: bridged.userInfo)
            case 12: return NSError(domain: "CKErrorDomain", code: 7, userInfo: ["CKRetryAfter": 1.0])
            case 13:
                return NSError(
                    domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                    userInfo: [
                        CloudKitErrorCode.partialErrorsKey: [
                            "r1": URLError(.cannotConnectToHost),
                            "r2": URLError(.cannotConnectToHost, userInfo: [ErrorHints.requestDeliveryKey: maybe]),
                        ]
                    ])
            case 14: return URLError(.notConnectedToInternet, userInfo: [ErrorHints.requestDeliveryKey: maybe])
            case 15: return TransientError()  // says nothing: not proof that nothing was sent
            default:
                return NSError(
                    domain: "SDK", code: 5,
                    userInfo: [
                        "NSMultipleUnderlyingErrorsKey": [RefusedBeforeSending(), URLError(.unknown)] as [any Error]
                    ])
            }
        case .tooMany:
            switch variant {
            case 0: return HTTPResponseError(statusCode: 429, headers: ["retry-after": "1"])
            case 1: return HTTPResponseError(statusCode: 429, recordedDelivery: .notSent)
            case 2: return NSError(domain: "SDK", code: 1, userInfo: ["HTTPStatusCode": 429])
            case 3:
                return NSError(
                    domain: "SDK", code: 1,
                    userInfo: ["status": 429, ErrorHints.requestDeliveryKey: RequestDelivery.notSent])
            case 4:
                return NSError(
                    domain: "CKErrorDomain", code: 6, userInfo: ["CKRetryAfter": 2.0, "HTTPStatusCode": 429])
            case 5:
                return NSError(
                    domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                    userInfo: [
                        CloudKitErrorCode.partialErrorsKey: [
                            "r1": URLError(.cannotConnectToHost), "r2": HTTPResponseError(statusCode: 429),
                        ]
                    ])
            case 6:
                return NSError(
                    domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                    userInfo: [
                        CloudKitErrorCode.partialErrorsKey: [
                            "r1": NSError(
                                domain: "CKErrorDomain", code: 7, userInfo: ["CKRetryAfter": 1.0, "statusCode": 429])
                        ]
                    ])
            case 7:
                return TimeoutError(
                    timeoutName: "sdk", timeout: .seconds(2), operationError: HTTPResponseError(statusCode: 429))
            case 8:
                return AttemptTimeoutError(
                    timeout: .seconds(2), operationError: NSError(domain: "SDK", code: 1, userInfo: ["statusCode": 429])
                )
            case 9:
                let bridged =
                    TimeoutError(
                        timeoutName: "sdk", timeout: .seconds(2), operationError: HTTPResponseError(statusCode: 429))
                    as NSError
                return NSError(domain: bridged.domain, code: bridged.code, userInfo: bridged.userInfo)
            case 10:
                return URLError(
                    .cannotConnectToHost, userInfo: [NSUnderlyingErrorKey: HTTPResponseError(statusCode: 429)])
            default:
                return NSError(
                    domain: "SDK", code: 9,
                    userInfo: [
                        ErrorHints.requestDeliveryKey: RequestDelivery.notSent,
                        NSUnderlyingErrorKey: NSError(domain: "Inner", code: 1, userInfo: ["HTTPStatus": 429]),
                    ])
            }
        default: return TransientError()
        }
    }

    func error() -> any Error { ErrorShape.wrap(Self.bare(self.cls, self.variant), in: self.wraps) }
}

enum HardRuleEntry: String, CaseIterable, Sendable {
    case execute, outcome, attemptTimeoutExecute, attemptTimeoutOutcome
}
enum HardRuleClassifier: String, CaseIterable, Sendable { case retryEverything, standard, post }
enum HardRuleStage: String, CaseIterable, Sendable {
    case timeout, breaker, bulkhead, rateLimiter, policy, hedging, fallback
}

indirect enum HardRuleLayer: Sendable, CustomStringConvertible {
    case policy(HardRuleEntry, attempts: Int, deadline: Bool, observer: Bool, declared: Bool, HardRuleClassifier)
    case breaker(registry: Bool)
    case timeout(declared: Bool)
    case fallback(rethrowsWrapped: Bool)
    case bulkhead
    case rateLimiter(registry: Bool)
    case hedging(hedges: Int, declared: Bool)
    case pipeline([HardRuleStage], declared: Bool, registry: Bool, attempts: Int)
    case standardHTTP(attempts: Int, declared: Bool)

    static func draw(exactOnly: Bool, using g: inout SeededRandomNumberGenerator) -> HardRuleLayer {
        func declared() -> Bool { Int.random(in: 0..<4, using: &g) == 0 }
        let kinds = exactOnly ? [0, 0, 0, 1, 2, 4, 5, 7] : Array(0..<9) + [0, 0, 7]
        switch kinds.randomElement(using: &g)! {
        case 0:
            return .policy(
                HardRuleEntry.allCases.randomElement(using: &g)!, attempts: Int.random(in: 2...4, using: &g),
                deadline: Bool.random(using: &g), observer: Bool.random(using: &g), declared: declared(),
                exactOnly
                    ? .retryEverything
                    : [.retryEverything, .retryEverything, .standard, .post].randomElement(using: &g)!)
        case 1: return .breaker(registry: Bool.random(using: &g))
        case 2: return .timeout(declared: declared())
        case 3: return .fallback(rethrowsWrapped: Bool.random(using: &g))
        case 4: return .bulkhead
        case 5: return .rateLimiter(registry: Bool.random(using: &g))
        case 6: return .hedging(hedges: Int.random(in: 1...2, using: &g), declared: declared())
        case 7:
            let pool: [HardRuleStage] =
                exactOnly ? [.timeout, .breaker, .bulkhead, .rateLimiter, .policy] : HardRuleStage.allCases
            var stages = Array(pool.shuffled(using: &g).prefix(Int.random(in: 1...pool.count, using: &g)))
            if exactOnly && !stages.contains(.policy) && Bool.random(using: &g) { stages.append(.policy) }
            return .pipeline(
                stages.shuffled(using: &g), declared: declared(), registry: Bool.random(using: &g),
                attempts: Int.random(in: 2...4, using: &g))
        default: return .standardHTTP(attempts: Int.random(in: 2...4, using: &g), declared: declared())
        }
    }

    /// Whether this layer declares its call not idempotent (by declaration or classifier).
    var declaresNotIdempotent: Bool {
        switch self {
        case .policy(_, _, _, _, let d, let c): d || c == .post
        case .timeout(let d), .hedging(_, let d), .pipeline(_, let d, _, _), .standardHTTP(_, let d): d
        default: false
        }
    }

    /// Whether this layer binds a scope in which a succeeded not-idempotent call is heard of.
    var bindsScope: Bool {
        switch self {
        case .policy(let e, _, let deadline, _, let d, let c):
            deadline || d || c == .post || e == .attemptTimeoutExecute || e == .attemptTimeoutOutcome
        case .timeout, .hedging, .standardHTTP: true
        case .pipeline(let stages, let d, _, _): d || stages.contains(.timeout) || stages.contains(.hedging)
        default: false
        }
    }

    /// The attempts of the retrying stages this layer holds, outermost first.
    var retrierAttempts: [Int] {
        switch self {
        case .policy(_, let a, _, _, _, _): [a]
        case .pipeline(let stages, _, _, let a): stages.filter { $0 == .policy }.map { _ in a }
        default: []
        }
    }

    var description: String {
        switch self {
        case .policy(let e, let a, let dl, let o, let d, let c):
            "policy.\(e)(\(a), \(c)\(dl ? ", deadline" : "")\(o ? ", observer" : "")\(d ? ", notIdempotent" : ""))"
        case .breaker(let r): "breaker\(r ? "@registry" : "")"
        case .timeout(let d): "timeout\(d ? "(notIdempotent)" : "")"
        case .fallback(let w): "fallback\(w ? "(rethrowsWrapped)" : "(value)")"
        case .bulkhead: "bulkhead"
        case .rateLimiter(let r): "rateLimiter\(r ? "@registry" : "")"
        case .hedging(let h, let d): "hedging(\(h)\(d ? ", notIdempotent" : ""))"
        case .pipeline(let s, let d, let r, let a):
            "pipeline\(s.map(\.rawValue))(policy attempts \(a))\(r ? "@registry" : "")\(d ? "(notIdempotent)" : "")"
        case .standardHTTP(let a, let d): "standardHTTP(\(a))\(d ? "(notIdempotent)" : "")"
        }
    }
}

struct HardRuleCase: Sendable, CustomStringConvertible {
    var seed: UInt64
    var index: Int
    var layers: [HardRuleLayer]  // outermost first
    var script: [HardRuleStep]

    init(seed: UInt64, index: Int, layers: [HardRuleLayer], script: [HardRuleStep]) {
        self.seed = seed
        self.index = index
        self.layers = layers
        self.script = script
    }

    init(seed: UInt64, index: Int, exactOnly: Bool, using g: inout SeededRandomNumberGenerator) {
        self.seed = seed
        self.index = index
        self.layers = (0..<Int.random(in: 2...3, using: &g)).map { _ in
            HardRuleLayer.draw(exactOnly: exactOnly, using: &g)
        }
        self.script = (0..<Int.random(in: 1...5, using: &g)).map { _ in HardRuleStep.draw(using: &g) }
    }

    var notIdempotent: Bool { self.layers.contains { $0.declaresNotIdempotent } }
    /// A fallback that wraps the failure anew above a declaration: documented as a new failure
    /// for the layers above it, judged as usual, so the declaration's word stops there.
    var rewrapsADeclaration: Bool {
        guard let f = self.layers.firstIndex(where: { if case .fallback(true) = $0 { true } else { false } }) else {
            return false
        }
        return self.layers[(f + 1)...].contains { $0.declaresNotIdempotent }
            && !self.layers[..<f].contains { $0.declaresNotIdempotent }
    }
    var scope: Bool { self.layers.contains { $0.bindsScope } }
    var hasFallback: Bool {
        self.layers.contains {
            switch $0 {
            case .fallback: true
            case .pipeline(let s, _, _, _): s.contains(.fallback)
            default: false
            }
        }
    }

    /// Whether a step ends the call: nothing may run after it.
    func isTerminal(_ step: HardRuleStep) -> Bool? {
        switch step.cls {
        case .ok, .tooMany: true
        case .maybe: self.notIdempotent ? true : false
        case .notSent: false
        case .sentThenRejected:
            // A 429 after the call ends it anyway, and so does a failure of unknown delivery in a
            // call declared not idempotent; otherwise only a scope hears of the success (without
            // one, the policy is documented not to know).
            step.variant / 10 == 6 || (step.variant / 10 == 5 && self.notIdempotent) ? true : self.scope ? true : nil
        }
    }

    var description: String {
        "seed \(self.seed) case \(self.index): \(self.layers) script \(self.script)"
    }
}

struct HardRuleObserved {
    var runs: Int
    var result: Result<Int, any Error>
    var outcome: RetryOutcome<Int>?
    var finished: [(String, RetryStopReason, Int)]
    var end: Duration
    /// Whether the driver gave up on the case: its clock reached the point where a limit could
    /// fire and the call had not finished.
    var stalled: Bool
}

/// Random stacks of two or three layers around a scripted operation, each run on a test clock a
/// driver moves to the end of each wait the call sleeps: nothing runs after a step that ends the
/// call, a 429 ends as one, and where every layer's effect is known (policies that retry
/// everything, pass-through layers), the sends and every policy's stop reason are exact.
@Suite(
    "Hard rules cross product: no 429 retried, nothing that may have been sent sent again",
    .timeLimit(.minutes(5)),
    // One seed at a time: six seeds at once, when their drivers still polled, took the two cores
    // from the suites that move their own test clocks.
    .serialized,
    .disabled(if: runsUnderThreadSanitizer, "starved under ThreadSanitizer; runs in the plain test step"))
struct HardRulesCrossProductTests {
    /// Three seeds of 1,000 cases each take about a second and a half per test on an idle
    /// machine; more cases per seed make an exploratory run.
    static let seeds: [UInt64] = [17, 1_717, 171_717]
    static let casesPerSeed = 500
    static let long: Duration = .seconds(1_000)

    static func makePolicy(
        _ name: String, attempts: Int, deadline: Bool, observer: RetryObserverLog?, _ c: HardRuleClassifier,
        clock: TestClock
    ) throws -> RetryPolicy {
        let classifier: any RetryClassifier =
            switch c {
            case .retryEverything: ClosureRetryClassifier { _, _ in .retry }
            case .standard: DefaultRetryClassifier()
            case .post: HTTPRetryClassifier(method: "POST")
            }
        return try RetryPolicy(
            name: name, maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: classifier,
            deadline: deadline ? Self.long : nil, maximumRetryAfter: .seconds(60), observer: observer, clock: clock)
    }

    static func run(_ c: HardRuleCase) async throws -> HardRuleObserved {
        let clock = TestClock()
        let runs = ReliabilityCounter()
        let outcomeBox = Lock<RetryOutcome<Int>?>(nil)
        let stops = RetryObserverLog()
        let script = c.script

        // What a succeeded not-idempotent call goes through, and what rejects after it.
        let niPolicy = try RetryPolicy(maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, clock: clock)
        let niPostPolicy = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: HTTPRetryClassifier(method: "POST"), clock: clock)
        let niTimeout = try Timeout(Self.long, clock: clock)
        let niPipeline = ResiliencePipeline { try! ConcurrencyLimiter(limit: 4, clock: clock) }
        let niHedging = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)
        let spentLimiter = try RateLimiter(
            .tokenBucket(capacity: 1, tokensPerPeriod: 1, period: .seconds(3_600)), name: "spent", maximumWait: .zero,
            clock: clock)
        _ = try await spentLimiter.execute { 1 }
        let openBreaker = try CircuitBreaker(
            name: "open", tripRule: .consecutiveFailures(1), pushback: .disabled, clock: clock)
        _ = try? await openBreaker.execute { () throws -> Int in throw TransientError() }

        var next: @Sendable () async throws -> Int = {
            let index = runs.increment() - 1
            let step = index < script.count ? script[index] : HardRuleStep(cls: .ok, variant: 0, wraps: [])
            switch step.cls {
            case .ok: return 1
            case .sentThenRejected:
                let post: @Sendable () async throws -> Int = { 42 }
                switch step.variant % 10 {
                case 0: _ = try await niPolicy.execute(idempotency: .notIdempotent, operation: post)
                case 1: _ = try await niPostPolicy.execute(operation: post)
                case 2: _ = try await niTimeout.execute(idempotency: .notIdempotent, operation: post)
                case 3: _ = try await niPipeline.execute(idempotency: .notIdempotent, operation: post)
                default: _ = try await niHedging.execute(idempotency: .notIdempotent, operation: post)
                }
                switch step.variant / 10 {
                case 0: throw URLError(.cannotConnectToHost)
                case 1: throw RefusedBeforeSending()
                case 2: return try await spentLimiter.execute { () throws -> Int in throw RefusedBeforeSending() }
                case 3: return try await openBreaker.execute { () throws -> Int in throw RefusedBeforeSending() }
                case 4: throw HTTPResponseError(statusCode: 401)
                case 5: throw URLError(.unknown)
                default: throw HTTPResponseError(statusCode: 429)
                }
            default: throw step.error()
            }
        }

        func stage(_ s: HardRuleStage, _ i: Int, _ c: HardRuleCase, attempts: Int) throws -> SeamAnyStage {
            switch s {
            case .timeout: return SeamAnyStage(held: .timeout(try Timeout(Self.long, clock: clock)))
            case .breaker:
                return SeamAnyStage(
                    held: .breaker(
                        EntryPointCrossProductTests.makeBreaker("b\(i)", clock: clock), Recorder<SeamEntry>(), { 0 },
                        { false }))
            case .bulkhead: return SeamAnyStage(held: .bulkhead(try ConcurrencyLimiter(limit: 4, clock: clock)))
            case .rateLimiter:
                return SeamAnyStage(
                    held: .rateLimiter(EntryPointCrossProductTests.makeRateLimiter("r\(i)", clock: clock)))
            case .policy:
                return SeamAnyStage(
                    held: .retry(
                        try Self.makePolicy(
                            "s\(i)", attempts: attempts, deadline: false, observer: stops, .retryEverything,
                            clock: clock)))
            case .hedging:
                return SeamAnyStage(
                    held: .hedging(try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock)))
            case .fallback: return SeamAnyStage(held: .fallback(.value(-1)))
            }
        }

        for (i, layer) in c.layers.enumerated().reversed() {
            let inner = next
            let outermost = i == 0
            switch layer {
            case .policy(let entry, let attempts, let deadline, let observed, let declared, let cls):
                let policy = try Self.makePolicy(
                    "p\(i)", attempts: attempts, deadline: deadline, observer: observed ? stops : nil, cls, clock: clock
                )
                let idempotency: Idempotency? = declared ? .notIdempotent : nil
                switch entry {
                case .execute:
                    next = {
                        if let idempotency {
                            return try await policy.execute(idempotency: idempotency, operation: inner)
                        }
                        return try await policy.execute(operation: inner)
                    }
                case .outcome:
                    next = {
                        let o =
                            if let idempotency {
                                await policy.outcome(idempotency: idempotency, operation: inner)
                            } else { await policy.outcome(operation: inner) }
                        if outermost { outcomeBox.withLock { $0 = o } }
                        return try o.get()
                    }
                case .attemptTimeoutExecute:
                    next = {
                        try await policy.execute(attemptTimeout: Self.long, idempotency: idempotency, operation: inner)
                    }
                case .attemptTimeoutOutcome:
                    next = {
                        let o = await policy.outcome(
                            attemptTimeout: Self.long, idempotency: idempotency, operation: inner)
                        if outermost { outcomeBox.withLock { $0 = o } }
                        return try o.get()
                    }
                }
            case .breaker(let registry):
                let breaker =
                    registry
                    ? try CircuitBreakerRegistry<String>(maximumCount: 4) {
                        EntryPointCrossProductTests.makeBreaker($0, clock: clock)
                    }
                    .breaker(for: "b\(i)")
                    : EntryPointCrossProductTests.makeBreaker("b\(i)", clock: clock)
                next = { try await breaker.execute(operation: inner) }
            case .timeout(let declared):
                let timeout = try Timeout(Self.long, clock: clock)
                next = { try await timeout.execute(idempotency: declared ? .notIdempotent : nil, operation: inner) }
            case .fallback(let wrapped):
                let fallback =
                    wrapped
                    ? Fallback<Int> { context in throw ContextError(operation: "fallback", cause: context.error) }
                    : Fallback<Int>.value(-1)
                next = { try await fallback.execute(operation: inner) }
            case .bulkhead:
                let limiter = try ConcurrencyLimiter(limit: 4, clock: clock)
                next = { try await limiter.execute(operation: inner) }
            case .rateLimiter(let registry):
                let limiter =
                    registry
                    ? try RateLimiterRegistry<String>(maximumCount: 4) {
                        EntryPointCrossProductTests.makeRateLimiter($0, clock: clock)
                    }
                    .limiter(for: "r\(i)")
                    : EntryPointCrossProductTests.makeRateLimiter("r\(i)", clock: clock)
                next = { try await limiter.execute(operation: inner) }
            case .hedging(let hedges, let declared):
                let hedging = try Hedging(delay: .fixed(.seconds(500)), maximumHedges: hedges, clock: clock)
                next = { try await hedging.execute(idempotency: declared ? .notIdempotent : nil, operation: inner) }
            case .pipeline(let stages, let declared, let registry, let attempts):
                let built = try stages.enumerated().map {
                    try stage($0.element, i * 10 + $0.offset, c, attempts: attempts)
                }
                let runner = try EntryPointCrossProductTests.pipelineRunner(built, registry: registry)
                next = { try await runner(declared ? .notIdempotent : nil, inner) }
            case .standardHTTP(let attempts, let declared):
                let pipeline = try ResiliencePipeline<StandardHTTPStrategies>.standardHTTP(
                    totalTimeout: Self.long, maximumAttempts: attempts, attemptTimeout: Self.long, clock: clock)
                next = {
                    if declared { return try await pipeline.execute(idempotency: .notIdempotent, operation: inner) }
                    return try await pipeline.execute(operation: inner)
                }
            }
        }
        let call = next
        let task = Task<Int, any Error> { try await call() }
        let (result, stalled) = await Self.drive(task, on: clock)
        return HardRuleObserved(
            runs: runs.value, result: result, outcome: outcomeBox.withLock { $0 },
            finished: stops.finished.withLock { $0 }.map { ($0.policyName, $0.stopReason, $0.attempts) },
            end: clock.now.offset, stalled: stalled)
    }

    /// The longest wait a case's call sleeps itself: a backoff (a second), a server's hint
    /// (capped at 60 seconds) or a rate limiter's wait (at most 3 seconds). The timers of its
    /// limits (1,000 seconds) and hedges (500 seconds) are further away.
    static let longestWait: Duration = .seconds(100)

    /// Runs `task` to its end, moving `clock` only to the deadline of a wait the call sleeps.
    ///
    /// Time moves only when a sleeper is due within ``longestWait``: then the call waits for
    /// it, and time moves exactly to its deadline. A limit's or a hedge's timer sleeps while
    /// the call runs, and is never moved to: a driver that moved time whenever anyone slept
    /// moved it under a call whose thread a loaded machine held up, 900 seconds in a few
    /// milliseconds, before the call's operation had even run. A call still waiting at 900
    /// seconds (waits that never end) is cancelled and reported; so is one still running when
    /// the test is cancelled (its time limit), which is where a call waiting on something no
    /// clock move releases ends up.
    static func drive(_ task: Task<Int, any Error>, on clock: TestClock) async -> (Result<Int, any Error>, Bool) {
        let stalled = Lock(false)
        let mover = Task.detached {
            while !Task.isCancelled {
                // No limit of the case may fire: a case still waiting this late is stuck.
                if clock.now.offset >= .seconds(900) {
                    stalled.withLock { $0 = true }
                    task.cancel()
                    return
                }
                guard await clock.advanceToNextDeadline(within: Self.longestWait) != nil else { return }
            }
        }
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            stalled.withLock { $0 = true }
            task.cancel()
        }
        mover.cancel()
        return (result, stalled.withLock { $0 })
    }

    /// The expected sends and stop reasons, when the case's stack allows an exact answer.
    struct Expected {
        var sends: Int
        var innermostReason: RetryStopReason?  // nil: success
        var step: HardRuleStep?
    }

    static func isExact(_ c: HardRuleCase) -> Bool {
        c.layers.allSatisfy {
            switch $0 {
            case .policy(_, _, _, _, _, let cls): cls == .retryEverything
            case .breaker, .timeout, .bulkhead, .rateLimiter: true
            case .pipeline(let s, _, _, _): !s.contains(.hedging) && !s.contains(.fallback)
            default: false
            }
        }
    }

    static func expected(_ c: HardRuleCase) -> Expected? {
        let attempts = c.layers.flatMap(\.retrierAttempts).last ?? 1
        for i in 0..<attempts {
            let step = i < c.script.count ? c.script[i] : HardRuleStep(cls: .ok, variant: 0, wraps: [])
            switch step.cls {
            case .ok: return Expected(sends: i + 1, innermostReason: nil, step: step)
            case .tooMany: return Expected(sends: i + 1, innermostReason: .tooManyRequests, step: step)
            case .maybe where c.notIdempotent:
                return Expected(sends: i + 1, innermostReason: .notIdempotent, step: step)
            case .sentThenRejected:
                if step.variant / 10 == 6 {
                    return Expected(sends: i + 1, innermostReason: .tooManyRequests, step: step)
                }
                if step.variant / 10 == 5 && c.notIdempotent {
                    return Expected(sends: i + 1, innermostReason: .notIdempotent, step: step)
                }
                guard c.scope else { return nil }
                return Expected(sends: i + 1, innermostReason: .notIdempotent, step: step)
            case .maybe, .notSent: continue
            }
        }
        return Expected(sends: attempts, innermostReason: .exhausted, step: nil)
    }

    static func reasonMatches(_ got: RetryStopReason, _ want: RetryStopReason, _ step: HardRuleStep?) -> Bool {
        if got == want { return true }
        // A 401 the classifier would stop for sign-in anyway may report that instead.
        if want == .notIdempotent, got == .authenticationRequired, let step,
            step.cls == .maybe && step.variant == 3 || step.cls == .sentThenRejected && step.variant / 10 == 4
        {
            return true
        }
        // A 429 after the succeeded call: the 429 rule comes first.
        if want == .notIdempotent, got == .tooManyRequests, let step, step.cls == .sentThenRejected,
            step.variant / 10 == 6
        {
            return true
        }
        return false
    }

    /// Checks one case; the problems found, empty when it kept every rule.
    static func check(_ c: HardRuleCase) async throws -> [String] {
        let o = try await Self.run(c)
        var problems: [String] = []
        if o.stalled { problems.append("the call had not finished after \(o.end) of test-clock time (\(o.runs) runs)") }
        // The invariant: nothing runs after a step that ends the call.
        for (i, step) in c.script.prefix(o.runs).dropLast().enumerated() where c.isTerminal(step) == true {
            problems.append("ran again after step \(i) \(step) (\(o.runs) runs)")
        }
        let lastIndex = o.runs - 1
        if lastIndex < c.script.count, !c.hasFallback {
            let last = c.script[lastIndex]
            if last.cls == .tooMany {
                if let error = o.result.failureValue {
                    if !ErrorHints.isTooManyRequests(error) { problems.append("a 429 ended as \(error)") }
                } else {
                    problems.append("a 429 ended in success")
                }
                if let outcome = o.outcome, outcome.stopReason != .tooManyRequests {
                    problems.append("outcome stop reason \(outcome.stopReason) after a 429")
                }
            }
            if c.isTerminal(last) == true, last.cls != .tooMany, last.cls != .ok, let outcome = o.outcome,
                !Self.reasonMatches(outcome.stopReason, .notIdempotent, last)
            {
                problems.append("outcome stop reason \(outcome.stopReason) after \(last), expected notIdempotent")
            }
        }
        if Self.isExact(c), let e = Self.expected(c) {
            if o.runs != e.sends { problems.append("sent \(o.runs) times, expected \(e.sends)") }
            let policyNames = Self.policyNames(c)
            if let innermost = policyNames.last {
                let want = e.innermostReason ?? .succeeded
                for (name, reason, _) in o.finished {
                    let expectedReason =
                        name == innermost
                        ? want : (want == .exhausted ? .retriedByInnerPolicy : want)
                    if !Self.reasonMatches(reason, expectedReason, e.step) {
                        problems.append("policy \(name) finished \(reason), expected \(expectedReason)")
                    }
                }
                if let outcome = o.outcome {
                    let expectedReason =
                        policyNames.count == 1 ? want : (want == .exhausted ? .retriedByInnerPolicy : want)
                    if !Self.reasonMatches(outcome.stopReason, expectedReason, e.step) {
                        problems.append("outcome \(outcome.stopReason), expected \(expectedReason)")
                    }
                }
            }
            if e.innermostReason == nil, case .failure(let error) = o.result {
                problems.append("expected success, failed with \(error)")
            }
        }
        if !problems.isEmpty {
            problems.append(
                "[result \(o.result), outcome \(o.outcome.map { "\($0.stopReason)/\($0.attempts)" } ?? "-"), finished \(o.finished.map { "\($0.0):\($0.1)/\($0.2)" }), end \(o.end)]"
            )
        }
        return problems
    }

    static func policyNames(_ c: HardRuleCase) -> [String] {
        c.layers.enumerated().flatMap { i, layer -> [String] in
            switch layer {
            case .policy: ["p\(i)"]
            case .pipeline(let s, _, _, _):
                s.enumerated().filter { $0.element == .policy }.map { "s\(i * 10 + $0.offset)" }
            default: []
            }
        }
    }

    /// The smallest case that still fails: fewer layers, a shorter script, fewer wrappers.
    static func minimize(_ c: HardRuleCase) async throws -> HardRuleCase {
        var best = c
        var improved = true
        while improved {
            improved = false
            var candidates: [HardRuleCase] = []
            for i in best.layers.indices where best.layers.count > 1 {
                var d = best
                d.layers.remove(at: i)
                candidates.append(d)
            }
            for i in best.script.indices where best.script.count > 1 {
                var d = best
                d.script.remove(at: i)
                candidates.append(d)
            }
            for i in best.script.indices where !best.script[i].wraps.isEmpty {
                var d = best
                d.script[i].wraps.removeLast()
                candidates.append(d)
            }
            for i in best.layers.indices {
                if case .pipeline(let s, let d, let r, let a) = best.layers[i], s.count > 1 {
                    for j in s.indices {
                        var n = best
                        var t = s
                        t.remove(at: j)
                        n.layers[i] = .pipeline(t, declared: d, registry: r, attempts: a)
                        candidates.append(n)
                    }
                }
            }
            for candidate in candidates where try await !Self.check(candidate).isEmpty {
                best = candidate
                improved = true
                break
            }
        }
        return best
    }

    static func sweep(seed: UInt64, exactOnly: Bool) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        var failures = 0
        for index in 0..<Self.casesPerSeed {
            let c = HardRuleCase(seed: seed, index: index, exactOnly: exactOnly, using: &g)
            if c.rewrapsADeclaration { continue }
            let problems = try await Self.check(c)
            guard !problems.isEmpty else { continue }
            failures += 1
            // Cancelled (its time limit): the case was stuck; the cases after it would only be cancelled too.
            if Task.isCancelled {
                Issue.record("\(c): \(problems)")
                break
            }
            if failures <= 6 {
                let small = try await Self.minimize(c)
                let smallProblems = try await Self.check(small)
                Issue.record("\(c): \(problems)\n  minimized: \(small.layers) script \(small.script): \(smallProblems)")
            }
        }
        if failures > 0 { Issue.record("seed \(seed): \(failures) failing cases of \(Self.casesPerSeed)") }
    }

    @Test("The driver moves time only to the waits the call sleeps, never while it runs")
    func driverMovesTimeOnlyForWaits() async throws {
        let clock = TestClock()
        let policy = try Self.makePolicy(
            "p", attempts: 3, deadline: false, observer: nil, .retryEverything, clock: clock)
        let timeout = try Timeout(Self.long, clock: clock)
        let attempts = ReliabilityCounter()
        let moved = Lock<[Duration]>([])
        let task = Task<Int, any Error> {
            try await policy.execute {
                try await timeout.execute {
                    let start = clock.now
                    // Busy off the clock while the limit's timer sleeps, as a call is whose
                    // thread a loaded machine holds up.
                    for _ in 0..<2_000 { await Task.yield() }
                    moved.withLock { $0.append(start.duration(to: clock.now)) }
                    if attempts.increment() < 3 { throw TransientError() }
                    return 7
                }
            }
        }
        let (result, stalled) = await Self.drive(task, on: clock)
        #expect(try result.get() == 7)
        #expect(!stalled)
        #expect(moved.withLock { $0 } == [.zero, .zero, .zero])
        #expect(clock.now.offset == .seconds(2), "two backoffs of a second")
    }

    @Test("Exact sends and stop reasons over policies and pass-through layers", arguments: seeds)
    func exact(seed: UInt64) async throws {
        try await Self.sweep(seed: seed, exactOnly: true)
    }

    @Test("No send after a terminal failure in any nesting", arguments: seeds)
    func anyNesting(seed: UInt64) async throws {
        try await Self.sweep(seed: seed, exactOnly: false)
    }
}
