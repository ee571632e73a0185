import Foundation

/// The `NSError` form of the library's own errors, read back.
///
/// The library's errors that a caller is likely to bridge with `as NSError` (to log it,
/// hand it to Objective-C, or keep it in another error's `userInfo`) adopt `CustomNSError`
/// with a stable domain and code and a `userInfo` that keeps the description and the
/// retry-after hint (under `"Retry-After"`, in seconds, which ``ErrorHints`` reads). Where
/// bridging makes a plain `NSError` that no longer holds the Swift value (on Linux), the
/// failure analysis still reads it as the same kind of failure from its domain and code:
/// a breaker's or a limiter's refusal, a time limit's end, and how far the request got.
/// A time limit's error keeps its operation's late error in its `userInfo` (see
/// ``ErrorHints/lateOperationErrorKey``), whose rule facts are read as from the Swift value.
/// The SQLite helper's own errors (``SQLiteRollbackError``, ``SQLiteEnclosingTransactionLostError``,
/// ``SQLiteEnclosingTransactionStaleError``) keep what they wrap under `NSUnderlyingErrorKey`,
/// which the chain walks; a failed rollback's domain alone makes it final.
enum BridgedLibraryError {
    /// The domain of ``CircuitBreakerOpenError``.
    static let breakerOpenDomain = "Resilience.CircuitBreakerOpenError"
    /// The domain of ``LimiterRejectionError``.
    static let limiterRejectionDomain = "Resilience.LimiterRejectionError"
    /// The domain of ``AdaptiveThrottleRejection``.
    static let throttleRejectionDomain = "Resilience.AdaptiveThrottleRejection"
    /// The domain of ``TimeoutError``.
    static let timeoutDomain = "Resilience.TimeoutError"
    /// The domain of ``AttemptTimeoutError``.
    static let attemptTimeoutDomain = "Resilience.AttemptTimeoutError"
    /// The domain of ``HTTPResponseError``, whose code is the status.
    static let httpResponseDomain = "Resilience.HTTPResponseError"
    /// The domain of ``RESTServiceError``, whose code is the SDK's.
    static let restServiceDomain = "Resilience.RESTServiceError"
    /// The domain of ``SQLiteError``, whose code is the result code.
    static let sqliteDomain = "Resilience.SQLiteError"
    /// The domain of ``SQLiteRollbackError``, whose code is ``sqliteTransactionErrorCode``.
    static let sqliteRollbackDomain = "Resilience.SQLiteRollbackError"
    /// The domain of ``SQLiteEnclosingTransactionLostError``, whose code is ``sqliteTransactionErrorCode``.
    static let sqliteEnclosingTransactionLostDomain = "Resilience.SQLiteEnclosingTransactionLostError"
    /// The domain of ``SQLiteEnclosingTransactionStaleError``, whose code is ``sqliteTransactionErrorCode``.
    static let sqliteEnclosingTransactionStaleDomain = "Resilience.SQLiteEnclosingTransactionStaleError"
    /// The code of the SQLite helper's own errors, each of one meaning; what they wrap is kept
    /// under `NSUnderlyingErrorKey`, where the chain reads it.
    static let sqliteTransactionErrorCode = 1

    /// The `userInfo` key under which a bridged error keeps its HTTP status: the first of
    /// ``ErrorHints/httpStatusKeys``.
    static let httpStatusKey = "HTTPStatusCode"
    /// The `userInfo` key of a bridged ``RESTServiceError``'s server error code.
    static let serverErrorCodeKey = "ResilienceServerErrorCode"
    /// The `userInfo` key of a bridged error's message, as the Swift value had it.
    static let messageKey = "ResilienceMessage"

    /// The ``SQLiteError`` the node's error was, when it is a plain `NSError` in its domain.
    static func sqliteError(of node: ErrorChain.Node) -> SQLiteError? {
        guard node.kinds.contains(.nsError), let nsError = node.nsError, nsError.domain == Self.sqliteDomain,
            let code = Int32(exactly: nsError.code)
        else { return nil }
        return SQLiteError(code: code, message: node.userInfo[Self.messageKey] as? String)
    }

