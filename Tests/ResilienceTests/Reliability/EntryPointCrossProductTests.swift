import Foundation
import ResilienceTesting
import ResilienceURLSession
import Testing

@testable import Resilience

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// MARK: - Error kinds and shapes

/// What one run of the operation does.
enum SeamKind: String, CaseIterable, Sendable {
    case success, tooMany, unavailable503, offline, timedOut, connectionLost, refused401, cancel, hang, libraryTimeout

    /// Whether the request may have reached the server (so a not-idempotent call must not re-send).
    var maybeSent: Bool {
        switch self {
        case .tooMany, .unavailable503, .timedOut, .connectionLost, .hang, .libraryTimeout: true
        case .success, .offline, .refused401, .cancel: false
        }
    }

    var isHTTPStatus: Bool { self == .tooMany || self == .unavailable503 || self == .refused401 }
    var status: Int { self == .tooMany ? 429 : self == .unavailable503 ? 503 : 401 }
}

/// An app's enum that holds an error, or the response a request failed with.
enum SeamAppError: Error {
    case network(any Error)
    case http(HTTPURLResponse, Data)
    case client(SeamClientResponse)
}

struct SeamClientResponse: HTTPResponseReporting, Sendable {
    var statusCode: Int
    var headers: [String: String]
    func value(forHTTPHeaderField field: String) -> String? {
        self.headers.first { $0.key.caseInsensitiveCompare(field) == .orderedSame }?.value
    }
}

/// How the kind's error is built (for HTTP kinds) and wrapped.
enum SeamShape: Sendable, CustomStringConvertible {
    case direct
    case nsUnderlying(Int)  // 1...3 levels
    case restService
    case appEnum
    case heldHTTPURLResponse  // HTTP kinds: an app enum holding an HTTPURLResponse
    case heldInUserInfo  // HTTP kinds: an NSError holding an HTTPURLResponse among its userInfo
    case heldClientResponse  // HTTP kinds: an HTTPResponseReporting type of the client's own
    case cloudKitItem
    case nsThenApp  // an NSError under an app enum under an NSError

    var description: String {
        switch self {
        case .direct: "direct"
        case .nsUnderlying(let n): "ns×\(n)"
        case .restService: "restService"
        case .appEnum: "appEnum"
        case .heldHTTPURLResponse: "heldHTTPURLResponse"
        case .heldInUserInfo: "heldInUserInfo"
        case .heldClientResponse: "heldClientResponse"
        case .cloudKitItem: "cloudKitItem"
        case .nsThenApp: "ns(app(ns))"
        }
    }

    static func draw(for kind: SeamKind, using g: inout SeededRandomNumberGenerator) -> SeamShape {
        var choices: [SeamShape] = [
            .direct, .nsUnderlying(Int.random(in: 1...3, using: &g)), .restService, .appEnum, .nsThenApp,
        ]
        if kind.isHTTPStatus { choices += [.heldHTTPURLResponse, .heldInUserInfo, .heldClientResponse] }
        // A partial failure only for the kinds whose stop is not in question.
        if kind == .tooMany { choices.append(.cloudKitItem) }
        return choices.randomElement(using: &g)!
    }

    static func response(_ status: Int, _ headers: [String: String]) -> HTTPURLResponse {
        HTTPURLResponse(
            url: URL(string: "http://127.0.0.1/seam")!, statusCode: status, httpVersion: "HTTP/1.1",
            headerFields: headers)!
    }

