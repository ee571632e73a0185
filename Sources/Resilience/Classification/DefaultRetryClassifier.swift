/// The package's default retry rules: retry what is likely transient, stop on
/// what is obviously permanent.
///
/// In order:
/// 1. `CancellationError`: never retried.
/// 2. ``RetryableError``: as the error says.
/// 3. An HTTP status (see ``ErrorHints/httpStatus(of:)``): 408, 500, 502, 503 and
///    504 are retried; every other status is final. (429 never reaches a
///    classifier's verdict: the policy stops on it first.)
/// 4. `DecodingError` and `EncodingError`: final, since the same bytes will fail
///    the same way.
/// 5. Anything else: retried, on the assumption that an unknown failure of a
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
        if let status = ErrorHints.httpStatus(of: error) {
            return Self.retryableHTTPStatuses.contains(status) ? .retry : .doNotRetry
        }
        if error is DecodingError || error is EncodingError { return .doNotRetry }
        return .retry
    }
}
