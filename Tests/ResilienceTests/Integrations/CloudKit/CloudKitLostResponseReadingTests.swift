import Foundation
import Resilience
import ResilienceTesting
import Testing

/// One reading of a request whose response was lost, wherever the loss is reported: a whole call
/// that fails with CloudKit's `serverResponseLost` (as thrown, under `NSUnderlyingErrorKey`, in an
/// app's own error), one item of a batch's partial failure, and a partial failure that names none
/// of the items it sent (which may have been partly saved, as a lost response may have been applied).
///
/// Each is sent again exactly when a second send is known to be harmless: the call's own declaration
/// decides, else an enclosing call's; with neither, a classifier's "not idempotent" holds it back and
/// otherwise `CloudKitRetryClassifier.operationIsIdempotent` decides (false by default). A classifier's
/// "idempotent" (`HTTPRetryClassifier(method: "GET")`) speaks for HTTP requests, not for CloudKit's,
/// and is no such word.
@Suite(
    .timeLimit(.minutes(5)),
    .disabled(
        if: runsUnderThreadSanitizer,
        "seeded rounds on the test clock starve under ThreadSanitizer; run in the plain test step"))
struct CloudKitLostResponseReadingTests {
    static let seeds: [UInt64] = [21, 22, 23]
    static let maximumAttempts = 3

    /// Where the lost response is reported.
    enum Shape: CaseIterable, CustomStringConvertible {
        /// The whole call failed with it, as CloudKit throws it.
        case direct
        /// The whole call failed with it, under `NSUnderlyingErrorKey`.
        case nsUnderlying
        /// The whole call failed with it, in an app's own error.
        case appEnum
        /// One item of a batch's partial failure (the item and the failure wrapped at random).
        case batchItem
        /// A partial failure that names none of the items sent (wrapped at random).
        case unnamedBatch

        var isWholeCall: Bool { self == .direct || self == .nsUnderlying || self == .appEnum }

        var description: String {
            switch self {
            case .direct: "direct"
            case .nsUnderlying: "NSUnderlyingErrorKey"
            case .appEnum: "app enum"
            case .batchItem: "batch item"
            case .unnamedBatch: "partial failure naming no item"
            }
        }
    }

    /// How an error is wrapped, at random.
    enum Wrapping: CaseIterable, CustomStringConvertible {
        case none, nsUnderlying, appEnum

        func wrap(_ error: NSError, depth: Int) -> any Error {
            switch self {
            case .none:
                return error
            case .nsUnderlying:
                var wrapped = error
                for level in 0..<depth {
                    wrapped = NSError(domain: "App\(level)", code: level, userInfo: [NSUnderlyingErrorKey: wrapped])
                }
                return wrapped
            case .appEnum:
                var wrapped: any Error = error
                for _ in 0..<depth { wrapped = SyncFailure.cloudKit(wrapped) }
                return wrapped
            }
        }

