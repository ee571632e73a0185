import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// Random compositions, two or three layers deep, drawn from every strategy (policies through
/// each entry point, breakers and their registry, timeouts, fallbacks, concurrency and rate
/// limiters and their registry, hedging, pipelines, their registry and the standardHTTP preset),
/// around an operation that follows a random script: successes, transient failures, refusals,
/// 429s, lost responses and timed-out POSTs in random wrappers, the caller cancelling, and hangs
/// that only a time limit ends. Every layer shares one test clock that a driver moves, while the
/// call waits, to the next deadline of anyone asleep on it (``driveCall(_:on:watching:mayMove:)``);
/// nothing sleeps for real.
@Suite("Composition cross product: the headline rules hold in random compositions")
struct CompositionCrossProductTests {
    /// 40 seeds of 40 compositions each run in about a second; 1...500 (20,000 compositions,
    /// about 30 seconds) make an exploratory run.
    static let seeds: [UInt64] = Array(1...40)
    static let casesPerSeed = 40

    static let limit: Duration = .seconds(10)  // every time limit's length
    static let totalLimit: Duration = .seconds(25)  // standardHTTP's total timeout
    static let deadline: Duration = .seconds(40)  // a policy's deadline, when it has one
    static let hangLength: Duration = .seconds(30)  // a hang no limit ends, then a URLError.timedOut

    enum Entry: CaseIterable { case execute, outcome, attemptTimeout }

    indirect enum Layer: CustomStringConvertible {
        case policy(
            Entry, attempts: Int, classifier: ClassifierUnderTest, deadline: Bool, declares: Bool, post: Bool = false)
        case breaker(registry: Bool, countsNothing: Bool)
        case timeout(declares: Bool)
        case fallback
        case concurrencyLimiter
        case rateLimiter(registry: Bool, waits: Bool)
        case hedging(maximumHedges: Int, declares: Bool)
        case pipelineTimeoutPolicy(attempts: Int, classifier: ClassifierUnderTest, registry: Bool, declares: Bool)
        case pipelineBreakerTimeout(declares: Bool)
        case standardHTTP(attempts: Int, declares: Bool)
        case pipelineHedgingBreaker(declares: Bool)

        static func draw(using g: inout SeededRandomNumberGenerator) -> Layer {
            func declares() -> Bool { Int.random(in: 0..<5, using: &g) == 0 }
            switch Int.random(in: 0..<11, using: &g) {
            case 0:
                return .policy(
                    Entry.allCases.randomElement(using: &g)!, attempts: Int.random(in: 1...3, using: &g),
                    classifier: ClassifierUnderTest.allCases.randomElement(using: &g)!,
                    deadline: Bool.random(using: &g),
                    declares: declares(), post: Int.random(in: 0..<4, using: &g) == 0)
            case 1: return .breaker(registry: Bool.random(using: &g), countsNothing: Bool.random(using: &g))
            case 2: return .timeout(declares: declares())
            case 3: return .fallback
            case 4: return .concurrencyLimiter
            case 5: return .rateLimiter(registry: Bool.random(using: &g), waits: Bool.random(using: &g))
            case 6: return .hedging(maximumHedges: Int.random(in: 1...2, using: &g), declares: declares())
            case 7:
                return .pipelineTimeoutPolicy(
                    attempts: Int.random(in: 1...3, using: &g),
                    classifier: ClassifierUnderTest.allCases.randomElement(using: &g)!,
                    registry: Bool.random(using: &g),
                    declares: declares())
            case 8: return .pipelineBreakerTimeout(declares: declares())
            case 9: return .pipelineHedgingBreaker(declares: declares())
            default: return .standardHTTP(attempts: Int.random(in: 1...3, using: &g), declares: declares())
            }
        }

        var declares: Bool {
            switch self {
            case .policy(_, _, _, _, let d, _), .timeout(let d), .hedging(_, let d),
                .pipelineTimeoutPolicy(_, _, _, let d),
                .pipelineBreakerTimeout(let d), .standardHTTP(_, let d), .pipelineHedgingBreaker(let d):
                d
            default: false
            }
        }

        /// The most runs of its inner call one call of this layer makes.
        var multiplier: Int {
            switch self {
            case .policy(_, let attempts, _, _, _, _), .pipelineTimeoutPolicy(let attempts, _, _, _),
                .standardHTTP(let attempts, _):
                attempts
            case .hedging(let hedges, _): 1 + hedges
            case .pipelineHedgingBreaker: 2
            default: 1
            }
        }

        /// Whether this layer's classifier declares the call idempotent (its own decisions win over an outer POST).
        var classifierDeclaresIdempotent: Bool {
            func declaring(_ c: ClassifierUnderTest) -> Bool {
                switch c {
                case .httpForGET, .chain, .cloudKitIdempotent: true
                default: false
                }
            }
            switch self {
            case .policy(_, _, let c, _, _, let post): return !post && declaring(c)
            case .pipelineTimeoutPolicy(_, let c, _, _): return declaring(c)
            default: return false
            }
        }

        var isPOSTPolicy: Bool { if case .policy(_, _, _, _, _, true) = self { true } else { false } }

        var isFallback: Bool { if case .fallback = self { true } else { false } }

        var description: String {
            switch self {
            case .policy(let e, let a, let c, let d, let decl, let post):
                "policy.\(e)(\(a), \(post ? "POST" : "\(c)")\(d ? ", deadline" : "")\(decl ? ", notIdempotent" : ""))"
            case .breaker(let r, let n): "breaker(\(r ? "registry" : "plain")\(n ? ", countsNothing" : ""))"
            case .timeout(let decl): "timeout(\(decl ? "notIdempotent" : ""))"
            case .fallback: "fallback"
            case .concurrencyLimiter: "concurrencyLimiter"
            case .rateLimiter(let r, let w): "rateLimiter(\(r ? "registry" : "plain")\(w ? ", waits" : ""))"
            case .hedging(let h, let decl): "hedging(\(h)\(decl ? ", notIdempotent" : ""))"
            case .pipelineTimeoutPolicy(let a, let c, let r, let decl):
                "pipeline{timeout;policy(\(a), \(c))}\(r ? "@registry" : "")\(decl ? "(notIdempotent)" : "")"
            case .pipelineBreakerTimeout(let decl): "pipeline{breaker;timeout}\(decl ? "(notIdempotent)" : "")"
            case .standardHTTP(let a, let decl): "standardHTTP(\(a))\(decl ? "(notIdempotent)" : "")"
            case .pipelineHedgingBreaker(let decl): "pipeline{hedging;breaker}\(decl ? "(notIdempotent)" : "")"
            }
        }
    }

