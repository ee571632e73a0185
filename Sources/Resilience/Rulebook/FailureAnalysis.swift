import Foundation

/// The facts the library reads from a failure, once, before any classifier is asked.
///
/// Every entry point (``RetryPolicy``, ``CircuitBreaker``, the HTTP and SQLite
/// helpers) reads a failure through this one analysis and applies the rules no
/// classifier can change (``Rulebook``).
/// The facts are looked for anywhere in the error's chain: the error itself,
/// `NSUnderlyingErrorKey`, the library's own wrappers, CloudKit's per-item
/// errors, and errors adopting ``UnderlyingErrorProviding`` (see that protocol
/// for the rest). An HTTP response an error holds as a value, with a status that
/// says the request failed, counts as an error that reports its status and hint
/// (see ``HTTPResponseReporting``).
///
/// A library time limit's error (``AttemptTimeoutError``, ``TimeoutError``) whose
/// operation failed after the limit fired keeps that error (`operationError`, and
/// ``ErrorHints/lateOperationErrorKey`` in its `NSError` form, a plain copy of that
/// included). Four facts are read from it as if it were in the chain: ``requestIdempotency``,
/// ``isTooManyRequests``, ``retryAfter`` and ``isOffline``. The rest stays the
/// time-out's: its ``interruption``, its ``delivery``, and what a classifier reads
/// (``httpStatus`` among them). One exception to the delivery: a late offline failure
/// that proves its request never left (as a retry policy nested in the attempt ends
/// with when the limit cuts short its wait for the network) makes the time-out's
/// ``delivery`` ``RequestDelivery/notSent`` too, so a call that may not run twice is
/// sent again and a breaker does not count it; it is still a time-out for everything else.
/// A late refusal at one of the library's gates (a wait for a bulkhead's slot or a rate
/// limiter's permit the limit cut short, ``LimiterRejectionError/Reason/waitCutShort``, or a
/// limiter's or a throttle's own refusal, such as a bulkhead's queue timeout) keeps a breaker
/// from counting the time-out, but leaves its delivery: the operation may have sent a request
/// before it was refused.
///
/// Neither exception holds when the library saw a request of the time-limited attempt that
/// may have left before it: a ``RetryPolicy`` inside the attempt whose earlier try failed
/// in a way that does not prove its request never left tells the time limits around it, as does
/// a call declared not idempotent that succeeded in the attempt, and the time-out then reads as
/// one that may have been sent, counted like any other. A request the operation sends itself,
/// outside any declared call of the library, is not seen. The same
/// holds in the task the limit cancelled: there, the failure the operation ends with is read
/// as the limit's end (``Interruption/timeLimit``), with the same two exceptions.
///
/// ```swift
/// let analysis = FailureAnalysis(error)
/// if analysis.isTooManyRequests { showBanner("Slow down; retry in \(analysis.retryAfter ?? .seconds(30))") }
/// ```
public struct FailureAnalysis: Sendable, Hashable {
    /// The outermost HTTP status in the chain, if any (only `100...599` counts).
    public let httpStatus: Int?
    /// Whether any error in the chain reports HTTP 429 Too Many Requests.
    public let isTooManyRequests: Bool
    /// The longest retry-after hint in the chain: ``RetryAfterProviding``,
    /// CloudKit's `CKRetryAfter`, a `Retry-After` entry in an `NSError`'s `userInfo`,
    /// or, in an ``HTTPResponseError`` or a response an error holds (``HTTPResponseReporting``),
    /// the `Retry-After` field or the reset of an exhausted quota in the `RateLimit` field.
    /// One error that carries several (CloudKit's key beside a `Retry-After` entry, or a
    /// ``RetryAfterProviding`` error whose `errorUserInfo` holds another) counts the longest too.
    ///
    /// A hint runs from its response (RFC 9110 counts `Retry-After` seconds from receipt). So
    /// when a library time limit cut short a ``RetryPolicy`` nested in the attempt while it
    /// waited to retry a failure, and keeps that failure as its late error, the time-out's
    /// analysis reads only what was left of the failure's hint when the limit ended the attempt.
    /// It does so for the time-out as thrown, wrapped or bridged to `NSError` (a copy with the
    /// same `userInfo` included), and for a failure the code between the policy and the limit
    /// wrapped as it came (an app's enum case, a stored property). A failure it rebuilt, or
    /// kept under an `NSError`'s `NSUnderlyingErrorKey` on Linux (where reading the entry back
    /// makes a new value), is not known for the one the policy waited on: its hint is read
    /// whole, counted from the limit's end.
    public let retryAfter: Duration?
    /// How far the request got, from everything the chain says (the most cautious reading wins).
    ///
    /// A batch (a CloudKit partial failure's per-item errors) proves its request never
    /// left only when every item's error proves it: an item whose error says nothing of its
    /// delivery, or that it may have left, beside one that proves it never left, makes the
    /// failure ``RequestDelivery/mayHaveBeenSent``.
    public private(set) var delivery: RequestDelivery
    /// The idempotency the failed request reported about itself, if any error in the chain did;
    /// when several did (a failure that speaks for a `GET` and a `POST`), the strictest report.
    public let requestIdempotency: Idempotency?
    /// Who stopped the call, when it was stopped rather than failed; `nil` for an ordinary failure.
    public let interruption: Interruption?
    /// Whether the failure asks for credentials: HTTP 401 or 407, a URL loading
    /// authentication error, CloudKit's `notAuthenticated`, or an OAuth 2.0
    /// `invalid_grant` / `invalid_token` from a REST service.
    public let needsCredentials: Bool
    /// Whether an error that asks for credentials also records that the call's own request may
    /// have been sent (``ErrorHints/requestDeliveryKey``, ``HTTPResponseError/recordedDelivery``):
    /// the refusal answered another request, such as a redirect's target after the server that
    /// redirected received the call's. It leaves ``needsCredentials`` (an idempotent call is
    /// refreshed and sent again) but not the report of a call the idempotency rule stopped,
    /// which is then ``RetryStopReason/notIdempotent``, not a request to sign in.
    let refusalAnsweredAnotherRequest: Bool
    /// Whether the failure says the device is offline: `URLError.notConnectedToInternet`
    /// and its kin, or CloudKit's `networkUnavailable`.
    public let isOffline: Bool
    /// Whether one of the library's own limiters refused the call before it reached the
    /// dependency: a ``LimiterRejectionError`` (from a ``ConcurrencyLimiter`` or a
    /// ``RateLimiter``) or an ``AdaptiveThrottleRejection`` anywhere in the chain, while
    /// nothing else in it says the request left (``delivery`` is ``RequestDelivery/notSent``)
    /// and no ``CircuitBreakerOpenError`` in it speaks for the dependency.
    ///
    /// Such a failure says nothing about the dependency, so a ``CircuitBreaker`` never counts
    /// it (see ``Rulebook/countsAsFailure(_:)``), an ``AdaptiveThrottle`` does not record it,
    /// and a retry of it costs no ``RetryBudget`` token.
    ///
    /// A ``LimiterRejectionError`` whose reason is ``LimiterRejectionError/Reason/noTimeLeft``
    /// (or ``LimiterRejectionError/Reason/waitCutShort``, a wait a time limit ended) is not a
    /// limiter's refusal: a ``RetryPolicy`` made it for an attempt that an enclosing
    /// deadline left no time to start, an outcome of that deadline rather than load shedding.
    /// It leaves this `false` (and ``FallbackContext/isRejection`` too), while the rules still
    /// read it as a request never sent, which no breaker counts and no budget pays for.
    public let isLocalRejection: Bool
    /// Whether the call was refused before it ran by one of the library's own gates:
    /// ``isLocalRejection``, or a ``CircuitBreakerOpenError`` anywhere in the chain while
    /// nothing in it says the request left (``delivery`` is ``RequestDelivery/notSent``).
    ///
    /// A breaker's refusal is kept apart from ``isLocalRejection`` because it says the
    /// dependency is failing, so a breaker outside counts it; for a ``Fallback`` it is a
    /// refusal all the same (``FallbackContext/isRejection``).
    let isRefusedBeforeRunning: Bool
    /// Whether an ``AdaptiveThrottle`` refused the call: an ``AdaptiveThrottleRejection``
    /// anywhere in the chain, as itself or bridged, while nothing in it says the request left
    /// (``delivery`` is ``RequestDelivery/notSent``).
    ///
    /// Kept apart from a limiter's refusal, which ``isLocalRejection`` reads the same way,
    /// because a ``RetryPolicy`` never retries it (``RetryStopReason/throttled``).
    let isThrottleRejection: Bool
    /// Whether a time-limited attempt was refused because an enclosing call's deadline had
    /// passed (``LimiterRejectionError/Reason/noTimeLeft`` anywhere in the chain, as itself or
    /// bridged), while nothing in it says the request left: a deadline's outcome, not a
    /// rejection, that says nothing about the dependency (``Rulebook/countsAsFailure(_:)``).
    let isRefusedForWantOfTime: Bool