        var description: String {
            switch self {
            case .none: "as thrown"
            case .nsUnderlying: "under NSUnderlyingErrorKey"
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

    /// Where a whole-call failure enters the library.
    enum Entry: CaseIterable, CustomStringConvertible {
        case outcome, batch

        var description: String {
            switch self {
            case .outcome: "outcome"
            case .batch: "retryingFailedItems"
            }
        }
    }

    /// How the call's idempotency is declared.
    enum Declaration: CaseIterable, CustomStringConvertible {
        case none, idempotent, notIdempotent, enclosingIdempotent, enclosingNotIdempotent

        var own: Idempotency? {
            switch self {
            case .idempotent: .idempotent
            case .notIdempotent: .notIdempotent
            default: nil
            }
        }

        var enclosing: Idempotency? {
            switch self {
            case .enclosingIdempotent: .idempotent
            case .enclosingNotIdempotent: .notIdempotent
            default: nil
            }
        }

        var description: String {
            switch self {
            case .none: "undeclared"
            case .idempotent: "own .idempotent"
            case .notIdempotent: "own .notIdempotent"
            case .enclosingIdempotent: "enclosed in .idempotent"
            case .enclosingNotIdempotent: "enclosed in .notIdempotent"
            }
        }
    }

    /// The policy's classifier: what it says of the call's idempotency (an HTTP method), and the
    /// CloudKit classifier's flag, when there is one.
    struct Setup: CustomStringConvertible {
        /// The HTTP method of an `HTTPRetryClassifier` put first, if any.
        var method: String?
        /// `operationIsIdempotent` of a `CloudKitRetryClassifier` after it; `nil` for none (the default rules).
        var flag: Bool?

        static let all: [Setup] = [nil, "GET", "POST"].flatMap { method in
            [nil, false, true].map { Setup(method: method, flag: $0) }
        }

        var classifier: any RetryClassifier {
            var chain: [any RetryClassifier] = []
            if let method = self.method { chain.append(HTTPRetryClassifier(method: method)) }
            if let flag = self.flag { chain.append(CloudKitRetryClassifier(operationIsIdempotent: flag)) }
            if chain.isEmpty { return DefaultRetryClassifier() }
            return chain.count == 1 ? chain[0] : ChainedRetryClassifier(chain)
        }

        var description: String {
            let cloudKit = self.flag.map { "CloudKitRetryClassifier(operationIsIdempotent: \($0))" }
            let parts = [self.method.map { "HTTPRetryClassifier(method: \($0))" }, cloudKit].compactMap { $0 }
            return parts.isEmpty ? "DefaultRetryClassifier()" : parts.joined(separator: " + ")
        }
    }

    /// The one reading: whether a request that may have been applied, with its response lost, is sent again.
    static func sendsAgain(_ declaration: Declaration, _ setup: Setup) -> Bool {
        if let declared = declaration.own ?? declaration.enclosing { return declared.isIdempotent }
        if let method = setup.method, !Idempotency.http(method: method).isIdempotent { return false }
        return setup.flag == true
    }

    /// Whether the rules read the call as not idempotent: declared so, or, with no declaration,
    /// its classifier says so.
    static func rulesReadNotIdempotent(_ declaration: Declaration, _ setup: Setup) -> Bool {
        if let declared = declaration.own ?? declaration.enclosing { return !declared.isIdempotent }
        return setup.method.map { !Idempotency.http(method: $0).isIdempotent } ?? false
    }

    /// What one call did.
    struct Observed: Sendable {
        var batches: [[String]] = []
        var stopReason: RetryStopReason?
        var resultStop: RetryStopReason?
        var sentItems: [String]?
        var failureReasons: [String: RetryStopReason]?
        var threw = false
    }

    @Test(arguments: seeds)
    func aLostResponseIsReadOneWayForAWholeCallAndForABatch(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        var cases: [(Shape, Entry, Declaration, Setup)] = []
        for shape in Shape.allCases {
            for entry in Entry.allCases where shape.isWholeCall || entry == .batch {
                for declaration in Declaration.allCases {
                    for setup in Setup.all { cases.append((shape, entry, declaration, setup)) }
                }
            }
        }
        cases.shuffle(using: &generator)
        for (shape, entry, declaration, setup) in cases {
            let depth = Int.random(in: 1...3, using: &generator)
            let itemWrapping = Wrapping.allCases.randomElement(using: &generator)!
            let failureWrapping = Wrapping.allCases.randomElement(using: &generator)!
            let encloser = Encloser.allCases.randomElement(using: &generator)!
            let error: any Error =
                switch shape {
                case .direct: cloudKitError(.serverResponseLost)
                case .nsUnderlying: Wrapping.nsUnderlying.wrap(cloudKitError(.serverResponseLost), depth: depth)
                case .appEnum: Wrapping.appEnum.wrap(cloudKitError(.serverResponseLost), depth: depth)
                case .batchItem:
                    failureWrapping.wrap(
                        cloudKitError(
                            .partialFailure,
                            userInfo: [
                                CloudKitErrorCode.partialErrorsKey: [
                                    "B": itemWrapping.wrap(cloudKitError(.serverResponseLost), depth: depth)
                                ]
                            ]),
                        depth: depth)
                case .unnamedBatch: failureWrapping.wrap(cloudKitError(.partialFailure), depth: depth)
                }
            var label = "\(shape) via \(entry), \(declaration) (by \(encloser)), \(setup)"
            if shape.isWholeCall, entry == .batch { label += " (a whole attempt)" }
            if !shape.isWholeCall { label += ", failure \(failureWrapping)" }
            if shape == .batchItem { label += ", item \(itemWrapping)" }
            let observed = try await Self.run(
                shape, entry, error: error, declaration: declaration, setup: setup, encloser: encloser)
            let again = Self.sendsAgain(declaration, setup)
            let notIdempotent = Self.rulesReadNotIdempotent(declaration, setup)
            switch shape {
            case .direct, .nsUnderlying, .appEnum:
                #expect(observed.batches.count == (again ? Self.maximumAttempts : 1), "\(label): \(observed.batches)")
                // Not sent again, it may have been applied, as a held-back item may: the same reason.
                #expect(observed.stopReason == (again ? .exhausted : .notIdempotent), "\(label)")
                #expect(observed.threw, "\(label)")
            case .batchItem:
                // A was saved; B's response was lost.
                #expect(observed.batches == (again ? [["A", "B"], ["B"]] : [["A", "B"]]), "\(label)")
                #expect(observed.sentItems == (again ? ["A", "B"] : ["A"]), "\(label)")
                #expect(observed.failureReasons == (again ? [:] : ["B": .notIdempotent]), "\(label)")
                #expect(observed.resultStop == (again ? .succeeded : .notIdempotent), "\(label)")
            case .unnamedBatch:
                #expect(observed.batches == (again ? [["A", "B"], ["A", "B"]] : [["A", "B"]]), "\(label)")
                #expect(observed.sentItems == (again ? ["A", "B"] : []), "\(label)")
                let stop: RetryStopReason = again ? .succeeded : notIdempotent ? .notIdempotent : .partialFailure
                #expect(observed.resultStop == stop, "\(label)")
            }
        }
    }

    /// What encloses the call under test when an enclosing call declares.
    enum Encloser: CaseIterable {
        case policy, timeout, pipeline
    }

    /// Runs one call that meets `error`, declared as `declaration`, through a policy with `setup`'s
    /// classifier. A whole-call error fails every attempt; a partial failure only the first.
    static func run(
        _ shape: Shape, _ entry: Entry, error: any Error, declaration: Declaration, setup: Setup, encloser: Encloser
    ) async throws -> Observed {
        let clock = TestClock()
        let finished = FinishedCalls()
        let policy = try RetryPolicy(
            maximumAttempts: Self.maximumAttempts, backoff: .constant(.zero), jitter: .none,
            classifier: setup.classifier, observer: finished, clock: clock)
        let own = declaration.own
        let body: @Sendable () async -> Observed = {
            var observed = Observed()
            let batches = Recorder<[String]>()
            if shape.isWholeCall, entry == .outcome {
                let attempt = { () async throws -> Int in
                    batches.record(["A", "B"])
                    throw error
                }
                let outcome =
                    if let own { await policy.outcome(idempotency: own, operation: attempt) } else {
                        await policy.outcome(operation: attempt)
                    }
                if case .failure = outcome.result { observed.threw = true }
            } else {
                do {
                    let result = try await policy.retryingFailedItems(["A", "B"], idempotency: own) { ids in
                        batches.record(ids)
                        if shape.isWholeCall || batches.values.count == 1 { throw error }
                    }
                    observed.resultStop = result.stopReason
                    observed.sentItems = result.sentItems
                    observed.failureReasons = result.failureReasons
                } catch {
                    observed.threw = true
                }
            }
            observed.batches = batches.values
            return observed
        }
        var observed = await advancingThroughEachWait(clock, longest: .seconds(10)) {
            guard let enclosing = declaration.enclosing else { return await body() }
            // A call that declares and never retries on its own encloses the call under test.
            switch encloser {
            case .policy:
                guard let outer = try? RetryPolicy(maximumAttempts: 1, clock: clock) else { return Observed() }
                let outcome = await outer.outcome(idempotency: enclosing) { await body() }
                return (try? outcome.result.get()) ?? Observed()
            case .timeout:
                guard let timeout = try? Timeout(.seconds(3_600), clock: clock) else { return Observed() }
                return (try? await timeout.execute(idempotency: enclosing) { await body() }) ?? Observed()
            case .pipeline:
                guard let timeout = try? Timeout(.seconds(3_600), clock: clock) else { return Observed() }
                let pipeline = ResiliencePipeline { timeout }
                return (try? await pipeline.execute(idempotency: enclosing) { await body() }) ?? Observed()
            }
        }
        // The call under test is the first to finish: an enclosing call finishes after it.
        observed.stopReason = finished.finished.first?.reason
        return observed
    }
}
