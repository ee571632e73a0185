import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A call that stops on CloudKit's `serverResponseLost` because nothing said a second send is
/// harmless tells the app what a batch item held back for the same reason tells it: the request may
/// have been applied (``RetryStopReason/notIdempotent``, advice ``RetryAdvice/Reason/outcomeUnknown``),
/// not that it will never work (`notRetryable`, `permanent`). The same at every entry point, in every
/// shape of the error, under every classifier that applies CloudKit's rules.
@Suite(
    .timeLimit(.minutes(5)),
    .disabled(
        if: runsUnderThreadSanitizer,
        "seeded rounds on the test clock starve under ThreadSanitizer; run in the plain test step"))
struct CloudKitLostResponseStopTests {
    static let seeds: [UInt64] = [41, 42, 43]
    static let maximumAttempts = 3

    /// How the lost response reaches the library.
    enum Shape: CaseIterable, CustomStringConvertible {
        case direct, nsUnderlying, restService, appEnum

        /// The lost response, wrapped `depth` times (1...3) where the shape wraps.
        func wrap(_ lost: NSError, depth: Int) -> any Error {
            switch self {
            case .direct:
                return lost
            case .nsUnderlying:
                var error = lost
                for level in 0..<depth {
                    error = NSError(domain: "App\(level)", code: level, userInfo: [NSUnderlyingErrorKey: error])
                }
                return error
            case .restService:
                var error: any Error = lost
                for _ in 0..<depth { error = RESTServiceError(message: "save failed", underlying: error) }
                return error
            case .appEnum:
                var error: any Error = lost
                for _ in 0..<depth { error = SyncFailure.cloudKit(error) }
                return error
            }
        }

        var description: String {
            switch self {
            case .direct: "as thrown"
            case .nsUnderlying: "under NSUnderlyingErrorKey"
            case .restService: "in a RESTServiceError"
            case .appEnum: "in an app enum"
            }
        }
    }

    /// An app's error that says nothing of its own.
    enum SyncFailure: Error, UnderlyingErrorProviding {
        case cloudKit(any Error)

        var underlyingErrors: [any Error] {
            switch self {
            case .cloudKit(let error): [error]
            }
        }
    }

    /// An app's own composite classifier: its rules first, then the ones it holds.
    struct AppClassifier: RetryClassifier {
        var rules: [any RetryClassifier]

