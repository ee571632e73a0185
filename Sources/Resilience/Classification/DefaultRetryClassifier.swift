/// The package's default retry rules: retry what is likely transient, stop on
/// what is obviously permanent.
///
/// The rules read the error's whole chain, as the ``Rulebook`` does: the error
/// itself, `NSUnderlyingErrorKey`, the library's own wrappers and errors adopting
/// ``UnderlyingErrorProviding`` (see ``FailureAnalysis``). The outermost error in
/// the chain that one of the rules below speaks for decides, so an error is judged
/// the same whether it is thrown as it is or wrapped in an error that says
/// nothing of its own. For one error, the rules are asked in order:
/// 1. `CancellationError`: never retried.
/// 2. ``RetryableError`` (``SQLiteError`` among them): as the error says.
/// 3. ``RESTServiceError``: by ``RESTServiceErrorClassifier``'s default rules, when
///    its own codes or status decide; otherwise the errors it wraps do.
/// 4. A CloudKit error (`CKErrorDomain`): by ``CloudKitRetryClassifier``'s rules,
///    retrying a lost response only for a call declared idempotent (its own declaration
///    or an enclosing call's, ``RetryContext/idempotencyIsDeclared``) and otherwise stopping it
///    with ``RetryStopReason/notIdempotent``, and never retrying
///    a whole batch after a partial failure.
/// 5. An HTTP status or a URL loading error (`URLError`): by ``HTTPRetryClassifier``'s
///    rules, reading the outermost status in the chain (see ``ErrorHints/httpStatus(of:)``).
///    408 and every 5xx but a few final ones are retried (``retryableHTTPStatuses``),
///    401 and 407 stop with ``RetryStopReason/authenticationRequired``, every other
///    status is final;
///    transient URL errors are retried. The ``Rulebook`` has already stopped every
///    429, and every request that is not idempotent once it may have reached the server.
/// 6. `DecodingError` and `EncodingError`: final, since the same bytes will fail
///    the same way.
///
/// When no error in the chain is one of these, the failure is retried, on the
/// assumption that an unknown failure of a remote call is more often transient
/// than not. Chain a classifier of your own in front (``RetryClassifier/fallingBack(to:)``)
/// to narrow this.
///
/// A policy reads the chain once per failure (``RetryContext/analysis``) and this
/// classifier decides from that reading, without walking the chain again.
///
/// ```swift
/// enum SyncError: Error { case cloudKit(any Error) }
/// let lost = NSError(domain: CloudKitErrorCode.domain, code: CloudKitErrorCode.serverResponseLost.rawValue)
/// DefaultRetryClassifier().decision(for: SyncError.cloudKit(lost), context: RetryContext(attempt: 1))
/// // doNotRetry(because: notIdempotent): it may have been applied
/// let declared = RetryContext(attempt: 1, idempotency: .idempotent, idempotencyIsDeclared: true)
/// DefaultRetryClassifier().decision(for: SyncError.cloudKit(lost), context: declared)  // retry
/// ```
public struct DefaultRetryClassifier: RetryClassifier {
    /// The HTTP statuses retried by default: 408 Request Timeout and every 5xx, the
    /// server's or a proxy's failure, but for those that say the same request will fail
    /// the same way (``finalServerErrorStatuses``).
    ///
    /// A 5xx says the fault is on the server's side, and most pass: 500, 502, 503, 504, a
    /// proxy's own 520 to 524 (Cloudflare's: the origin returned nothing usable, refused
    /// the connection, could not be reached or timed out), 507. Polly's
    /// `HttpPolicyExtensions.HandleTransientHttpError` handles every 5xx and 408 as
    /// transient, and .NET's `HttpClientResiliencePredicates.IsTransientHttpFailure`
    /// every status from 500 up, 408 and 429. 429 is not among these: the ``Rulebook``
    /// never retries it. The same statuses tell a credential's refresh that failed for
    /// now from one that failed for good (see ``CredentialRecovery``).
    public static let retryableHTTPStatuses: Set<Int> = Set([408] + Array(500...599))
        .subtracting(DefaultRetryClassifier.finalServerErrorStatuses)