    func error(for kind: SeamKind, idempotency: Idempotency?) -> any Error {
        let headers: [String: String] = kind == .refused401 ? [:] : ["Retry-After": "1"]
        switch self {
        case .heldHTTPURLResponse where kind.isHTTPStatus:
            return SeamAppError.http(Self.response(kind.status, headers), Data())
        case .heldInUserInfo where kind.isHTTPStatus:
            return NSError(
                domain: "com.example.sdk", code: 7,
                userInfo: ["com.example.sdk.response": Self.response(kind.status, headers)])
        case .heldClientResponse where kind.isHTTPStatus:
            return SeamAppError.client(SeamClientResponse(statusCode: kind.status, headers: headers))
        default: break
        }
        let bare: any Error
        switch kind {
        case .tooMany, .unavailable503, .refused401:
            bare = HTTPResponseError(
                statusCode: kind.status, headers: headers.reduce(into: [:]) { $0[$1.key.lowercased()] = $1.value })
        case .offline: bare = URLError(.notConnectedToInternet)
        case .timedOut, .hang: bare = URLError(.timedOut)
        case .connectionLost: bare = URLError(.networkConnectionLost)
        case .cancel: bare = CancellationError()
        case .libraryTimeout:
            bare = TimeoutError(timeoutName: "inner", timeout: .seconds(2), requestIdempotency: idempotency)
        case .success: bare = URLError(.unknown)
        }
        switch self {
        case .direct, .heldHTTPURLResponse, .heldInUserInfo, .heldClientResponse: return bare
        case .nsUnderlying(let n):
            var e = bare
            for i in 0..<n { e = NSError(domain: "App\(i)", code: i, userInfo: [NSUnderlyingErrorKey: e]) }
            return e
        case .restService: return RESTServiceError(sdkCode: 9, underlying: bare)
        case .appEnum: return SeamAppError.network(bare)
        case .nsThenApp:
            let inner = NSError(domain: "In", code: 1, userInfo: [NSUnderlyingErrorKey: bare])
            return NSError(domain: "Out", code: 2, userInfo: [NSUnderlyingErrorKey: SeamAppError.network(inner)])
        case .cloudKitItem:
            return NSError(
                domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.partialFailure.rawValue,
                userInfo: [CloudKitErrorCode.partialErrorsKey: ["record-1": bare]])
        }
    }
}

/// How the call is declared.
enum SeamDeclaration: Sendable, CustomStringConvertible {
    case none, idempotent, notIdempotent
    case method(String)

    var idempotency: Idempotency? {
        switch self {
        case .none: nil
        case .idempotent: .idempotent
        case .notIdempotent: .notIdempotent
        case .method(let m): .http(method: m)
        }
    }

    var notIdempotent: Bool {
        switch self {
        case .notIdempotent: true
        case .method(let m): m == "POST" || m == "PATCH"
        default: false
        }
    }

    var description: String {
        switch self {
        case .none: "undeclared"
        case .idempotent: "idempotent"
        case .notIdempotent: "notIdempotent"
        case .method(let m): m
        }
    }

    static func draw(using g: inout SeededRandomNumberGenerator) -> SeamDeclaration {
        switch Int.random(in: 0..<5, using: &g) {
        case 0: .none
        case 1: .idempotent
        case 2: .notIdempotent
        default: .method(["GET", "PUT", "DELETE", "POST", "PATCH"].randomElement(using: &g)!)
        }
    }
}

// MARK: - Stages

enum SeamStageKind: String, CaseIterable, Sendable {
    case totalTimeout, attemptTimeout, fallback, bulkhead, rateLimiter, hedging, retry, breaker
}

/// Records what the operation inside a breaker ended with.
struct SeamEntry: Sendable {
    var runsBefore: Int
    var runsAfter: Int
    var error: (any Error)?
    var cancelledAtExit: Bool
    var callerCancelledAtExit: Bool
}

struct SeamRecording<Base: PipelineOperation>: PipelineOperation {
    let base: Base
    let entries: Recorder<SeamEntry>
    let runs: @Sendable () -> Int
    let callerCancelled: @Sendable () -> Bool

    nonisolated(nonsending) func run() async throws -> Base.Value {
        let before = self.runs()
        do {
            let value = try await self.base.run()
            self.entries.record(
                SeamEntry(
                    runsBefore: before, runsAfter: self.runs(), error: nil, cancelledAtExit: Task.isCancelled,
                    callerCancelledAtExit: self.callerCancelled()))
            return value
        } catch {
            self.entries.record(
                SeamEntry(
                    runsBefore: before, runsAfter: self.runs(), error: error, cancelledAtExit: Task.isCancelled,
                    callerCancelledAtExit: self.callerCancelled()))
            throw error
        }
    }
}