    /// The ``SQLiteError`` `error` was, when it is a plain `NSError` in its domain.
    static func sqliteError(of error: any Error) -> SQLiteError? {
        self.sqliteError(of: ErrorChain.Node(error))
    }

    /// Whether the node's error was an ``SQLiteRollbackError``, as a plain `NSError` in its domain:
    /// final, as the Swift value is, whatever the errors below it say.
    static func isSQLiteRollbackError(_ node: ErrorChain.Node) -> Bool {
        node.kinds.contains(.nsError) && node.nsError?.domain == Self.sqliteRollbackDomain
    }

    /// The ``RESTServiceError`` the node's error was, when it is a plain `NSError` in its domain;
    /// its underlying error stays below it in the chain, under `NSUnderlyingErrorKey`.
    static func restServiceError(of node: ErrorChain.Node) -> RESTServiceError? {
        guard node.kinds.contains(.nsError), let nsError = node.nsError, nsError.domain == Self.restServiceDomain
        else { return nil }
        let userInfo = node.userInfo
        return RESTServiceError(
            sdkCode: nsError.code, httpStatus: userInfo[Self.httpStatusKey] as? Int,
            serverErrorCode: userInfo[Self.serverErrorCodeKey] as? String,
            message: userInfo[Self.messageKey] as? String,
            retryAfter: userInfo[Self.retryAfterKey].flatMap(ErrorHints.seconds(from:)))
    }

    /// The code of a time limit's error: its request may have been sent.
    static let timedOutCode = 1
    /// The code of a ``LimiterRejectionError`` for want of time (``LimiterRejectionError/Reason/noTimeLeft``).
    static let noTimeLeftCode = 4
    /// The code of a ``LimiterRejectionError`` for a wait an enclosing time limit cut short
    /// (``LimiterRejectionError/Reason/waitCutShort``).
    static let waitCutShortCode = 5

    /// What a bridged error of the library says, as the failure analysis reads it.
    enum Kind {
        case breakerRejection
        /// A ``ConcurrencyLimiter``'s or a ``RateLimiter``'s refusal.
        case localRejection
        /// A ``LimiterRejectionError`` for want of time (``LimiterRejectionError/Reason/noTimeLeft``):
        /// a request never sent, but no limiter's refusal.
        case noTimeLeft
        /// A ``LimiterRejectionError`` for a wait an enclosing time limit cut short
        /// (``LimiterRejectionError/Reason/waitCutShort``): a request never sent, but no limiter's refusal.
        case waitCutShort
        /// An ``AdaptiveThrottle``'s refusal: a local rejection too.
        case throttleRejection
        case timeLimit
    }

    /// The kind of failure `error` is, when it is a plain `NSError` in one of the library's
    /// domains; `nil` for any other error (a Swift error of the library is read as itself).
    static func kind(of error: any Error) -> Kind? {
        self.kind(of: ErrorChain.Node(error))
    }

    /// The kind of failure the node's error is, read from its shared `NSError` form.
    static func kind(of node: ErrorChain.Node) -> Kind? {
        guard node.kinds.contains(.nsError), let nsError = node.nsError else { return nil }
        let domain = nsError.domain
        guard domain.hasPrefix("Resilience.") else { return nil }
        switch domain {
        case Self.breakerOpenDomain:
            return .breakerRejection
        case Self.limiterRejectionDomain:
            switch nsError.code {
            case Self.noTimeLeftCode: return .noTimeLeft
            case Self.waitCutShortCode: return .waitCutShort
            default: return .localRejection
            }
        case Self.throttleRejectionDomain:
            return .throttleRejection
        case Self.timeoutDomain, Self.attemptTimeoutDomain:
            return .timeLimit
        default:
            return nil
        }
    }