    /// Whether a library time limit ended the call in front of the dependency: while it waited
    /// for a ``ConcurrencyLimiter``'s slot or a ``RateLimiter``'s permit
    /// (``LimiterRejectionError/Reason/waitCutShort``), or with a refusal of one of the library's
    /// limiters or throttles (a bulkhead's queue timeout, say) as what the operation ended with,
    /// nothing in that saying a request left, and no request of the attempt known to have left before.
    ///
    /// The attempt ended in front of the dependency, so a breaker does not count the time-out
    /// (``Rulebook/countsAsFailure(_:)``). Its ``delivery`` stays ``RequestDelivery/mayHaveBeenSent``:
    /// the operation may have sent a request before it waited at the gate (a `POST`, then a wait
    /// for a second gate), and a time-out reads only how the operation ended.
    let endedWaitingAtAGate: Bool

    /// Whether a ``CircuitBreaker`` refused the call: a ``CircuitBreakerOpenError`` anywhere in
    /// the chain, as itself or bridged, while nothing in it says the request left.
    var isBreakerRejection: Bool { self.isRefusedBeforeRunning && !self.isLocalRejection }

    /// The outermost CloudKit error code in the chain, if any: what ``CloudKitRetryClassifier`` judges.
    let cloudKitCode: CloudKitErrorCode?

