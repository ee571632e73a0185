/// The package's default retry rules: retry what is likely transient, stop on
/// what is obviously permanent.
///
/// In order:
/// 1. `CancellationError`: never retried.
/// 2. ``RetryableError``: as the error says.
/// 3. ``RESTServiceError``: by ``RESTServiceErrorClassifier``'s default rules.
/// 4. A CloudKit error (`CKErrorDomain`): by ``CloudKitRetryClassifier``'s rules,
///    treating a lost response as not safe to repeat, and never retrying a whole
///    batch after a partial failure.
/// 5. An HTTP status anywhere in the error's chain (see ``ErrorHints/httpStatus(of:)``)
///    or a URL loading error (`URLError`): by ``HTTPRetryClassifier``'s rules. 408,
///    500, 502, 503 and 504 are retried, 401 and 407 stop with
///    ``RetryStopReason/authenticationRequired``, every other status is final;
///    transient URL errors are retried. The ``Rulebook`` has already stopped every
///    429, and every request that is not idempotent once it may have reached the server.
/// 6. `DecodingError` and `EncodingError`: final, since the same bytes will fail
///    the same way.
/// 7. Anything else: retried, on the assumption that an unknown failure of a
///    remote call is more often transient than not. Chain a classifier of your
///    own in front (``RetryClassifier/fallingBack(to:)``) to narrow this.
public struct DefaultRetryClassifier: RetryClassifier {
    /// The HTTP statuses retried by default.
    public static let retryableHTTPStatuses: Set<Int> = [408, 500, 502, 503, 504]

    /// Creates the default classifier.
    public init() {}

    /// The default decision for `error`; never `nil`.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        if error is CancellationError { return .doNotRetry }
        if let error = error as? any RetryableError {
            return error.isRetryable ? .retry : .doNotRetry
        }
        if let error = error as? RESTServiceError,
            let decision = RESTServiceErrorClassifier().decision(for: error, context: context)
        {
            return decision
        }
        if let decision = CloudKitRetryClassifier().decision(for: error, context: context) { return decision }
        if let decision = HTTPRetryClassifier().decision(for: error, context: context) { return decision }
        if error is DecodingError || error is EncodingError { return .doNotRetry }
        return .retry
    }
}