/// One stage of any kind, so that a pipeline's builder can take them in any order.
struct SeamAnyStage: ResilienceStrategy {
    enum Held: Sendable {
        case timeout(Timeout)
        case fallback(Fallback<Int>)
        case bulkhead(ConcurrencyLimiter)
        case rateLimiter(RateLimiter)
        case hedging(Hedging)
        case retry(RetryPolicy)
        case breaker(CircuitBreaker, Recorder<SeamEntry>, @Sendable () -> Int, @Sendable () -> Bool)
    }
    let held: Held

    nonisolated(nonsending) func executeInPipeline<Operation: PipelineOperation>(
        _ operation: Operation
    ) async throws -> Operation.Value {
        switch self.held {
        case .timeout(let s): return try await s.executeInPipeline(operation)
        case .fallback(let s): return try await s.executeInPipeline(operation)
        case .bulkhead(let s): return try await s.executeInPipeline(operation)
        case .rateLimiter(let s): return try await s.executeInPipeline(operation)
        case .hedging(let s): return try await s.executeInPipeline(operation)
        case .retry(let s): return try await s.executeInPipeline(operation)
        case .breaker(let s, let entries, let runs, let cancelled):
            return try await s.executeInPipeline(
                SeamRecording(base: operation, entries: entries, runs: runs, callerCancelled: cancelled))
        }
    }
}

// MARK: - Cases

enum SeamEntryPoint: String, CaseIterable, Sendable {
    case policyExecute, policyOutcome, pipeline, pipelineRegistry, outcomeAroundPipeline, standardHTTP
}

struct SeamCase: CustomStringConvertible, Sendable {
    var seed: UInt64
    var index: Int
    var entry: SeamEntryPoint
    var stages: [SeamStageKind]  // outermost first
    var registries: Bool  // breaker and rate limiter through their registries
    var declaration: SeamDeclaration
    var classifierMethod: Bool  // the retry stage's classifier is HTTPRetryClassifier(method:) for the declared method
    var script: [(SeamKind, SeamShape)]

    init(seed: UInt64, index: Int, using g: inout SeededRandomNumberGenerator) {
        self.seed = seed
        self.index = index
        self.entry = SeamEntryPoint.allCases.randomElement(using: &g)!
        self.stages = Array(SeamStageKind.allCases.shuffled(using: &g).prefix(Int.random(in: 1...6, using: &g)))
        self.registries = Bool.random(using: &g)
        self.declaration = SeamDeclaration.draw(using: &g)
        self.classifierMethod = Bool.random(using: &g)
        let weighted: [SeamKind] = SeamKind.allCases + [.tooMany, .timedOut, .unavailable503, .hang]
        self.script = (0..<Int.random(in: 1...5, using: &g)).map { _ in
            let kind = weighted.randomElement(using: &g)!
            return (kind, SeamShape.draw(for: kind, using: &g))
        }
    }

    var usesPipelineStages: Bool {
        self.entry == .pipeline || self.entry == .pipelineRegistry || self.entry == .outcomeAroundPipeline
    }

    var description: String {
        let stagesText = self.usesPipelineStages ? " stages \(self.stages.map(\.rawValue))" : ""
        return
            "seed \(self.seed) case \(self.index): \(self.entry.rawValue)\(stagesText) \(self.declaration)\(self.registries ? " registries" : "")\(self.classifierMethod ? " methodClassifier" : "") script \(self.script.map { "\($0.0.rawValue)[\($0.1)]" })"
    }
}

struct SeamObserved {
    var runs: [SeamKind]
    var starts: [Duration] = []
    var result: Result<Int, any Error>
    var outcome: RetryOutcome<Int>?
    var end: Duration
    var cancelledAt: Duration?
    var breaker: (snapshot: CircuitBreakerSnapshot, entries: [SeamEntry], innermost: Bool, hedgingOutside: Bool)?
    var stalled = false
}

@Suite(
    .timeLimit(.minutes(5)),
    .disabled(if: runsUnderThreadSanitizer, "starved under ThreadSanitizer; runs in the plain test step"))
struct EntryPointCrossProductTests {
    static let hangLength: Duration = .seconds(30)