    enum Step: String, CaseIterable {
        case success, transient, refused, tooManyRequests, lostResponse, timedOutPOST, cancelCaller, hang
        /// Hangs; when a limit cancels it (or after the hang), fails with a 429: a late answer.
        case hangThen429

        /// Whether nothing may run after this step, in a call where `notIdempotent` holds.
        func endsTheCall(notIdempotent: Bool) -> Bool {
            switch self {
            case .tooManyRequests, .timedOutPOST, .cancelCaller, .hangThen429: true
            case .transient, .lostResponse, .hang: notIdempotent
            case .success, .refused: false
            }
        }
    }

    struct Case: CustomStringConvertible {
        var seed: UInt64
        var index: Int
        var layers: [Layer]  // outermost first
        var script: [(Step, [ErrorShape], Int)]  // step, wrappers innermost first, a variant

        init(seed: UInt64, index: Int, using g: inout SeededRandomNumberGenerator) {
            self.seed = seed
            self.index = index
            self.layers = (0..<Int.random(in: 2...3, using: &g)).map { _ in Layer.draw(using: &g) }
            self.script = (0..<Int.random(in: 1...6, using: &g)).map { _ in
                let weighted: [Step] = Step.allCases + [.hang, .hang, .cancelCaller, .hangThen429]
                let step = weighted.randomElement(using: &g)!
                return (
                    step, ErrorShape.draw(depth: Int.random(in: 0...2, using: &g), using: &g),
                    Int.random(in: 0..<4, using: &g)
                )
            }
        }

