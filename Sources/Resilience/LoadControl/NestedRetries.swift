public import Synchronization

/// Whether a ``RetryPolicy`` retries a failure that a policy nested inside its
/// operation already retried to exhaustion.
///
/// Retries multiply across layers: an SDK that makes 3 attempts inside an app
/// that makes 3 attempts inside a job that makes 3 sends 27 requests to a server
/// that is down. Google's *Site Reliability Engineering* book ("Handling
/// Overload") asks that only the layer right above the failing one retry. By
/// default (``innermostLayer``) a policy whose operation failed because an inner
/// policy ran out of attempts stops at once with
/// ``RetryStopReason/retriedByInnerPolicy``, and tells the layer above it the
/// same, so three nested policies of 3 attempts send 3 requests, not 27.
///
/// ```swift
/// let sdkPolicy = try RetryPolicy(maximumAttempts: 3)
/// let appPolicy = try RetryPolicy(maximumAttempts: 3)  // .innermostLayer
/// try await appPolicy.execute { try await sdkPolicy.execute { try await server.call() } }  // at most 3 calls
/// let stubborn = try RetryPolicy(maximumAttempts: 3, nestedRetries: .everyLayer)
/// ```
///
/// A policy that stopped with ``RetryStopReason/notIdempotent`` (the request may
/// have reached the server and may not run twice) tells the layers above the
/// same, and they stop with that reason too, whatever this setting or their own
/// idempotency says: the inner policy knows the request. A call declared not
/// idempotent through ``Hedging/execute(idempotency:operation:)``,
/// ``Timeout/execute(idempotency:operation:)`` or
/// ``ResiliencePipeline/execute(idempotency:operation:)`` tells them the same when
/// it fails in a way that does not prove its request never left. A policy that stopped
/// for any other reason (its classifier said final, its budget or deadline ran
/// out) leaves the layer above free to judge the failure itself.
///
/// ## What is detected, exactly
///
/// The fact travels with the error value. A policy that retried a failure to
/// exhaustion ends its call with the operation's error unchanged (a
/// ``CircuitBreakerOpenError`` excepted: one thread throws one box for equal
/// rejections, so the policy ends with an equal error in a box of its own), and
/// that error is the same value, the same heap box, all the way up: through a rethrow, a
/// `catch` that throws `error` again, a `Result`, a child task, a task group or
/// an `async let` (the machinery of ``RetryPolicy/execute(attemptTimeout:idempotency:operation:)``).
/// The policy remembers that value, without keeping it alive, and a policy whose
/// attempt fails with that very value stops. So:
///
/// - Detected: the inner policy's error reaching the outer one as thrown, in the
///   same task or across child tasks, however many layers deep, while anything
///   still holds it.
/// - Not detected, by design: an error the code between the layers replaces,
///   wraps or rebuilds (`throw SDKError.network(underlying: error)`, `catch let e
///   as MyError { throw e }` on a concrete type, which boxes it anew). That is a
///   new failure, and the outer policy judges it with its classifier as usual.
///   Rethrow the error you caught, or throw it as `any Error`, to keep the fact.
/// - Never confused: two policies called one after the other, each failing with
///   an error that merely looks the same; a record whose error is gone (its memory
///   reused by a new error); many tasks failing at once. No record is ever dropped
///   while its error lives, and none outlives it.
/// - Shared error values: some libraries throw one stored value again and again
///   (a `static let` error). A record is taken only if it was written after the
///   taker's attempt began, so a stored error that some policy exhausted earlier
///   never stops a later call. Errs towards sending less in one case: another call
///   exhausting the same stored value, or stopping on it because its request was not
///   idempotent, while this attempt runs (a swallowed failure of a call made inside
///   the attempt included); the policy then stops after one attempt, as for a
///   nested one. A policy never takes its own record.
public struct NestedRetries: Sendable, Hashable, CustomStringConvertible {
    /// Whether this layer retries what a layer below already retried to exhaustion.
    public let retriesExhaustedFailures: Bool

    private init(retriesExhaustedFailures: Bool) {
        self.retriesExhaustedFailures = retriesExhaustedFailures
    }

    /// Only the innermost policy retries a given failure; the default.
    public static let innermostLayer = NestedRetries(retriesExhaustedFailures: false)
    /// This policy retries failures whatever the policies inside it did: the opt-out.
    public static let everyLayer = NestedRetries(retriesExhaustedFailures: true)

    /// `innermostLayer` or `everyLayer`.
    public var description: String { self.retriesExhaustedFailures ? "everyLayer" : "innermostLayer" }
}

/// Where a policy that ran out of attempts leaves word for the policy around it.
///
/// A plain call may not install a task-local on its success path (it would cost
/// more than the call), so an outer policy has nothing in place when its first
/// attempt runs. Instead the word is keyed by the identity of the error value: an
/// `any Error` is one reference to a heap box, and a rethrow, a `Result`, a child
/// task or a task group hands on the same box. A policy that exhausts its attempts
/// records the box here, holding it weakly; the policy around it, on its failure
/// path, finds the box it caught and stops, if the record was written after its
/// attempt began (`mark`, one relaxed load per attempt, is all the success path pays).
///
/// A record lives exactly as long as its error: it is found only while the weak
/// reference still answers with the very box (so a new error allocated where a
/// dead one was never matches), and records whose errors are gone are swept out
/// as new ones are written. Nothing is dropped for lack of room, so many tasks
/// failing at once cannot push out a record in transit.
@usableFromInline
enum NestedRetryLedger {
    /// Counts the records written, so that a record can be told from one written before an attempt began.
    @usableFromInline static let written = Atomic<UInt64>(0)