    static func policy(_ c: SeamCase, clock: some Clock<Duration>, attempts: Int = 3) throws -> RetryPolicy {
        let classifier: any RetryClassifier =
            if c.classifierMethod, case .method(let m) = c.declaration {
                HTTPRetryClassifier(method: m)
            } else {
                DefaultRetryClassifier()
            }
        return try RetryPolicy(
            maximumAttempts: attempts, backoff: .constant(.seconds(1)), jitter: .none, classifier: classifier,
            maximumRetryAfter: .seconds(60), clock: clock)
    }

    static func makeBreaker(_ key: String, clock: some Clock<Duration>) -> CircuitBreaker {
        try! CircuitBreaker(
            name: key, tripRule: .failureRate(threshold: 1.0, minimumCalls: 10_000, window: .count(10_000)),
            classifier: DefaultCircuitBreakerFailureClassifier(), pushback: .disabled, clock: clock)
    }

    static func makeRateLimiter(_ key: String, clock: some Clock<Duration>) -> RateLimiter {
        try! RateLimiter(
            .tokenBucket(capacity: 3, tokensPerPeriod: 1, period: .seconds(2)), name: key, maximumWait: .seconds(3),
            clock: clock)
    }

    // swift-format-ignore
    static func pipelineRunner(
        _ s: [SeamAnyStage], registry: Bool
    ) throws -> @Sendable (Idempotency?, @escaping @Sendable () async throws -> Int) async throws -> Int {
        func runner<S: ResilienceStrategy>(_ make: @escaping @Sendable () -> ResiliencePipeline<S>) throws
            -> @Sendable (Idempotency?, @escaping @Sendable () async throws -> Int) async throws -> Int
        {
            let pipeline = registry ? try ResiliencePipelineRegistry<String, S>(makePipeline: { _ in make() }).pipeline(for: "k") : make()
            return { idempotency, op in
                if let idempotency { return try await pipeline.execute(idempotency: idempotency, operation: op) }
                return try await pipeline.execute(operation: op)
            }
        }
        switch s.count {
        case 1: return try runner { ResiliencePipeline { s[0] } }
        case 2: return try runner { ResiliencePipeline { s[0]; s[1] } }
        case 3: return try runner { ResiliencePipeline { s[0]; s[1]; s[2] } }
        case 4: return try runner { ResiliencePipeline { s[0]; s[1]; s[2]; s[3] } }
        case 5: return try runner { ResiliencePipeline { s[0]; s[1]; s[2]; s[3]; s[4] } }
        default: return try runner { ResiliencePipeline { s[0]; s[1]; s[2]; s[3]; s[4]; s[5] } }
        }
    }