    /// Whether a CloudKit error in the chain says the service is busy or unavailable
    /// (`serviceUnavailable`, `zoneBusy`, `requestRateLimited`): the item of a partial failure
    /// that says so speaks for the service, as the same error on the whole request does.
    let reportsServiceBusy: Bool

    /// Whether the failure reports on the items of a batch rather than on one request: the
    /// outermost CloudKit error in the chain is a `partialFailure`.
    ///
    /// Its facts include its items' (``isOffline`` when one item failed offline,
    /// ``needsCredentials`` when one was refused its credential), although other items may
    /// have been saved: they say what to do with those items, never that the batch may be
    /// sent again whole.
    var reportsOnItems: Bool { self.cloudKitCode == .partialFailure }
    /// Whether the outermost CloudKit error in the chain is a partial failure that names at least
    /// one item, and every item it names failed for want of its zone (`userDeletedZone`,
    /// `zoneNotFound`, or the flag that the person's reset of their encrypted data deleted it):
    /// creating the zone again is the one remedy the batch needs, so it stops with
    /// ``RetryStopReason/setupRequired``.
    let everyItemNeedsSetup: Bool
    /// The outermost URL loading error's category in the chain, if any.
    let urlErrorCategory: URLErrorCategory?
    /// What ``DefaultRetryClassifier`` reads from the outermost error in the chain that one of its
    /// rules speaks for; `nil` when none does.
    let defaultRuling: DefaultRetryClassifier.Ruling?
    /// Which error these facts were read from, so that a classifier asked about another one reads that.
    let subject: Subject
    /// Whether the chain holds one of the library's time-limit errors (``TimeoutError``,
    /// ``AttemptTimeoutError``), as thrown, wrapped (an app's enum, `NSUnderlyingErrorKey`) or
    /// bridged to `NSError`: a limit ended the call, whatever the task's state says.
    ///
    /// The limit throws its error only once it claimed the call before the caller gave up (see
    /// `TimeLimitSignal`), so the error is the fact, travelling with the failure: a cancelled
    /// task that fails with it was timed out first, however the code between wrapped the error.
    /// An enclosing limit that fired around the failing task is not this: ``interruption`` reads that.
    let holdsTimeLimitError: Bool

    /// Reads `error` and the state of the current task.
    ///
    /// The task's state matters for ``interruption``: a failure in a cancelled
    /// task was stopped by the caller, unless one of the library's time limits
    /// cancelled it.
    public init(_ error: any Error) {
        let isCancelled = Task.isCancelled
        // Read only in a cancelled task: the scope is the failure path's.
        let scope = isCancelled ? CallScope.current : nil
        let timeLimitFired = scope?.timeLimitFired ?? false
        self.init(
            error, isCancelled: isCancelled, timeLimitFired: timeLimitFired,
            superseded: scope?.supersededFired ?? false,
            requestLeftEarlier: timeLimitFired
                && TimeLimitSignal.anyFiredSawARequestLeave(
                    from: scope?.timeLimits, across: scope?.supersessions)
        )
    }

