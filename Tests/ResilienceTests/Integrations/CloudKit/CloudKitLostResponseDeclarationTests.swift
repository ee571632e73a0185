import Foundation
import Resilience
import ResilienceTesting
import Testing

/// A whole call that fails with CloudKit's `serverResponseLost` is sent again when the call, or one
/// enclosing it, was declared idempotent, whatever the classifier's `operationIsIdempotent`; declared
/// not idempotent it stops as such; with no declaration the classifier's flag decides, as before
/// (not retried by default). The same at every entry point, for the error in every shape.
@Suite(
    .timeLimit(.minutes(5)),
    .disabled(if: runsUnderThreadSanitizer, "seeded rounds starve under ThreadSanitizer; run alone"))
struct CloudKitLostResponseDeclarationTests {
    static let seeds: [UInt64] = [1, 2, 3, 4]
    static let maximumAttempts = 3

    /// How the lost response reaches the policy.
    enum Shape: CaseIterable, CustomStringConvertible {
        case direct, nsUnderlying, appEnum

        var description: String {
            switch self {
            case .direct: "direct"
            case .nsUnderlying: "NSUnderlyingErrorKey"
            case .appEnum: "app enum"
            }
        }

        /// The error, wrapped `depth` times (1...3) where the shape wraps.
        func error(depth: Int) -> any Error {
            let lost = cloudKitError(.serverResponseLost)
            switch self {
            case .direct:
                return lost
            case .nsUnderlying:
                var error: NSError = lost
                for level in 0..<depth {
                    error = NSError(domain: "App\(level)", code: level, userInfo: [NSUnderlyingErrorKey: error])
                }
                return error
            case .appEnum:
                var error: any Error = lost
                for _ in 0..<depth { error = SyncFailure.cloudKit(error) }
                return error
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

    /// How the call's idempotency is declared: by the call, by a call enclosing it, or not at all.
    enum Declaration: CaseIterable, CustomStringConvertible {
        case none, idempotent, notIdempotent, enclosingIdempotent, enclosingNotIdempotent

        /// The call's own declaration.
        var own: Idempotency? {
            switch self {
            case .idempotent: .idempotent
            case .notIdempotent: .notIdempotent
            default: nil
            }
        }

        /// The declaration of the call enclosing it.
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
            case .idempotent: "idempotent"
            case .notIdempotent: "notIdempotent"
            case .enclosingIdempotent: "enclosed in idempotent"
            case .enclosingNotIdempotent: "enclosed in notIdempotent"
            }
        }
    }

    /// The policy's classifier.
    enum Classifier: CaseIterable, CustomStringConvertible {
        case cloudKit, cloudKitIdempotent, standard

        var classifier: any RetryClassifier {
            switch self {
            case .cloudKit: CloudKitRetryClassifier()
            case .cloudKitIdempotent: CloudKitRetryClassifier(operationIsIdempotent: true)
            case .standard: DefaultRetryClassifier()
            }
        }

        var description: String {
            switch self {
            case .cloudKit: "CloudKitRetryClassifier()"
            case .cloudKitIdempotent: "CloudKitRetryClassifier(operationIsIdempotent: true)"
            case .standard: "DefaultRetryClassifier()"
            }
        }
    }

    /// Where the call enters the library.
    enum Entry: CaseIterable, CustomStringConvertible {
        case execute, outcome, attemptTimeout, pipeline, standardHTTP, batch, advice

        var description: String {
            switch self {
            case .execute: "execute"
            case .outcome: "outcome"
            case .attemptTimeout: "execute(attemptTimeout:)"
            case .pipeline: "pipeline retry stage"
            case .standardHTTP: "standardHTTP"
            case .batch: "retryingFailedItems"
            case .advice: "RetryAdvice"
            }
        }
    }

    /// What the call should do: send the lost response again until its attempts run out, or stop at once.
    static func expectedStop(_ declaration: Declaration, _ classifier: Classifier) -> RetryStopReason {
        if declaration.own?.isIdempotent == false || declaration.enclosing?.isIdempotent == false {
            return .notIdempotent
        }
        if declaration.own != nil || declaration.enclosing != nil { return .exhausted }
        // Not sent again, it may have been applied: it says so, as an item held back for it does.
        return classifier == .cloudKitIdempotent ? .exhausted : .notIdempotent
    }