    static func run(_ c: SeamCase) async throws -> SeamObserved {
        let clock = CallClock()
        let watchers = WatcherList()
        let ran = Recorder<SeamKind>()
        let starts = Recorder<Duration>()
        let cancelledAt = Lock<Duration?>(nil)
        let callerCancelled = Lock(false)
        let rootTask = Lock<Task<Int, any Error>?>(nil)
        let outcomeBox = Lock<RetryOutcome<Int>?>(nil)
        let script = c.script
        let idempotency = c.declaration.idempotency
        let hang = Self.hangLength

        let op: @Sendable () async throws -> Int = {
            let index = ran.values.count
            let (kind, shape) = index < script.count ? script[index] : (.success, .direct)
            ran.record(kind)
            starts.record(clock.now.offset)
            switch kind {
            case .success: return 1
            case .hang:
                try await clock.sleep(for: hang)
                throw shape.error(for: kind, idempotency: idempotency)
            case .cancel:
                cancelledAt.withLock { $0 = clock.now.offset }
                callerCancelled.withLock { $0 = true }
                rootTask.withLock { $0 }?.cancel()
                throw shape.error(for: kind, idempotency: idempotency)
            default:
                throw shape.error(for: kind, idempotency: idempotency)
            }
        }

        var breakerInfo: (CircuitBreaker, Recorder<SeamEntry>, Bool, Bool)?
        let call: @Sendable () async throws -> Int
        switch c.entry {
        case .policyExecute:
            let policy = try Self.policy(c, clock: clock)
            call = {
                if let idempotency { return try await policy.execute(idempotency: idempotency, operation: op) }
                return try await policy.execute(operation: op)
            }
        case .policyOutcome:
            let policy = try Self.policy(c, clock: clock)
            call = {
                let outcome: RetryOutcome<Int> =
                    if let idempotency {
                        await policy.outcome(idempotency: idempotency, operation: op)
                    } else {
                        await policy.outcome(operation: op)
                    }
                outcomeBox.withLock { $0 = outcome }
                return try outcome.get()
            }
        case .standardHTTP:
            let pipeline = watchers.add(
                try ResiliencePipeline<StandardHTTPStrategies>.standardHTTP(
                    totalTimeout: .seconds(25), maximumAttempts: 3, attemptTimeout: .seconds(10), clock: clock))
            call = {
                if let idempotency { return try await pipeline.execute(idempotency: idempotency, operation: op) }
                return try await pipeline.execute(operation: op)
            }
        case .pipeline, .pipelineRegistry, .outcomeAroundPipeline:
            var stages: [SeamAnyStage] = []
            let runs: @Sendable () -> Int = { ran.values.count }
            let cancelled: @Sendable () -> Bool = { callerCancelled.withLock { $0 } }
            for (i, kind) in c.stages.enumerated() {
                switch kind {
                case .totalTimeout:
                    stages.append(SeamAnyStage(held: .timeout(watchers.add(try Timeout(.seconds(20), clock: clock)))))
                case .attemptTimeout:
                    stages.append(SeamAnyStage(held: .timeout(watchers.add(try Timeout(.seconds(5), clock: clock)))))
                case .fallback: stages.append(SeamAnyStage(held: .fallback(.value(-1))))
                case .bulkhead:
                    stages.append(SeamAnyStage(held: .bulkhead(try ConcurrencyLimiter(limit: 1, clock: clock))))
                case .rateLimiter:
                    let limiter =
                        c.registries
                        ? try RateLimiterRegistry<String>(
                            maximumCount: 4, makeLimiter: { Self.makeRateLimiter($0, clock: clock) }
                        )
                        .limiter(for: "k")
                        : Self.makeRateLimiter("k", clock: clock)
                    stages.append(SeamAnyStage(held: .rateLimiter(limiter)))
                case .hedging:
                    stages.append(
                        SeamAnyStage(
                            held: .hedging(
                                watchers.add(try Hedging(delay: .fixed(.seconds(3)), maximumHedges: 1, clock: clock)))))
                case .retry: stages.append(SeamAnyStage(held: .retry(try Self.policy(c, clock: clock))))
                case .breaker:
                    let breaker =
                        c.registries
                        ? try CircuitBreakerRegistry<String>(
                            maximumCount: 4, makeBreaker: { Self.makeBreaker($0, clock: clock) }
                        )
                        .breaker(for: "b")
                        : Self.makeBreaker("b", clock: clock)
                    let entries = Recorder<SeamEntry>()
                    let hedgingOutside = c.stages[..<i].contains(.hedging)
                    breakerInfo = (breaker, entries, i == c.stages.count - 1, hedgingOutside)
                    stages.append(SeamAnyStage(held: .breaker(breaker, entries, runs, cancelled)))
                }
            }
            let runner = try Self.pipelineRunner(stages, registry: c.entry == .pipelineRegistry)
            if c.entry == .outcomeAroundPipeline {
                let policy = try Self.policy(c, clock: clock)
                call = {
                    let outcome: RetryOutcome<Int> =
                        if let idempotency {
                            await policy.outcome(idempotency: idempotency) { try await runner(idempotency, op) }
                        } else {
                            await policy.outcome { try await runner(nil, op) }
                        }
                    outcomeBox.withLock { $0 = outcome }
                    return try outcome.get()
                }
            } else {
                call = { try await runner(idempotency, op) }
            }
        }

        let task = Task<Int, any Error> {
            try await CallClock.$isCallTask.withValue(true) {
                try await yieldUntil { rootTask.withLock({ $0 }) != nil }
                return try await call()
            }
        }
        rootTask.withLock { $0 = task }
        // Time moves only while the call waits, to the next deadline; once the caller cancelled,
        // or past 400 seconds (no case's waits last that long), it stands still.
        let (result, stalled) = await driveCall(task, on: clock, watching: watchers) { now, _ in
            cancelledAt.withLock { $0 } == nil && now <= .seconds(400)
        }
        let end = clock.now.offset
        clock.base.advance(by: .zero)
        return SeamObserved(
            runs: ran.values, starts: starts.values, result: result, outcome: outcomeBox.withLock { $0 }, end: end,
            cancelledAt: cancelledAt.withLock { $0 },
            breaker: breakerInfo.map { ($0.0.snapshot(), $0.1.values, $0.2, $0.3) }, stalled: stalled)
    }