    /// Reads `error` with the task's state given, for tests and for callers that know better.
    ///
    /// `requestLeftEarlier`: whether a library time limit that ended this task's attempt saw a
    /// request of that attempt that may have left (see `TimeLimitSignal.noteARequestMayHaveLeft(from:)`).
    init(
        _ error: any Error, isCancelled: Bool, timeLimitFired: Bool, superseded: Bool = false,
        requestLeftEarlier: Bool = false
    ) {
        let reader = Reader.reading(error)
        self.subject = Subject(error)
        self.holdsTimeLimitError = reader.sawTimeLimit
        self.httpStatus = reader.status
        self.cloudKitCode = reader.cloudKitCode
        self.everyItemNeedsSetup = reader.everyItemNeedsSetup
        self.urlErrorCategory = reader.urlErrorCategory
        self.defaultRuling = reader.ruling
        self.isTooManyRequests = reader.sawTooManyRequests
        self.retryAfter = reader.hint
        self.requestIdempotency = reader.idempotency
        self.needsCredentials = reader.needsCredentials
        self.refusalAnsweredAnotherRequest = reader.sawRefusalOfAnotherRequest
        self.isOffline = reader.isOffline
        self.reportsServiceBusy = reader.sawServiceBusy
        if isCancelled && superseded {
            self.interruption = .superseded
        } else if reader.sawTimeLimit || (isCancelled && timeLimitFired) {
            self.interruption = .timeLimit
        } else if isCancelled || reader.sawCancellation {
            self.interruption = .caller
        } else {
            self.interruption = nil
        }
        // Whether the time limit ended the operation in front of the dependency, at one of the
        // library's gates, or while it waited for the network with its request never sent: in the
        // time-limited task itself, or as the late error a limit keeps. Neither, when a request of
        // the attempt may have left before (the limit's own record, or the late error's).
        let inTask = self.interruption == .timeLimit && !reader.sawTimeLimit && !requestLeftEarlier
        self.endedWaitingAtAGate =
            self.interruption == .timeLimit && !requestLeftEarlier
            && (reader.lateEndedWaitingAtAGate || (inTask && reader.endsAtAGate))
        if self.interruption == .timeLimit {
            let neverLeft =
                !requestLeftEarlier && (reader.lateNeverLeft || (inTask && reader.isOffline && reader.provesNeverLeft))
            self.delivery = neverLeft ? .notSent : .mayHaveBeenSent
        } else if reader.sawMaybeSent {
            self.delivery = .mayHaveBeenSent
        } else if reader.sawAnswered {
            self.delivery = .answered
        } else if reader.sawRefused {
            // One item of a batch refused for its credential does not prove the batch had no
            // effect: the items that are in no error were saved. CloudKit answered the batch.
            self.delivery = reader.sawPartialFailure ? .answered : .refused
        } else if reader.sawNotSent {
            self.delivery = .notSent
        } else {
            self.delivery = .unknown
        }
        self.isLocalRejection =
            reader.sawLocalRejection && !reader.sawBreakerRejection && self.delivery == .notSent
        self.isRefusedBeforeRunning =
            (reader.sawLocalRejection || reader.sawBreakerRejection) && self.delivery == .notSent
        self.isThrottleRejection = reader.sawThrottleRejection && self.delivery == .notSent
        self.isRefusedForWantOfTime = reader.sawNoTimeLeft && self.delivery == .notSent
    }

    /// This analysis with the fact that the failed call's own operation proved it had no
    /// effect (`AttemptReport.Fact.noEffect`): as good as a request never sent
    /// (``RequestDelivery/notSent``), unless something in the chain already says how far
    /// the call got, which then stands.
    func provingNoEffect() -> FailureAnalysis {
        guard self.delivery == .unknown else { return self }
        var proven = self
        proven.delivery = .notSent
        return proven
    }