    /// The 5xx statuses that are not retried: each says the same request will fail the same
    /// way until someone changes something.
    ///
    /// - 501 Not Implemented: the server does not support the request's method.
    /// - 505 HTTP Version Not Supported: nor the protocol version it was sent with.
    /// - 506 Variant Also Negotiates and 508 Loop Detected: the server's configuration is
    ///   circular; every attempt meets it again.
    /// - 510 Not Extended: the request lacks an extension the server requires.
    /// - 511 Network Authentication Required: a network's captive portal wants the person to
    ///   sign in to the network; nothing passes before they do.
    public static let finalServerErrorStatuses: Set<Int> = [501, 505, 506, 508, 510, 511]

    /// Creates the default classifier.
    public init() {}

    /// The default decision for `error`; never `nil`.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        // A `CancellationError`, as the error or below it, is ruled `.cancelled`.
        let analysis = context.analysis(of: error)
        switch analysis.defaultRuling {
        case .cancelled?, .malformedData?:
            return .doNotRetry
        case .retryable(let isRetryable)?:
            return isRetryable ? .retry : .doNotRetry
        case .restService(let decision)?:
            return decision
        case .cloudKit(let code)?:
            return CloudKitRetryClassifier().judging(context).decision(
                forCodeInChain: code, everyItemNeedsSetup: code == analysis.cloudKitCode && analysis.everyItemNeedsSetup
            )
        case .http?:
            let http = HTTPRetryClassifier()
            if let status = analysis.httpStatus { return http.decision(forStatus: status) }
            if let category = analysis.urlErrorCategory { return http.decision(for: category) }
            return .retry
        case nil:
            return .retry
        }
    }
}

extension DefaultRetryClassifier {
    /// What the default rules read from one error of a chain, or `nil` when none of them
    /// speaks for it (the next error in the chain is asked then).
    ///
    /// ``FailureAnalysis`` keeps the ruling of the outermost error that has one, so that
    /// the classifier decides without walking the chain again.
    enum Ruling: Hashable, Sendable {
        /// A `CancellationError`.
        case cancelled
        /// A ``RetryableError``, with its answer.
        case retryable(Bool)
        /// A ``RESTServiceError`` whose own codes or status decide.
        case restService(RetryDecision)
        /// A CloudKit error, with its code.
        case cloudKit(CloudKitErrorCode)
        /// An HTTP status or a URL loading error: the HTTP rules decide.
        case http
        /// A `DecodingError` or an `EncodingError`.
        case malformedData

        /// The ruling on `error`, from what the analysis has already read of it.
        ///
        /// - Parameters:
        ///   - rest: `error` as a ``RESTServiceError``, if it is one.
        ///   - cloudKitCode: Its CloudKit code, if it has one.
        ///   - speaksHTTP: Whether it reports an HTTP status or is a URL loading error.
        init?(of error: any Error, rest: RESTServiceError?, cloudKitCode: CloudKitErrorCode?, speaksHTTP: Bool) {
            // What the error's type is, remembered by type: most errors are none of these.
            let kinds = ErrorKinds.of(error)
            if kinds.contains(.retryable), let retryable = error as? any RetryableError {
                self = .retryable(retryable.isRetryable)
            } else if let rest {
                guard let decision = RESTServiceErrorClassifier.defaultOwnDecision(for: rest) else { return nil }
                self = .restService(decision)
            } else if let cloudKitCode {
                self = .cloudKit(cloudKitCode)
            } else if speaksHTTP {
                self = .http
            } else if kinds.contains(.codingError), error is DecodingError || error is EncodingError {
                self = .malformedData
            } else {
                return nil
            }
        }
    }
}