    /// The `userInfo` of a bridged error of the library: its description, its retry-after
    /// hint in seconds when it has one, the idempotency of its request when known, the
    /// error a time limit's operation failed with after the limit fired, if any, and how long
    /// before the limit's end that error had been received, when a policy nested in the attempt
    /// was waiting on it.
    ///
    /// The late error is kept as the value itself under ``ErrorHints/lateOperationErrorKey``,
    /// never under `NSUnderlyingErrorKey`, which the chain would walk into: a classifier would
    /// then judge the late error rather than the time-out. Its age is kept as a `Duration` under
    /// ``lateOperationErrorAgeKey``, so that its retry-after hint still runs from its response.
    ///
    /// `earlierRequestMayHaveLeft`: a time limit saw a request of the attempt it ended that may
    /// have left before the late error, recorded under ``earlierRequestKey`` so that a plain
    /// copy of the `NSError` does not read the late error as proof that nothing left.
    ///
    /// `limitEnd`: when a time limit's deadline was and when it ended the call, kept under
    /// ``limitEndKey`` so that a limit enclosing the call finds it in the bridged error too.
    static func userInfo(
        description: String, retryAfter: Duration? = nil, requestIdempotency: Idempotency? = nil,
        lateOperationError: (any Error)? = nil, lateOperationErrorAge: Duration? = nil,
        earlierRequestMayHaveLeft: Bool = false, limitEnd: TimeLimitEnd? = nil
    ) -> [String: Any] {
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let retryAfter, retryAfter >= .zero { userInfo[Self.retryAfterKey] = retryAfter.secondsValue }
        if let requestIdempotency { userInfo[ErrorHints.requestIdempotencyKey] = requestIdempotency }
        if let lateOperationError {
            userInfo[ErrorHints.lateOperationErrorKey] = lateOperationError
            if let lateOperationErrorAge { userInfo[Self.lateOperationErrorAgeKey] = lateOperationErrorAge }
            if earlierRequestMayHaveLeft { userInfo[Self.earlierRequestKey] = true }
        }
        if let limitEnd { userInfo[Self.limitEndKey] = limitEnd }
        return userInfo
    }

    /// The `userInfo` key under which a time limit's error, bridged, keeps how long before the
    /// limit's end its late error had been received (``TimeoutError/operationErrorAge``), as a
    /// `Duration`; read back by ``LateOperationError/ageOfBridged(_:)``.
    static let lateOperationErrorAgeKey = "ResilienceLateOperationErrorAge"

    /// The `userInfo` key under which a time limit's bridged error records that a request of
    /// the attempt it ended may have left before the operation's late error.
    static let earlierRequestKey = "ResilienceEarlierRequestMayHaveLeft"

    /// The `userInfo` key under which a time limit's bridged error (a ``TimeoutError``, an
    /// ``AttemptTimeoutError``, a ``LimiterRejectionError`` for ``LimiterRejectionError/Reason/queueTimedOut``)
    /// keeps its `TimeLimitEnd`, the instance itself: read back by `TimeLimitEnd.of(_:)` from the
    /// `NSError` or from a copy of it made with the same `userInfo`.
    ///
    /// The instance holds its limit's clock, whose identity the comparison needs and which no
    /// plain value could stand for. A `userInfo` that loses it (archived with `NSCoding`, sent to
    /// another process) loses only the ordering: an enclosing limit that fired then keeps the
    /// call, as it does for limits on different clocks.
    static let limitEndKey = "ResilienceTimeLimitEnd"

    /// The `TimeLimitEnd` kept under ``limitEndKey`` by the node's error, when it is a plain
    /// `NSError` in the domain of a library error that keeps one; `nil` otherwise.
    static func limitEnd(of node: ErrorChain.Node) -> TimeLimitEnd? {
        guard node.kinds.contains(.nsError), let domain = node.nsError?.domain,
            domain == Self.timeoutDomain || domain == Self.attemptTimeoutDomain
                || domain == Self.limiterRejectionDomain
        else { return nil }
        return node.userInfo[Self.limitEndKey] as? TimeLimitEnd
    }

    /// The `userInfo` key of the retry-after hint: the first that ``ErrorHints`` reads.
    static let retryAfterKey = "Retry-After"
}