        var notIdempotent: Bool { self.layers.contains { $0.declares } || self.postCertain }
        /// A policy whose classifier says POST, with no policy inside it whose own classifier says otherwise.
        var postCertain: Bool {
            guard let first = self.layers.firstIndex(where: { $0.isPOSTPolicy }) else { return false }
            return !self.layers[(first + 1)...].contains { $0.classifierDeclaresIdempotent }
        }
        /// A POST classifier whose word an inner classifier may override: the not-idempotent checks are skipped.
        var ambiguous: Bool {
            !self.layers.contains { $0.declares } && self.layers.contains { $0.isPOSTPolicy } && !self.postCertain
        }
        var maximumRuns: Int { self.layers.reduce(1) { $0 * $1.multiplier } }
        var hasFallback: Bool { self.layers.contains { $0.isFallback } }

        var description: String {
            "seed \(self.seed) case \(self.index): \(self.layers) script \(self.script.map { "\($0.0)\($0.1.isEmpty ? "" : "\($0.1)")#\($0.2)" })"
        }
    }

    /// One call of a layer's inner closure, as the layer saw it.
    struct LayerEntry: Sendable {
        var runsBefore: Int
        var runsAfter: Int
        var error: (any Error)?
        var cancelledAtExit: Bool
        var callerCancelledAtExit: Bool
    }

    struct Observed {
        var steps: [Step]
        var runStarts: [Duration]
        var result: Result<Int, any Error>
        var end: Duration
        var cancelledAt: Duration?
        var breakers: [(index: Int, countsNothing: Bool, snapshot: CircuitBreakerSnapshot, entries: [LayerEntry])]
        var stalled: Bool
    }

    static func error(for step: Step, shapes: [ErrorShape], variant: Int) -> any Error {
        let bare: any Error =
            switch step {
            case .success, .hang: URLError(.timedOut)
            case .transient: TransientError()
            case .refused: variant.isMultiple(of: 2) ? RefusedBeforeSending() : URLError(.cannotConnectToHost)
            case .tooManyRequests, .hangThen429:
                TooManyRequestsShape.allCases[variant % TooManyRequestsShape.allCases.count].error
            case .lostResponse:
                variant.isMultiple(of: 2) ? URLError(.networkConnectionLost) : HTTPResponseError(statusCode: 502)
            case .timedOutPOST: TimedOutPOSTShape.allCases[variant % TimedOutPOSTShape.allCases.count].error
            case .cancelCaller: variant.isMultiple(of: 2) ? CancellationError() : URLError(.cancelled)
            }
        return ErrorShape.wrap(bare, in: shapes)
    }