    /// Accumulates the facts of each error in a chain.
    private struct Reader {
        var status: Int?
        var sawTooManyRequests = false
        var hint: Duration?
        var idempotency: Idempotency?
        var needsCredentials = false
        /// Whether an error asks for credentials while recording that the call's request may
        /// have been sent: the refusal answered another request (see ``refusalAnsweredAnotherRequest``).
        var sawRefusalOfAnotherRequest = false
        var isOffline = false
        var sawTimeLimit = false
        var sawCancellation = false
        var sawNotSent = false
        var sawMaybeSent = false
        var sawAnswered = false
        var sawRefused = false
        /// Whether a CloudKit partial failure is in the chain: its items speak for themselves only.
        var sawPartialFailure = false
        var sawLocalRejection = false
        /// Whether a time-limited attempt was refused for want of time (``LimiterRejectionError/Reason/noTimeLeft``):
        /// a request never sent, but not a limiter's refusal.
        var sawNoTimeLeft = false
        /// Whether a wait for a limiter's slot or permit was cut short by an enclosing time limit
        /// (``LimiterRejectionError/Reason/waitCutShort``): the operation never ran.
        var sawWaitCutShort = false
        /// Whether a CloudKit error says the service is busy or unavailable.
        var sawServiceBusy = false
        var sawBreakerRejection = false
        /// Whether the local rejection was, or included, an ``AdaptiveThrottle``'s.
        var sawThrottleRejection = false
        var cloudKitCode: CloudKitErrorCode?
        /// Whether ``cloudKitCode`` is a partial failure whose items all failed for want of their zone.
        var everyItemNeedsSetup = false
        var urlErrorCategory: URLErrorCategory?
        var ruling: DefaultRetryClassifier.Ruling?
        /// How many time limits' late errors this reader is nested in (see ``readLate(_:)``).
        var lateDepth = 0
        /// Whether a late error read says the device was offline and its request never left.
        var lateNeverLeft = false
        /// Whether a late error read is a wait for a limiter that the limit cut short
        /// (``LimiterRejectionError/Reason/waitCutShort``), through nested limits.
        var lateEndedWaitingAtAGate = false
        /// The errors of the chain that report on a batch (see ``batchItems(of:)``), read as
        /// wholes once the chain is (``settleBatches()``).
        var batches: [ErrorChain.Node] = []
        /// How many batches' items this reader is nested in (see ``batchMayHaveLeft(_:depth:)``).
        var batchDepth = 0

        static let limiterRejection = ObjectIdentifier(LimiterRejectionError.self)
        static let throttleRejection = ObjectIdentifier(AdaptiveThrottleRejection.self)
        static let breakerRejection = ObjectIdentifier(CircuitBreakerOpenError.self)

        /// Whether the partial failure `node` names at least one item and each item's outermost
        /// CloudKit error is judged a missing zone (`userDeletedZone`, `zoneNotFound`, the reset flag).
        static func everyItemNeedsSetup(_ node: ErrorChain.Node) -> Bool {
            guard let items = node.userInfo[CloudKitErrorCode.partialErrorsKey] as? [AnyHashable: Any],
                !items.isEmpty
            else { return false }
            return items.values.allSatisfy { value in
                guard let item = value as? any Error else { return false }
                let code = CloudKitRetryClassifier.judgedCode(in: item)
                return code == .zoneNotFound || code == .userDeletedZone
            }
        }

        /// The facts of `error`'s chain.
        static func reading(_ error: any Error) -> Reader {
            var reader = Reader()
            reader.readChain(of: error)
            return reader
        }

        /// Reads each error of `error`'s chain, then what its batches say as wholes (``settleBatches()``).
        mutating func readChain(of error: any Error) {
            ErrorChain.walkNodes(error) { node in
                self.read(node)
                return true
            }
            self.settleBatches()
        }

        /// The errors of a batch `node` reports on, one per item, when it reports on more than one:
        /// a CloudKit partial failure's per-item errors. An `NSError`'s `NSMultipleUnderlyingErrorsKey`
        /// is not read so: the library's own errors keep a consequence there beside its cause (a
        /// failed rollback's error beside the transaction's), not one error per request.
        static func batchItems(of node: ErrorChain.Node) -> [any Error] {
            let userInfo = node.userInfo
            var items: [any Error] = []
            if let perItem = userInfo[CloudKitErrorCode.partialErrorsKey] as? [AnyHashable: Any],
                node.nsError?.domain == CloudKitErrorCode.domain
            {
                for value in perItem.values {
                    if let item = value as? any Error { items.append(item) }
                }
            }
            return items.count > 1 ? items : []
        }

        /// Makes a batch read as a whole: it proves its request never left only when each of its
        /// items does. An item whose error says nothing of its delivery (a database's busy error,
        /// an app's own) or says it may have left, beside an item that proves it never left,
        /// makes the batch one that may have been sent, however deep in the chain it is.
        ///
        /// Read only when the chain would otherwise prove the request never left: an item's
        /// proof is then the only one, and each item's chain is read again on its own.
        mutating func settleBatches() {
            guard !self.batches.isEmpty, self.provesNeverLeft else { return }
            for batch in self.batches where Self.batchMayHaveLeft(batch, depth: self.batchDepth) {
                self.sawMaybeSent = true
                return
            }
        }