        func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
            for rule in self.rules {
                if let decision = rule.decision(for: error, context: context) { return decision }
            }
            return nil
        }
    }

    /// A policy's classifier that applies CloudKit's rules with nothing saying a second send is harmless.
    enum Classifier: CaseIterable, CustomStringConvertible {
        case standard, cloudKit, httpFirst, appComposite

        var classifier: any RetryClassifier {
            switch self {
            case .standard: DefaultRetryClassifier()
            case .cloudKit: CloudKitRetryClassifier()
            case .httpFirst: HTTPRetryClassifier(method: "GET").fallingBack(to: CloudKitRetryClassifier())
            case .appComposite: AppClassifier(rules: [CloudKitRetryClassifier()])
            }
        }

        var description: String {
            switch self {
            case .standard: "DefaultRetryClassifier()"
            case .cloudKit: "CloudKitRetryClassifier()"
            case .httpFirst: "HTTPRetryClassifier(GET) then CloudKitRetryClassifier()"
            case .appComposite: "an app's classifier holding CloudKitRetryClassifier()"
            }
        }
    }

    /// Where the call enters the library.
    enum Entry: CaseIterable, CustomStringConvertible {
        case execute, outcome, attemptTimeout, pipeline, registry, batchWhole, batchItem

        var description: String {
            switch self {
            case .execute: "execute"
            case .outcome: "outcome"
            case .attemptTimeout: "execute(attemptTimeout:)"
            case .pipeline: "pipeline retry stage"
            case .registry: "registry's pipeline"
            case .batchWhole: "retryingFailedItems, whole attempt"
            case .batchItem: "retryingFailedItems, one item"
            }
        }
    }

    /// What one call did.
    struct Observed: Sendable {
        var sends = 0
        var stopReason: RetryStopReason?
        /// The advice the app gets for what it was handed: the thrown error, the outcome, or the item's error.
        var advice: RetryAdvice?
        var failureReasons: [String: RetryStopReason]?
        var resultStop: RetryStopReason?
    }

    @Test(arguments: seeds)
    func aLostResponseThatIsNotSentAgainSaysItsOutcomeIsUnknown(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        var cases: [(Shape, Classifier, Entry)] = []
        for shape in Shape.allCases {
            for classifier in Classifier.allCases {
                for entry in Entry.allCases { cases.append((shape, classifier, entry)) }
            }
        }
        cases.shuffle(using: &generator)
        for (shape, classifier, entry) in cases {
            let depth = Int.random(in: 1...3, using: &generator)
            let label = "\(entry), lost response \(shape) (depth \(depth)), \(classifier)"
            let error = shape.wrap(cloudKitError(.serverResponseLost), depth: depth)
            let observed = try await Self.run(entry, error: error, classifier: classifier)
            #expect(observed.sends == 1, "\(label): sent \(observed.sends) times")
            #expect(observed.stopReason == .notIdempotent, "\(label)")
            #expect(observed.advice?.reason == .outcomeUnknown, "\(label): \(String(describing: observed.advice))")
            #expect(observed.advice?.isRetryUseful == false, "\(label)")
            if entry == .batchItem {
                #expect(observed.failureReasons == ["B": .notIdempotent], "\(label)")
                #expect(observed.resultStop == .notIdempotent, "\(label)")
            }
        }
    }

    /// Runs one undeclared call of `entry` whose request's response was lost.
    static func run(_ entry: Entry, error: any Error, classifier: Classifier) async throws -> Observed {
        let clock = TestClock()
        let finished = FinishedCalls()
        let policy = try RetryPolicy(
            maximumAttempts: Self.maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: classifier.classifier, observer: finished, clock: clock)
        let sends = Counter()
        let attempt: @Sendable () async throws -> Int = {
            sends.increment()
            throw error
        }
        var observed = await advancingThroughEachWait(clock, longest: .seconds(10)) {
            var observed = Observed()
            var thrown: (any Error)?
            switch entry {
            case .execute:
                do { _ = try await policy.execute(operation: attempt) } catch { thrown = error }
            case .outcome:
                let outcome = await policy.outcome(operation: attempt)
                observed.advice = RetryAdvice(for: outcome, classifier: classifier.classifier)
            case .attemptTimeout:
                do {
                    _ = try await policy.execute(attemptTimeout: .seconds(3_600), idempotency: nil, operation: attempt)
                } catch { thrown = error }
            case .pipeline:
                do { _ = try await ResiliencePipeline { policy }.execute(operation: attempt) } catch { thrown = error }
            case .registry:
                do {
                    let pipeline = try Self.registryPipeline { ResiliencePipeline { policy } }
                    _ = try await pipeline.execute(operation: attempt)
                } catch { thrown = error }
            case .batchWhole:
                do {
                    _ = try await policy.retryingFailedItems(["A", "B"]) { _ in _ = try await attempt() }
                } catch { thrown = error }
            case .batchItem:
                // A was saved; B's response was lost.
                var item: (any Error)?
                do {
                    let result = try await policy.retryingFailedItems(["A", "B"]) { _ in
                        sends.increment()
                        throw cloudKitError(
                            .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: ["B": error]])
                    }
                    observed.failureReasons = result.failureReasons
                    observed.resultStop = result.stopReason
                    item = result.failedItems["B"]
                } catch {}
                // The batch returns rather than throws: the held-back item's reason is what the app reads.
                observed.stopReason = observed.failureReasons?["B"]
                if let itemError = item {
                    observed.advice = RetryAdvice(for: itemError, classifier: classifier.classifier)
                }
            }
            if let thrown { observed.advice = RetryAdvice(for: thrown, classifier: classifier.classifier) }
            observed.sends = sends.value
            return observed
        }
        if entry != .batchItem { observed.stopReason = finished.finished.first?.reason }
        return observed
    }

    /// The pipeline a registry hands out for one key.
    static func registryPipeline<S: ResilienceStrategy>(
        _ make: @escaping @Sendable () -> ResiliencePipeline<S>
    ) throws -> ResiliencePipeline<S> {
        try ResiliencePipelineRegistry<String, S>(makePipeline: { _ in make() }).pipeline(for: "notes")
    }

    /// The rules above the classifiers stay as they were: a lost response that also carries an HTTP
    /// 429 is the server's pushback (never retried, its hint kept); one that carries CloudKit's
    /// retry-after hint stops as possibly applied and still reports the hint; a rate limit with
    /// `CKErrorRetryAfterKey` is retried after it.
    @Test func pushbackAndHintsAreReadAsBefore() async throws {
        for shape in Shape.allCases {
            // A 429 wrapping the lost response: the pushback decides, whatever the declaration.
            let pushback = RESTServiceError(
                httpStatus: 429, retryAfter: .seconds(7),
                underlying: shape.wrap(cloudKitError(.serverResponseLost), depth: 1))
            for idempotency in [nil, Idempotency.idempotent] {
                let clock = TestClock()
                let policy = try RetryPolicy(
                    maximumAttempts: Self.maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none,
                    classifier: CloudKitRetryClassifier(operationIsIdempotent: true), clock: clock)
                let sends = Counter()
                let attempt = { () async throws -> Int in
                    sends.increment()
                    throw pushback
                }
                let outcome =
                    if let idempotency { await policy.outcome(idempotency: idempotency, operation: attempt) } else {
                        await policy.outcome(operation: attempt)
                    }
                let label = "429 over a lost response \(shape), \(String(describing: idempotency))"
                #expect(sends.value == 1, "\(label)")
                #expect(outcome.stopReason == .tooManyRequests, "\(label)")
                let advice = RetryAdvice(for: outcome, classifier: CloudKitRetryClassifier())
                #expect(
                    advice == RetryAdvice(reason: .rateLimited, isRetryUseful: true, retryAfter: .seconds(7)),
                    "\(label)")
                #expect(
                    RetryAdvice(for: pushback, classifier: CloudKitRetryClassifier()).reason == .rateLimited, "\(label)"
                )
            }

            // A lost response with CloudKit's hint: not sent again, possibly applied, the hint reported.
            let hinted = shape.wrap(
                cloudKitError(.serverResponseLost, userInfo: [ErrorHints.cloudKitRetryAfterKey: 4.0]), depth: 2)
            let policy = try RetryPolicy(
                maximumAttempts: Self.maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none,
                classifier: CloudKitRetryClassifier(), clock: TestClock())
            let outcome = await policy.outcome { () async throws -> Int in throw hinted }
            #expect(outcome.attempts == 1, "hinted lost response \(shape)")
            #expect(outcome.stopReason == .notIdempotent, "hinted lost response \(shape)")
            #expect(outcome.retryAfter == .seconds(4), "hinted lost response \(shape)")
            #expect(RetryAdvice(for: outcome)?.reason == .outcomeUnknown, "hinted lost response \(shape)")

            // A rate limit with CloudKit's hint, in the same shape: retried after the hint.
            let clock = TestClock()
            let limited = try RetryPolicy(
                maximumAttempts: Self.maximumAttempts, backoff: .constant(.milliseconds(100)), jitter: .none,
                classifier: CloudKitRetryClassifier(), clock: clock)
            let rateLimited = shape.wrap(
                cloudKitError(.requestRateLimited, userInfo: [ErrorHints.cloudKitRetryAfterKey: 3.5]), depth: 1)
            let runs = Counter()
            let saved = await advancingThroughEachWait(clock) {
                await limited.outcome { () async throws -> String in
                    if runs.increment() == 1 { throw rateLimited }
                    return "saved"
                }
            }
            #expect(try saved.result.get() == "saved", "rate limit \(shape)")
            #expect(clock.sleepRequests == [.milliseconds(3_500)], "rate limit \(shape)")
        }
    }

    /// A batch item is judged by the policy's classifier as a whole call with the same error is,
    /// whatever the classifier is made of: a link in front that speaks for CloudKit errors decides
    /// for items too, and a CloudKit classifier inside an app's own composite is heard.
    @Test func aBatchItemIsJudgedByTheClassifierAWholeCallIsJudgedBy() async throws {
        struct Setup {
            var name: String
            var classifier: any RetryClassifier
            var code: CloudKitErrorCode
            /// Whether a whole call with the item's error is sent again, and why it stops if not.
            var sentAgain: Bool
            var stop: RetryStopReason
        }
        let setups = [
            // The default rules answer for every CloudKit error: the flag behind them is never asked.
            Setup(
                name: "DefaultRetryClassifier then CloudKitRetryClassifier(operationIsIdempotent: true)",
                classifier: DefaultRetryClassifier().fallingBack(
                    to: CloudKitRetryClassifier(operationIsIdempotent: true)),
                code: .serverResponseLost, sentAgain: false, stop: .notIdempotent),
            // The app's composite holds the flag: a lost response is sent again.
            Setup(
                name: "an app's classifier holding CloudKitRetryClassifier(operationIsIdempotent: true)",
                classifier: AppClassifier(rules: [CloudKitRetryClassifier(operationIsIdempotent: true)]),
                code: .serverResponseLost, sentAgain: true, stop: .succeeded),
            // The app's own rule in front: a busy zone is not waited out here.
            Setup(
                name: "an app's rule for zoneBusy, then CloudKitRetryClassifier()",
                classifier: ClosureRetryClassifier { error, _ in
                    CloudKitErrorCode(error) == .zoneBusy ? .doNotRetry : nil
                }.fallingBack(to: CloudKitRetryClassifier()),
                code: .zoneBusy, sentAgain: false, stop: .notRetryable),
        ]
        for setup in setups {
            let whole = try RetryPolicy(
                maximumAttempts: Self.maximumAttempts, backoff: .constant(.zero), jitter: .none,
                classifier: setup.classifier, clock: TestClock())
            let wholeSends = Counter()
            let outcome = await whole.outcome { () async throws -> Int in
                wholeSends.increment()
                throw cloudKitError(setup.code)
            }
            #expect(wholeSends.value == (setup.sentAgain ? Self.maximumAttempts : 1), "\(setup.name): whole call")
            #expect(outcome.stopReason == (setup.sentAgain ? .exhausted : setup.stop), "\(setup.name): whole call")

            let batch = try RetryPolicy(
                maximumAttempts: Self.maximumAttempts, backoff: .constant(.zero), jitter: .none,
                classifier: setup.classifier, clock: TestClock())
            let batches = Recorder<[String]>()
            let result = try await batch.retryingFailedItems(["A", "B"]) { ids in
                batches.record(ids)
                guard batches.values.count == 1 else { return }
                throw cloudKitError(
                    .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: ["B": cloudKitError(setup.code)]])
            }
            #expect(batches.values == (setup.sentAgain ? [["A", "B"], ["B"]] : [["A", "B"]]), "\(setup.name): batch")
            #expect(result.failureReasons == (setup.sentAgain ? [:] : ["B": setup.stop]), "\(setup.name): batch")
            #expect(result.sentItems == (setup.sentAgain ? ["A", "B"] : ["A"]), "\(setup.name): batch")
        }
    }

    /// A partial failure that names none of the items sent is sent again whole on the word a lost
    /// response needs, read from the policy's classifier whatever it is made of.
    @Test func anUnnamedPartialFailureReadsTheWordFromAnAppsCompositeClassifier() async throws {
        for (flag, sentAgain) in [(true, true), (false, false)] {
            let policy = try RetryPolicy(
                maximumAttempts: Self.maximumAttempts, backoff: .constant(.zero), jitter: .none,
                classifier: AppClassifier(rules: [CloudKitRetryClassifier(operationIsIdempotent: flag)]),
                clock: TestClock())
            let batches = Recorder<[String]>()
            let result = try await policy.retryingFailedItems(["A", "B"]) { ids in
                batches.record(ids)
                guard batches.values.count == 1 else { return }
                throw cloudKitError(.partialFailure)
            }
            #expect(batches.values.count == (sentAgain ? 2 : 1), "flag \(flag): \(batches.values)")
            #expect(result.stopReason == (sentAgain ? .succeeded : .partialFailure), "flag \(flag)")
        }
    }

    /// A policy around a call that stopped on a lost response, as possibly applied, does not send
    /// it again either, whatever its own classifier says: the inner call's word is the one about
    /// the request that may have been applied, as for any call stopped as not idempotent.
    @Test func anEnclosingPolicyDoesNotSendAgainWhatAnInnerCallHeldBack() async throws {
        let clock = TestClock()
        let inner = try RetryPolicy(
            maximumAttempts: Self.maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: CloudKitRetryClassifier(), clock: clock)
        let outer = try RetryPolicy(
            maximumAttempts: Self.maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: CloudKitRetryClassifier(operationIsIdempotent: true), clock: clock)
        let sends = Counter()
        let outcome = await advancingThroughEachWait(clock) {
            await outer.outcome { () async throws -> Int in
                try await inner.execute { () async throws -> Int in
                    sends.increment()
                    throw SyncFailure.cloudKit(cloudKitError(.serverResponseLost))
                }
            }
        }
        #expect(sends.value == 1)
        #expect(outcome.stopReason == .notIdempotent)
        #expect(RetryAdvice(for: outcome)?.reason == .outcomeUnknown)
    }

    /// A wait the policy's classifier asks for holds back an item sent again, as it holds back a
    /// whole call sent again.
    @Test func aWaitTheClassifierAsksForHoldsBackAnItemAsItHoldsBackAWholeCall() async throws {
        let classifier = ClosureRetryClassifier { error, _ in
            CloudKitErrorCode(error) == .zoneBusy ? .retry(after: .seconds(5)) : nil
        }.fallingBack(to: CloudKitRetryClassifier())

        let wholeClock = TestClock()
        let whole = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, classifier: classifier,
            clock: wholeClock)
        let wholeRuns = Counter()
        let outcome = await advancingThroughEachWait(wholeClock) {
            await whole.outcome { () async throws -> Int in
                if wholeRuns.increment() == 1 { throw cloudKitError(.zoneBusy) }
                return 1
            }
        }
        #expect(outcome.stopReason == .succeeded)
        #expect(wholeClock.sleepRequests == [.seconds(5)])

        let batchClock = TestClock()
        let batch = try RetryPolicy(
            maximumAttempts: 2, backoff: .constant(.seconds(1)), jitter: .none, classifier: classifier,
            clock: batchClock)
        let batches = Recorder<[String]>()
        let result = await advancingThroughEachWait(batchClock) {
            try? await batch.retryingFailedItems(["A", "B"]) { ids in
                batches.record(ids)
                guard batches.values.count == 1 else { return }
                throw cloudKitError(
                    .partialFailure, userInfo: [CloudKitErrorCode.partialErrorsKey: ["B": cloudKitError(.zoneBusy)]])
            }
        }
        #expect(batches.values == [["A", "B"], ["B"]])
        #expect(result?.stopReason == .succeeded)
        #expect(batchClock.sleepRequests == [.seconds(5)])
    }
}