    static func run(_ testCase: Case) async throws -> Observed {
        // A policy's attempt limit sleeps in a child task of the call: a timer, told by its length.
        let clock = CallClock(timerLengths: [Self.limit])
        let watchers = WatcherList()
        let ranSteps = Recorder<Step>()
        let runStarts = Recorder<Duration>()
        let cancelledAt = Lock<Duration?>(nil)
        let callerCancelled = Lock(false)
        let rootTask = Lock<Task<Int, any Error>?>(nil)
        let script = testCase.script
        let hang = hangLength

        var next: @Sendable () async throws -> Int = {
            let index = ranSteps.values.count
            let (step, shapes, variant) = index < script.count ? script[index] : (.success, [], 0)
            ranSteps.record(step)
            runStarts.record(clock.now.offset)
            switch step {
            case .success: return 1
            case .hang:
                try await clock.sleep(for: hang)
                throw Self.error(for: step, shapes: shapes, variant: variant)
            case .hangThen429:
                _ = try? await clock.sleep(for: hang)
                throw Self.error(for: step, shapes: shapes, variant: variant)
            case .cancelCaller:
                cancelledAt.withLock { $0 = clock.now.offset }
                callerCancelled.withLock { $0 = true }
                rootTask.withLock { $0 }?.cancel()
                throw Self.error(for: step, shapes: shapes, variant: variant)
            default:
                throw Self.error(for: step, shapes: shapes, variant: variant)
            }
        }
        var breakers: [(Int, Bool, CircuitBreaker, Recorder<LayerEntry>)] = []

        func instrument(_ inner: @escaping @Sendable () async throws -> Int) -> (
            @Sendable () async throws -> Int, Recorder<LayerEntry>
        ) {
            let entries = Recorder<LayerEntry>()
            return (
                {
                    let before = ranSteps.values.count
                    do {
                        let value = try await inner()
                        entries.record(
                            LayerEntry(
                                runsBefore: before, runsAfter: ranSteps.values.count, error: nil,
                                cancelledAtExit: Task.isCancelled,
                                callerCancelledAtExit: callerCancelled.withLock { $0 }))
                        return value
                    } catch {
                        entries.record(
                            LayerEntry(
                                runsBefore: before, runsAfter: ranSteps.values.count, error: error,
                                cancelledAtExit: Task.isCancelled,
                                callerCancelledAtExit: callerCancelled.withLock { $0 }))
                        throw error
                    }
                }, entries
            )
        }

        func makeBreaker(_ index: Int, registry: Bool, countsNothing: Bool) throws -> CircuitBreaker {
            let make: @Sendable (String) -> CircuitBreaker = { key in
                try! CircuitBreaker(
                    name: key,
                    tripRule: .failureRate(threshold: 1.0, minimumCalls: 10_000, window: .count(10_000)),
                    classifier: countsNothing
                        ? ClosureCircuitBreakerFailureClassifier { _ in false } as any CircuitBreakerFailureClassifier
                        : DefaultCircuitBreakerFailureClassifier(),
                    pushback: .disabled, clock: clock)
            }
            if registry {
                let reg = try CircuitBreakerRegistry<String>(maximumCount: 4, makeBreaker: make)
                return reg.breaker(for: "layer\(index)")
            }
            return make("layer\(index)")
        }

        func makePolicy(_ attempts: Int, _ classifier: ClassifierUnderTest, deadline: Bool) throws -> RetryPolicy {
            try RetryPolicy(
                maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none,
                classifier: classifier.classifier, deadline: deadline ? Self.deadline : nil, clock: clock)
        }

        for (index, layer) in testCase.layers.enumerated().reversed() {
            let declared: Idempotency? = layer.declares ? .notIdempotent : nil
            let inner = next
            switch layer {
            case .breaker(let registry, let countsNothing):
                let breaker = try makeBreaker(index, registry: registry, countsNothing: countsNothing)
                let (wrapped, entries) = instrument(inner)
                breakers.append((index, countsNothing, breaker, entries))
                next = { try await breaker.execute(operation: wrapped) }
            case .pipelineBreakerTimeout:
                let breaker = try makeBreaker(index, registry: false, countsNothing: true)
                let timeout = watchers.add(try Timeout(Self.limit, clock: clock))
                let pipeline = ResiliencePipeline {
                    breaker
                    timeout
                }
                // The breaker's entries are the pipeline's: the timeout inside is the breaker's business.
                let (wrapped, entries) = instrument(inner)
                breakers.append((index, true, breaker, entries))
                next = {
                    if let declared { return try await pipeline.execute(idempotency: declared, operation: wrapped) }
                    return try await pipeline.execute(operation: wrapped)
                }
            case .policy(let entry, let attempts, let classifier, let deadline, _, let post):
                let policy =
                    post
                    ? try RetryPolicy(
                        maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none,
                        classifier: HTTPRetryClassifier(method: "POST"), deadline: deadline ? Self.deadline : nil,
                        clock: clock)
                    : try makePolicy(attempts, classifier, deadline: deadline)
                switch entry {
                case .execute:
                    next = {
                        if let declared { return try await policy.execute(idempotency: declared, operation: inner) }
                        return try await policy.execute(operation: inner)
                    }
                case .outcome:
                    next = {
                        if let declared {
                            return try await policy.outcome(idempotency: declared, operation: inner).get()
                        }
                        return try await policy.outcome(operation: inner).get()
                    }
                case .attemptTimeout:
                    next = {
                        try await policy.execute(attemptTimeout: Self.limit, idempotency: declared, operation: inner)
                    }
                }
            case .timeout:
                let timeout = watchers.add(try Timeout(Self.limit, clock: clock))
                next = { try await timeout.execute(idempotency: declared, operation: inner) }
            case .fallback:
                let fallback = Fallback<Int>.value(-1)
                next = { try await fallback.execute(operation: inner) }
            case .concurrencyLimiter:
                let limiter = try ConcurrencyLimiter(limit: 1, clock: clock)
                next = { try await limiter.execute(operation: inner) }
            case .rateLimiter(let registry, let waits):
                let make: @Sendable (String) -> RateLimiter = { key in
                    try! RateLimiter(
                        .tokenBucket(capacity: 2, tokensPerPeriod: 1, period: .seconds(2)), name: key,
                        maximumWait: waits ? .seconds(3) : .zero, clock: clock)
                }
                let limiter =
                    registry
                    ? try RateLimiterRegistry<String>(maximumCount: 4, makeLimiter: make).limiter(for: "k") : make("k")
                next = { try await limiter.execute(operation: inner) }
            case .hedging(let hedges, _):
                let hedging = watchers.add(
                    try Hedging(delay: .fixed(.seconds(500)), maximumHedges: hedges, clock: clock))
                next = { try await hedging.execute(idempotency: declared, operation: inner) }
            case .pipelineTimeoutPolicy(let attempts, let classifier, let registry, _):
                let make: @Sendable (String) -> ResiliencePipeline<NestedStrategies<Timeout, RetryPolicy>> = { _ in
                    ResiliencePipeline {
                        watchers.add(try! Timeout(Self.limit, clock: clock))
                        try! makePolicyUnchecked(attempts, classifier, clock)
                    }
                }
                let pipeline =
                    registry
                    ? try ResiliencePipelineRegistry<String, NestedStrategies<Timeout, RetryPolicy>>(makePipeline: make)
                        .pipeline(for: "k") : make("k")
                next = {
                    if let declared { return try await pipeline.execute(idempotency: declared, operation: inner) }
                    return try await pipeline.execute(operation: inner)
                }
            case .pipelineHedgingBreaker:
                let breaker = try makeBreaker(index, registry: false, countsNothing: true)
                let pipeline = try ResiliencePipeline {
                    watchers.add(try Hedging(delay: .fixed(.seconds(500)), maximumHedges: 1, clock: clock))
                    breaker
                }
                let (wrapped, entries) = instrument(inner)
                breakers.append((index, true, breaker, entries))
                next = {
                    if let declared { return try await pipeline.execute(idempotency: declared, operation: wrapped) }
                    return try await pipeline.execute(operation: wrapped)
                }
            case .standardHTTP(let attempts, _):
                let pipeline = watchers.add(
                    try ResiliencePipeline<StandardHTTPStrategies>.standardHTTP(
                        totalTimeout: Self.totalLimit, maximumAttempts: attempts, attemptTimeout: Self.limit,
                        clock: clock))
                next = {
                    if let declared { return try await pipeline.execute(idempotency: declared, operation: inner) }
                    return try await pipeline.execute(operation: inner)
                }
            }
        }
        let call = next
        let task = Task<Int, any Error> {
            try await CallClock.$isCallTask.withValue(true) {
                try await yieldUntil { rootTask.withLock({ $0 }) != nil }
                return try await call()
            }
        }
        rootTask.withLock { $0 = task }
        // With a time limit outermost, time stops at its end: the call must end without more of it.
        let freezeAt: Duration? =
            switch testCase.layers.first {
            case .timeout?, .pipelineBreakerTimeout?: Self.limit
            case .standardHTTP?: Self.totalLimit
            default: nil
            }
        // Time moves only while the call waits, to the next deadline of anyone asleep, so that a
        // limit passes only while the call waits on it, never under a call still running.
        // Once the caller cancelled, time stands still: everything must end without it.
        let (result, stalled) = await driveCall(task, on: clock, watching: watchers) { _, instant in
            cancelledAt.withLock { $0 } == nil && freezeAt.map { instant <= $0 } ?? true
        }
        let end = clock.now.offset
        return Observed(
            steps: ranSteps.values, runStarts: runStarts.values, result: result, end: end,
            cancelledAt: cancelledAt.withLock { $0 },
            breakers: breakers.map { ($0.0, $0.1, $0.2.snapshot(), $0.3.values) }, stalled: stalled)
    }