    /// The stop reason RetryPolicy.outcome must give a direct call, from the documented rules alone.
    static func expectedStop(_ c: SeamCase, attempts: Int = 3) -> (RetryStopReason, Int)? {
        for i in 0..<attempts {
            let (kind, shape) = i < c.script.count ? c.script[i] : (.success, .direct)
            if case .cloudKitItem = shape { return (.tooManyRequests, i + 1) }  // only 429s are put in one
            switch kind {
            case .success: return (.succeeded, i + 1)
            case .tooMany: return (.tooManyRequests, i + 1)
            case .cancel: return (.cancelled, i + 1)
            case .refused401: return (.authenticationRequired, i + 1)
            case .offline: break
            case .unavailable503, .timedOut, .connectionLost, .hang, .libraryTimeout:
                if c.declaration.notIdempotent { return (.notIdempotent, i + 1) }
            }
            if i == attempts - 1 { return (kind == .offline ? .exhausted : .exhausted, attempts) }
        }
        return nil
    }

    static func check(_ c: SeamCase) async throws -> [String] {
        let o = try await run(c)
        var problems: [String] = []
        let runs = o.runs
        if o.stalled { problems.append("the call had not ended when the test's time limit cancelled it") }
        // 1. A 429 anywhere ends the call: nothing runs after it.
        if let i = runs.firstIndex(of: .tooMany), i < runs.count - 1 {
            problems.append("ran again after the 429 of run \(i)")
        }
        // 2. A call not idempotent is not sent again after a failure that may have left.
        if c.declaration.notIdempotent, let i = runs.firstIndex(where: { $0.maybeSent }), i < runs.count - 1 {
            problems.append("not idempotent, but ran again after \(runs[i]) (run \(i))")
        }
        // 3. A cancelled caller never gets a value, and the call ends without more time.
        if o.cancelledAt != nil, case .success(let v) = o.result {
            problems.append("caller cancelled but got value \(v)")
        }
        if let at = o.cancelledAt, o.end - at > .seconds(2) { problems.append("cancelled at \(at), ended at \(o.end)") }
        // 4. The outcome's stop reason, for a direct policy call.
        if c.entry == .policyOutcome, let outcome = o.outcome, let (reason, attempts) = Self.expectedStop(c) {
            if outcome.stopReason != reason || outcome.attempts != attempts {
                problems.append(
                    "outcome: \(outcome.stopReason) after \(outcome.attempts), expected \(reason) after \(attempts)")
            }
            if reason == .tooManyRequests, outcome.retryAfter != .seconds(1) {
                problems.append("429's retryAfter \(String(describing: outcome.retryAfter)), expected 1s")
            }
        }
        // Around a pipeline, a 429 that ends the call stops it with tooManyRequests.
        if c.entry == .outcomeAroundPipeline, let outcome = o.outcome, case .failure(let error) = outcome.result,
            o.cancelledAt == nil, runs.last == .tooMany, !c.stages.contains(.fallback),
            FailureAnalysis(error).isTooManyRequests, outcome.stopReason != .tooManyRequests
        {
            problems.append("outcome around pipeline ended with a 429 but stopped \(outcome.stopReason)")
        }
        // 5. A fallback answers every failure but the caller's cancellation.
        if c.usesPipelineStages, let f = c.stages.firstIndex(of: .fallback), o.cancelledAt == nil,
            case .failure(let error) = o.result
        {
            let outside = c.stages[..<f]
            let a = FailureAnalysis(error)
            let explained =
                (a.interruption == .timeLimit && (outside.contains(.totalTimeout) || outside.contains(.attemptTimeout)))
                || (a.isLocalRejection && (outside.contains(.bulkhead) || outside.contains(.rateLimiter)))
                || (error is CircuitBreakerOpenError && outside.contains(.breaker))
            if !explained { problems.append("fallback inside did not answer \(error)") }
        }
        // 6. The breaker counts what CircuitBreakers.md says.
        if let b = o.breaker {
            var low = 0
            var high = 0
            for e in b.entries {
                guard let error = e.error else { continue }
                if e.callerCancelledAtExit { continue }
                if b.innermost && e.runsAfter == e.runsBefore + 1 && !b.hedgingOutside {
                    let kind = runs[e.runsBefore]
                    let shape = e.runsBefore < c.script.count ? c.script[e.runsBefore].1 : .direct
                    let counts: Bool
                    if case .cloudKitItem = shape {
                        counts = kind == .tooMany
                    } else {
                        switch kind {
                        case .tooMany, .unavailable503, .timedOut, .connectionLost, .libraryTimeout: counts = true
                        case .hang: counts = e.cancelledAtExit || true  // a time limit ended it, or it timed out
                        case .offline, .refused401, .cancel, .success: counts = false
                        }
                    }
                    if counts {
                        low += 1
                        high += 1
                    }
                } else {
                    // Where the breaker sees more than one run, the rulebook's word with the default classifier.
                    let a = FailureAnalysis(error)
                    let counted =
                        Rulebook.countsAsFailure(a) ?? DefaultCircuitBreakerFailureClassifier().countsAsFailure(error)
                    if counted { high += 1 }
                    if counted && !e.cancelledAtExit { low += 1 }
                    if e.cancelledAtExit { high += 1 }
                }
            }
            let n = b.snapshot.recentFailures
            if n < low || n > high {
                problems.append(
                    "breaker counted \(n) failures, expected \(low)...\(high); entries \(b.entries.map { "\($0.runsBefore)->\($0.runsAfter) \(String(describing: $0.error)) cancelled:\($0.cancelledAtExit)" })"
                )
            }
        }
        return problems.map {
            "\(c): \($0) [runs \(zip(runs, o.starts).map { "\($0.0.rawValue)@\($0.1.components.seconds)" }), result \(o.result), end \(o.end)]"
        }
    }