        /// Whether `batch` has an item that proves its request never left beside one that does
        /// not (an item that says nothing, or that it may have left); items beyond
        /// ``ErrorChain/maximumErrors`` count as saying nothing.
        static func batchMayHaveLeft(_ batch: ErrorChain.Node, depth: Int) -> Bool {
            guard depth < ErrorChain.maximumDepth else { return true }
            let items = Self.batchItems(of: batch)
            var proves = false
            var silent = items.count > ErrorChain.maximumErrors
            for item in items.prefix(ErrorChain.maximumErrors) {
                var reader = Reader()
                reader.batchDepth = depth + 1
                reader.readChain(of: item)
                if reader.provesNeverLeft {
                    proves = true
                } else if !reader.sawAnswered && !reader.sawRefused {
                    silent = true
                }
                if proves && silent { return true }
            }
            return false
        }

        /// Reads the facts of one error of the chain, each reader sharing the node's `NSError` form.
        mutating func read(_ node: ErrorChain.Node) {
            let error = node.error
            if node.kinds.contains(.cancellation), error is CancellationError {
                self.sawCancellation = true
                if self.ruling == nil { self.ruling = .cancelled }
                return
            }
            if node.kinds.contains(.timeLimit), LateOperationError.isTimeLimit(error) {
                self.sawTimeLimit = true
                if let late = LateOperationError.of(error) {
                    self.readLate(
                        late, age: LateOperationError.age(of: error),
                        requestLeftEarlier: LateOperationError.requestLeftEarlier(in: error))
                }
            }
            let status = ErrorHints.ownStatus(of: node)
            if let status {
                if self.status == nil { self.status = status }
                if status == 429 { self.sawTooManyRequests = true }
                if status == 401 || status == 407 {
                    // Authentication comes before the server acts on a request.
                    self.needsCredentials = true
                    self.sawRefused = true
                } else {
                    self.sawAnswered = true
                }
            }
            if let hint = ErrorHints.ownRetryAfter(of: node) {
                self.hint = Swift.max(self.hint ?? .zero, hint)
            }
            if self.idempotency?.isIdempotent ?? true, let own = ErrorHints.ownIdempotency(of: node) {
                // The strictest report wins: one failure may speak for a `GET` and a `POST`.
                self.idempotency = self.idempotency?.tightened(by: own) ?? own
            }
            let recorded = ErrorHints.ownRecordedDelivery(of: node)
            if let recorded { self.note(recorded) }
            var refusesForCredentials = status == 401 || status == 407
            if node.kinds.contains(.deliveryReporting), let reporting = error as? any RequestDeliveryReporting {
                self.note(reporting.requestDelivery)
                self.noteRejection(by: Swift.type(of: reporting), of: error)
            } else if let bridged = BridgedLibraryError.kind(of: node) {
                // One of the library's errors as a plain `NSError` (bridged on Linux).
                switch bridged {
                case .breakerRejection:
                    self.note(.notSent)
                    self.sawBreakerRejection = true
                case .localRejection:
                    self.note(.notSent)
                    self.sawLocalRejection = true
                case .noTimeLeft:
                    self.note(.notSent)
                    self.sawNoTimeLeft = true
                case .waitCutShort:
                    self.note(.notSent)
                    self.sawNoTimeLeft = true
                    self.sawWaitCutShort = true
                case .throttleRejection:
                    self.note(.notSent)
                    self.sawLocalRejection = true
                    self.sawThrottleRejection = true
                case .timeLimit:
                    self.note(.mayHaveBeenSent)
                    self.sawTimeLimit = true
                    if let late = LateOperationError.ofBridged(node) {
                        self.readLate(
                            late, age: LateOperationError.ageOfBridged(node),
                            requestLeftEarlier: LateOperationError.requestLeftEarlier(inBridged: node))
                    }
                }
            }
            let urlCode = URLErrorCategory.ownCode(of: node)
            if let code = urlCode {
                let category = URLErrorCategory(code: code)
                if self.urlErrorCategory == nil { self.urlErrorCategory = category }
                switch category {
                case .requestNotSent: self.sawNotSent = true
                case .authenticationRequired:
                    // The URL loading system met an authentication challenge (a 401 or a 407)
                    // it could not answer: the server refused the request before acting on it.
                    self.needsCredentials = true
                    self.sawRefused = true
                    refusesForCredentials = true
                default: self.sawMaybeSent = true
                }
                if URLErrorCategory.offlineCodes.contains(code) { self.isOffline = true }
            }
            if refusesForCredentials, let recorded, !recorded.provesNotSent { self.sawRefusalOfAnotherRequest = true }
            // A zone the person's reset of their encrypted data deleted reads as missing, whatever the code.
            let cloudKitCode = CloudKitErrorCode(judging: node)
            if let code = cloudKitCode {
                if self.cloudKitCode == nil {
                    self.cloudKitCode = code
                    if code == .partialFailure { self.everyItemNeedsSetup = Self.everyItemNeedsSetup(node) }
                }
                if code == .partialFailure {
                    self.sawPartialFailure = true
                    self.batches.append(node)
                } else {
                    self.note(CloudKitRetryClassifier.delivery(for: code))
                    if code == .networkUnavailable { self.isOffline = true }
                    if code == .notAuthenticated { self.needsCredentials = true }
                    if CloudKitErrorCode.serviceBusyCodes.contains(code) { self.sawServiceBusy = true }
                }
            }
            // A library error bridged to a plain `NSError` is judged as its Swift value.
            let rest = error as? RESTServiceError ?? BridgedLibraryError.restServiceError(of: node)
            if let code = rest?.serverErrorCode,
                RESTServiceErrorClassifier.standardServerCodeDecisions[code]?.stopReason == .authenticationRequired
            {
                self.needsCredentials = true
            }
            if self.ruling == nil {
                // Only until an error speaks: the errors below the first one a rule speaks for cost nothing more.
                // A failed rollback, bridged, is final as its Swift value is (a `RetryableError`).
                self.ruling =
                    BridgedLibraryError.isSQLiteRollbackError(node)
                    ? .retryable(false)
                    : DefaultRetryClassifier.Ruling(
                        of: BridgedLibraryError.sqliteError(of: node) ?? error, rest: rest, cloudKitCode: cloudKitCode,
                        speaksHTTP: status != nil || urlCode != nil)
            }
        }