    static func makePolicyUnchecked(_ attempts: Int, _ classifier: ClassifierUnderTest, _ clock: CallClock) throws
        -> RetryPolicy
    {
        try RetryPolicy(
            maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: classifier.classifier,
            clock: clock)
    }

    /// Checks one case; returns the problems found, empty when it kept every rule.
    static func check(_ testCase: Case) async throws -> [String] {
        let o = try await run(testCase)
        var problems: [String] = []
        let steps = o.steps
        if o.stalled { problems.append("the call had not ended when the test's time limit cancelled it") }
        if steps.count > testCase.maximumRuns { problems.append("ran \(steps.count) > \(testCase.maximumRuns)") }
        for (i, step) in steps.dropLast().enumerated()
        where step.endsTheCall(notIdempotent: testCase.notIdempotent)
            && !(testCase.ambiguous && !step.endsTheCall(notIdempotent: false))
        {
            problems.append("ran again after step \(i) \(step): \(steps)")
        }
        if let last = steps.last, last.endsTheCall(notIdempotent: testCase.notIdempotent) || last == .success {
            switch last {
            case .tooManyRequests where !testCase.hasFallback:
                if let error = o.result.failureValue {
                    if !FailureAnalysis(error).isTooManyRequests { problems.append("429 ended as \(error)") }
                } else {
                    problems.append("429 ended in success")
                }
            case .cancelCaller:
                if case .success(let v) = o.result { problems.append("caller cancellation ended with value \(v)") }
            default: break
            }
        }
        if let at = o.cancelledAt, o.end - at > .seconds(2) {
            problems.append("cancelled at \(at), ended at \(o.end)")
        }
        // The outermost time limit holds.
        switch testCase.layers.first {
        case .timeout?, .pipelineBreakerTimeout?:
            if o.end > Self.limit { problems.append("outer timeout: ended at \(o.end)") }
        case .standardHTTP?:
            if o.end > Self.totalLimit { problems.append("standardHTTP total: ended at \(o.end)") }
        case .policy(_, _, _, true, _, _)?:
            if let late = o.runStarts.first(where: { $0 > Self.deadline + .seconds(1) }) {
                problems.append("outer deadline: a run started at \(late)")
            }
        default: break
        }
        // Breakers: with a classifier that counts nothing, exactly the calls a library limit ended count.
        for breaker in o.breakers {
            let limitEnded = breaker.entries.filter { e in
                guard let error = e.error, !e.callerCancelledAtExit else { return false }
                // A library limit's error anywhere in the chain reads as a time limit (FailureAnalysis.interruption).
                return FailureAnalysis(error).interruption == .timeLimit || e.cancelledAtExit
            }.count
            let notForTheBreaker = breaker.entries.filter { e in
                e.callerCancelledAtExit && e.error != nil
                    || (e.runsAfter == e.runsBefore && e.error.map { FailureAnalysis($0).isLocalRejection } == true)
            }.count
            let s = breaker.snapshot
            if breaker.countsNothing, s.recentFailures != limitEnded {
                problems.append(
                    "breaker \(breaker.index): \(s.recentFailures) failures counted, \(limitEnded) ended by a limit; entries \(breaker.entries.map { ($0.runsBefore, $0.runsAfter, String(describing: $0.error), $0.cancelledAtExit, $0.callerCancelledAtExit) })"
                )
            }
            if !breaker.countsNothing, s.recentFailures < limitEnded {
                problems.append("breaker \(breaker.index): \(s.recentFailures) failures < \(limitEnded) limit-ended")
            }
            if s.recentCalls > breaker.entries.count - notForTheBreaker {
                problems.append(
                    "breaker \(breaker.index): \(s.recentCalls) calls recorded of \(breaker.entries.count), \(notForTheBreaker) not its business"
                )
            }
        }
        return problems.map { "\(testCase): \($0) [steps \(steps), result \(o.result), end \(o.end)]" }
    }

    @Test("Random compositions keep the rules", .timeLimit(.minutes(5)), arguments: seeds)
    func randomCompositions(seed: UInt64) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<Self.casesPerSeed {
            let testCase = Case(seed: seed, index: index, using: &g)
            let problems = try await Self.check(testCase)
            for problem in problems { Issue.record("\(problem)") }
        }
    }
}