    @Test("Random entry points, stage orders, shapes and declarations keep the rules", arguments: Array(UInt64(1)...20))
    func randomCases(seed: UInt64) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<40 {
            let c = SeamCase(seed: seed, index: index, using: &g)
            for problem in try await Self.check(c) { Issue.record("\(problem)") }
        }
    }

    /// A registry's instance obeys exactly what a directly built one does.
    @Test("Registries' instances behave as directly built ones", arguments: Array(UInt64(100)...105))
    func registriesMatchDirect(seed: UInt64) async throws {
        var g = SeededRandomNumberGenerator(seed: seed)
        for index in 0..<30 {
            var c = SeamCase(seed: seed, index: index, using: &g)
            if !c.usesPipelineStages || c.entry == .pipelineRegistry { continue }
            if c.stages.contains(.hedging) { continue }  // hedges race the clock: not repeatable
            c.registries = false
            let direct = try await Self.run(c)
            c.registries = true
            c.entry = c.entry == .pipeline ? .pipelineRegistry : c.entry
            let viaRegistry = try await Self.run(c)
            func summary(_ o: SeamObserved) -> String {
                let r =
                    switch o.result {
                    case .success(let v): "value \(v)"
                    case .failure(let e): "error \(type(of: e))"
                    }
                return
                    "\(o.runs.map(\.rawValue)) \(r) failures \(o.breaker?.snapshot.recentFailures ?? -1) calls \(o.breaker?.snapshot.recentCalls ?? -1)"
            }
            if summary(direct) != summary(viaRegistry) {
                var plain = c
                plain.registries = false
                plain.entry = plain.entry == .pipelineRegistry ? .pipeline : plain.entry
                let again = try await Self.run(plain)
                if summary(again) != summary(direct) { continue }  // not repeatable: no finding
                Issue.record("\(c): direct \(summary(direct)) vs registry \(summary(viaRegistry))")
            }
        }
    }
}