        /// Reads the rules' facts from `late`, the error an operation failed with after a library
        /// time limit fired (see `LateOperationError`): the idempotency its request reports, an
        /// HTTP 429, a retry-after hint, an offline device.
        ///
        /// Only those: the failure stays a time-out (its interruption, its delivery, what a
        /// classifier reads: status, URL error, ruling), so a breaker counts it and a limiter's
        /// late refusal does not pass it off as a request never sent. The one exception: an
        /// offline failure that proves its request never left is noted (``lateNeverLeft``), and
        /// the time-out's delivery is then ``RequestDelivery/notSent``. Nested limits are read
        /// the same way, to ``ErrorChain/maximumDepth`` of them.
        ///
        /// `age` is how long before the limit's end `late` had been received, when a policy
        /// nested in the attempt was waiting to retry it: its hint runs from that response, so
        /// only the rest of it is read. `requestLeftEarlier`: the limit saw a request of its
        /// attempt that may have left before `late`, which then proves nothing for the attempt.
        mutating func readLate(_ late: any Error, age: Duration? = nil, requestLeftEarlier: Bool = false) {
            guard self.lateDepth < ErrorChain.maximumDepth else { return }
            var reader = Reader()
            reader.lateDepth = self.lateDepth + 1
            reader.readChain(of: late)
            if reader.sawTooManyRequests { self.sawTooManyRequests = true }
            if var hint = reader.hint {
                if let age { hint = Swift.max(hint - age, .zero) }
                self.hint = Swift.max(self.hint ?? .zero, hint)
            }
            if let own = reader.idempotency, self.idempotency?.isIdempotent ?? true {
                self.idempotency = self.idempotency?.tightened(by: own) ?? own
            }
            if reader.isOffline { self.isOffline = true }
            // An offline failure that proves its request never left (a retry policy cut short
            // while it waited for the network, say), or a wait for a limiter's slot or permit
            // that the limit cut short, says so for the attempt the limit ended too; a nested
            // limit's error, when its own late error did.
            guard !requestLeftEarlier else { return }
            let neverLeft =
                reader.sawTimeLimit
                ? reader.lateNeverLeft
                : reader.isOffline && reader.provesNeverLeft
            if neverLeft { self.lateNeverLeft = true }
            // A wait at a limiter the limit cut short, or a limiter's refusal: the attempt ended in
            // front of the dependency. It says nothing of what the operation sent before it came to
            // the gate, so it leaves the delivery.
            let endedWaiting = reader.sawTimeLimit ? reader.lateEndedWaitingAtAGate : reader.endsAtAGate
            if endedWaiting { self.lateEndedWaitingAtAGate = true }
        }