    /// What one call did.
    struct Observed {
        var sends: Int
        /// The stop reason, when the entry point reports one.
        var stopReason: RetryStopReason?
        var advice: RetryAdvice?
        var thrown: (any Error)?
    }

    @Test(arguments: seeds)
    func aLostResponseIsRetriedAsTheCallsDeclarationSays(seed: UInt64) async throws {
        var generator = SeededRandomNumberGenerator(seed: seed)
        var cases: [(Shape, Declaration, Classifier, Entry)] = []
        for shape in Shape.allCases {
            for declaration in Declaration.allCases {
                for classifier in Classifier.allCases {
                    for entry in Entry.allCases {
                        // The preset's classifier is its own: the default rules decide there.
                        if entry == .standardHTTP, classifier != .standard { continue }
                        cases.append((shape, declaration, classifier, entry))
                    }
                }
            }
        }
        cases.shuffle(using: &generator)
        for (shape, declaration, classifier, entry) in cases {
            let error = shape.error(depth: Int.random(in: 1...3, using: &generator))
            let encloser = Encloser.allCases.randomElement(using: &generator)!
            let label = "\(entry), \(shape), \(declaration) (\(encloser)), \(classifier)"
            let observed = try await Self.run(
                entry, error: error, declaration: declaration, classifier: classifier, encloser: encloser)
            let expected = Self.expectedStop(declaration, classifier)
            switch entry {
            case .advice:
                #expect(observed.sends == 0, "\(label)")
                let reason: RetryAdvice.Reason =
                    switch expected {
                    case .exhausted: .serverBusy
                    case .notIdempotent: .outcomeUnknown
                    default: .permanent
                    }
                #expect(observed.advice?.reason == reason, "\(label)")
                #expect(observed.advice?.isRetryUseful == (expected == .exhausted), "\(label)")
            default:
                #expect(observed.sends == (expected == .exhausted ? Self.maximumAttempts : 1), "\(label)")
                if entry != .standardHTTP { #expect(observed.stopReason == expected, "\(label)") }
                // The call ends with the lost response as it came, in its shape.
                #expect(observed.thrown.map { String(reflecting: $0) } == String(reflecting: error), "\(label)")
            }
            if entry == .outcome {
                // The advice for the outcome agrees with what the call did.
                let reason: RetryAdvice.Reason =
                    switch expected {
                    case .exhausted: .serverBusy
                    case .notIdempotent: .outcomeUnknown
                    default: .permanent
                    }
                #expect(observed.advice?.reason == reason, "\(label): advice for the outcome")
            }
        }
    }

    /// What encloses the call under test when an enclosing call declares.
    enum Encloser: CaseIterable {
        case policy, timeout, pipeline
    }

    /// Runs one call of `entry` that fails with `error` every time, declared as `declaration`, when
    /// enclosed, by a call of `encloser`.
    static func run(
        _ entry: Entry, error: any Error, declaration: Declaration, classifier: Classifier, encloser: Encloser
    ) async throws -> Observed {
        let clock = TestClock()
        let finished = FinishedCalls()
        let policy = try RetryPolicy(
            maximumAttempts: Self.maximumAttempts, backoff: .constant(.seconds(1)), jitter: .none,
            classifier: classifier.classifier, observer: finished, clock: clock)
        let sends = Counter()
        let own = declaration.own
        let body: @Sendable () async -> Observed = {
            var observed = Observed(sends: 0)
            switch entry {
            case .execute:
                do {
                    if let own {
                        _ = try await policy.execute(idempotency: own) { () async throws -> Int in
                            sends.increment()
                            throw error
                        }
                    } else {
                        _ = try await policy.execute { () async throws -> Int in
                            sends.increment()
                            throw error
                        }
                    }
                } catch { observed.thrown = error }
            case .outcome:
                let outcome: RetryOutcome<Int>
                if let own {
                    outcome = await policy.outcome(idempotency: own) { () async throws -> Int in
                        sends.increment()
                        throw error
                    }
                } else {
                    outcome = await policy.outcome { () async throws -> Int in
                        sends.increment()
                        throw error
                    }
                }
                if case .failure(let error) = outcome.result { observed.thrown = error }
                observed.advice = RetryAdvice(for: outcome, classifier: classifier.classifier)
            case .attemptTimeout:
                do {
                    _ = try await policy.execute(attemptTimeout: .seconds(3_600), idempotency: own) {
                        () async throws -> Int in
                        sends.increment()
                        throw error
                    }
                } catch { observed.thrown = error }
            case .pipeline:
                let pipeline = ResiliencePipeline { policy }
                do {
                    if let own {
                        _ = try await pipeline.execute(idempotency: own) { () async throws -> Int in
                            sends.increment()
                            throw error
                        }
                    } else {
                        _ = try await pipeline.execute { () async throws -> Int in
                            sends.increment()
                            throw error
                        }
                    }
                } catch { observed.thrown = error }
            case .standardHTTP:
                do {
                    let http = try ResiliencePipeline.standardHTTP(
                        totalTimeout: .seconds(3_600), maximumAttempts: Self.maximumAttempts,
                        attemptTimeout: .seconds(1_800), clock: clock)
                    if let own {
                        _ = try await http.execute(idempotency: own) { () async throws -> Int in
                            sends.increment()
                            throw error
                        }
                    } else {
                        _ = try await http.execute { () async throws -> Int in
                            sends.increment()
                            throw error
                        }
                    }
                } catch { observed.thrown = error }
            case .batch:
                do {
                    _ = try await policy.retryingFailedItems(["A", "B"], idempotency: own) { _ in
                        sends.increment()
                        throw error
                    }
                } catch { observed.thrown = error }
            case .advice:
                observed.advice = RetryAdvice(for: error, idempotency: own, classifier: classifier.classifier)
            }
            observed.sends = sends.value
            return observed
        }
        var observed = await advancingThroughEachWait(clock, longest: .seconds(10)) {
            guard let enclosing = declaration.enclosing else { return await body() }
            // A call that declares and never retries on its own encloses the call under test.
            switch encloser {
            case .policy:
                guard let outer = try? RetryPolicy(maximumAttempts: 1, clock: clock) else {
                    return Observed(sends: -1)
                }
                let outcome = await outer.outcome(idempotency: enclosing) { await body() }
                return (try? outcome.result.get()) ?? Observed(sends: -1)
            case .timeout:
                guard let timeout = try? Timeout(.seconds(3_600), clock: clock) else { return Observed(sends: -1) }
                return (try? await timeout.execute(idempotency: enclosing) { await body() }) ?? Observed(sends: -1)
            case .pipeline:
                guard let timeout = try? Timeout(.seconds(3_600), clock: clock) else { return Observed(sends: -1) }
                let pipeline = ResiliencePipeline { timeout }
                return (try? await pipeline.execute(idempotency: enclosing) { await body() }) ?? Observed(sends: -1)
            }
        }
        // The call under test is the first to finish: an enclosing call finishes after it.
        observed.stopReason = finished.finished.first?.reason
        return observed
    }

    /// A classifier asked directly: a declaration in the context decides a lost response, in every
    /// shape; without one, the flag does.
    @Test func theClassifiersReadTheDeclarationFromTheContext() {
        let cases: [(Idempotency, Bool, Bool)] = [
            (.idempotent, true, true), (.notIdempotent, true, false), (.idempotent, false, false),
        ]
        for shape in Shape.allCases {
            let error = shape.error(depth: 2)
            for (idempotency, declared, retriedWithoutTheFlag) in cases {
                let context = RetryContext(attempt: 1, idempotency: idempotency, idempotencyIsDeclared: declared)
                let label = "\(shape), \(idempotency), declared: \(declared)"
                #expect(
                    CloudKitRetryClassifier().decision(for: error, context: context)?.isRetryable
                        == retriedWithoutTheFlag, "\(label)")
                #expect(
                    DefaultRetryClassifier().decision(for: error, context: context)?.isRetryable
                        == retriedWithoutTheFlag, "\(label)")
                #expect(
                    CloudKitRetryClassifier(operationIsIdempotent: true).decision(for: error, context: context)?
                        .isRetryable == (declared ? idempotency.isIdempotent : true), "\(label)")
            }
        }
        // A context made without the argument declares nothing, as before.
        #expect(RetryContext(attempt: 1).idempotencyIsDeclared == false)
    }
}