    /// The count of records written so far: read when an attempt starts, one relaxed load.
    @inlinable static var mark: UInt64 { Self.written.load(ordering: .relaxed) }

    struct Record {
        /// The error box; `nil` once the error is gone.
        weak var error: AnyObject?
        /// When it was written, in ``written``'s count: a record is an inner policy's word
        /// about an attempt only if it was written after the attempt began.
        var sequence: UInt64
        /// The policies that passed the word on, innermost first. A policy never takes a
        /// record it is part of: its operation threw a stored error it had already
        /// retried to exhaustion in an earlier call.
        var writers: [ObjectIdentifier]
        /// What the innermost writer's stop said about the failure.
        var word: Word
    }

    /// What a policy that stopped leaves word of.
    enum Word {
        /// It retried the failure to exhaustion: the layers above need not retry it again.
        case exhausted
        /// The request may have reached the server and is not idempotent: no layer above
        /// may send it again, whatever it was told about its own operation.
        case notIdempotent
    }

    struct Records {
        var byError: [ObjectIdentifier: Record] = [:]
        /// Sweep out dead records once this many are kept; doubles with the live ones.
        var sweepThreshold = Self.minimumSweepThreshold
        static let minimumSweepThreshold = 64
    }

    private static let records = Lock(Records())

    /// Records that `writer` stopped on `error` with `word` (or passed on an inner policy's word for it).
    ///
    /// - Parameters:
    ///   - writer: The policy that stopped, or `nil` for a call that declared itself not
    ///     idempotent without a policy of its own (``recordFailure(_:ofCallDeclaring:)``).
    ///   - inner: The writers of the record this policy took, if it stopped because of one.
    static func record(
        _ word: Word, for error: any Error, by writer: RetryPolicy?, passingOn inner: [ObjectIdentifier]
    ) {
        let box = self.box(of: error)
        let key = ObjectIdentifier(box)
        let writers = writer.map { inner + [ObjectIdentifier($0)] } ?? inner
        let sequence = self.written.wrappingAdd(1, ordering: .relaxed).newValue
        self.records.withLock { records in
            if let existing = records.byError[key], existing.error === box {
                // Another policy already recorded this error: keep every writer it named.
                records.byError[key]?.writers = existing.writers + writers.filter { !existing.writers.contains($0) }
                records.byError[key]?.sequence = sequence
                // "Not idempotent" is never weakened to "exhausted" by a later writer.
                if word == .notIdempotent { records.byError[key]?.word = .notIdempotent }
                return
            }
            records.byError[key] = Record(error: box, sequence: sequence, writers: writers, word: word)
            if records.byError.count >= records.sweepThreshold {
                records.byError = records.byError.filter { $0.value.error != nil }
                records.sweepThreshold = Swift.max(Records.minimumSweepThreshold, records.byError.count * 2)
            }
        }
    }

    /// Leaves word for the policies around a call that declared `idempotency` itself and
    /// failed with `error`, as a policy that stops on a request that is not idempotent does.
    ///
    /// For ``Hedging``, a ``Timeout`` and a ``ResiliencePipeline`` called with a declaration:
    /// they hand it down to the policies inside, but a policy around them runs outside that
    /// declaration, and would otherwise judge the failure as idempotent and send the request
    /// again. The word is left when the rules stop a call declared so on this failure
    /// (``Rulebook/stopReason(for:idempotency:)`` says ``RetryStopReason/notIdempotent``:
    /// nothing proves the request never left); a declaration that allows a second run, or a
    /// failure that proves the request was never sent, leaves none.
    ///
    /// Failure path only: one analysis of `error`, and a record when the rules say so.
    static func recordFailure(_ error: any Error, ofCallDeclaring idempotency: Idempotency?) {
        guard let idempotency, !idempotency.isIdempotent, !Task.isCancelled,
            Rulebook.stopReason(for: FailureAnalysis(error), idempotency: idempotency) == .notIdempotent
        else { return }
        self.record(.notIdempotent, for: error, by: nil, passingOn: [])
    }

    /// The word and writers of the record another policy left for this very `error`, or `nil` for none.
    ///
    /// A record `taker` is part of is not taken (see ``Record/writers``).
    static func take(
        _ error: any Error, by taker: ObjectIdentifier, writtenAfter mark: UInt64
    ) -> (word: Word, writers: [ObjectIdentifier])? {
        let box = self.box(of: error)
        let key = ObjectIdentifier(box)
        return self.records.withLock { records in
            guard let record = records.byError[key] else { return nil }
            guard record.error === box else {
                records.byError[key] = nil  // its error is gone; this is a new one at the same address
                return nil
            }
            // Written before the taker's attempt began: word about an earlier call, not this one.
            guard record.sequence > mark else { return nil }
            return record.writers.contains(taker) ? nil : (record.word, record.writers)
        }
    }

    /// How many records are kept now, live or not yet swept; for tests.
    static var count: Int {
        self.records.withLock { $0.byError.count }
    }

    /// Whether `one` and `other` are the same value in the same heap box.
    static func isSameBox(_ one: any Error, _ other: any Error) -> Bool {
        self.box(of: one) === self.box(of: other)
    }

    /// The heap box an `any Error` refers to: the value's identity, stable across rethrows.
    private static func box(of error: any Error) -> AnyObject {
        // An existential `any Error` is a single strong reference to a box (on Apple
        // platforms an Objective-C object, an `NSError` itself for one), on every platform.
        // `as any Error` keeps the existential closed: opened, the cast would see the
        // concrete value, not the box.
        unsafeBitCast(error as any Error, to: AnyObject.self)
    }
}