        /// Whether the errors read end the operation at one of the library's gates, in front of
        /// the dependency: a wait for a limiter cut short, a call refused for want of time, or a
        /// limiter's or a throttle's refusal (a queue timeout, a full queue, no permit), with
        /// nothing among them saying the request left. A breaker's refusal is not one: it speaks
        /// for the dependency.
        var endsAtAGate: Bool {
            (self.sawNoTimeLeft || self.sawLocalRejection) && !self.sawBreakerRejection && self.provesNeverLeft
        }

        /// Whether the errors read prove the request never left, and nothing among them says
        /// it may have been sent, was answered or was refused.
        var provesNeverLeft: Bool {
            self.sawNotSent && !self.sawMaybeSent && !self.sawAnswered && !self.sawRefused
        }

        /// Notes whether the library's own limiter or breaker refused the call, from the type
        /// of an error that reports its delivery (all of theirs do).
        ///
        /// The type is compared rather than cast to: the cast above has already found the
        /// value, and casting every error in the chain to each of the three types cost an
        /// analysis thousands of instructions (counted with callgrind), the comparison a few.
        mutating func noteRejection(by type: any RequestDeliveryReporting.Type, of error: any Error) {
            let type = ObjectIdentifier(type)
            if type == Self.limiterRejection {
                // A refusal for want of time is a deadline's outcome, not a limiter's refusal.
                let reason = (error as? LimiterRejectionError)?.reason
                if reason == .noTimeLeft {
                    self.sawNoTimeLeft = true
                } else if reason == .waitCutShort {
                    self.sawNoTimeLeft = true
                    self.sawWaitCutShort = true
                } else {
                    self.sawLocalRejection = true
                }
            } else if type == Self.throttleRejection {
                self.sawLocalRejection = true
                self.sawThrottleRejection = true
            } else if type == Self.breakerRejection {
                self.sawBreakerRejection = true
            }
        }

        mutating func note(_ delivery: RequestDelivery) {
            switch delivery {
            case .notSent: self.sawNotSent = true
            case .answered: self.sawAnswered = true
            case .refused: self.sawRefused = true
            default: self.sawMaybeSent = true
            }
        }
    }
}

extension FailureAnalysis {
    /// Which error an analysis was read from: its type, and its identity when it is a class instance.
    ///
    /// Not a fact about the failure: two analyses with the same facts are equal whatever
    /// errors they were read from, so equality and hashing ignore it.
    struct Subject: Hashable, Sendable {
        /// The error's object when it is a class instance (an `NSError`, say); `nil` for a value.
        private let object: ObjectIdentifier?

        init(_ error: any Error) {
            // Opened rather than cast `as AnyObject`, which bridges: a few instructions, not thousands.
            self.object = _openExistential(error, do: identity(of:))
        }

        /// Whether `error` is the very error this was read from: the same class instance.
        ///
        /// A value has no identity to compare, and another value of the same type (an item of
        /// a partial failure, say) must not be judged by this reading, so a value never matches
        /// and is read afresh.
        func isSubject(_ error: any Error) -> Bool {
            guard let object = self.object else { return false }
            return Subject(error).object == object
        }

        static func == (_: Self, _: Self) -> Bool { true }

        func hash(into _: inout Hasher) {}
    }
}

/// The identity of `value` when it is a class instance, or `nil`.
private func identity<Value>(of value: Value) -> ObjectIdentifier? {
    guard Value.self is AnyObject.Type else { return nil }
    // A class instance is a reference, whose bits are the object's.
    return ObjectIdentifier(unsafeBitCast(value, to: AnyObject.self))
}

extension RetryContext {
    /// The facts of `error`: the policy's reading when it was read from `error`, else a reading of
    /// `error` itself (a classifier may ask another about an error it unwrapped, with its own context).
    func analysis(of error: any Error) -> FailureAnalysis {
        if let analysis = self.analysis, analysis.subject.isSubject(error) { return analysis }
        return FailureAnalysis(error, isCancelled: false, timeLimitFired: false)
    }
}
