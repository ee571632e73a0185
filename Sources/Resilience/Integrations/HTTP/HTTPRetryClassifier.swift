#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

/// Retry rules for HTTP calls that know the request's method, so that a request
/// the server may already have acted on is not sent twice by accident.
///
/// A failure after which the request may have reached the server (a timeout, a
/// dropped connection, a lost or garbled response, a 500, 502 or 504) is retried
/// only for idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE, TRACE), unless
/// `allowsNonIdempotentRetries` is set. Failures that prove the request was not
/// processed are retried whatever the method: the connection was never made
/// (``URLErrorCategory/requestNotSent``), or the server answered 408 (it did not
/// receive the whole request) or 503 (it could not handle it).
///
/// | failure | idempotent method | other methods |
/// |---|---|---|
/// | 408, 503 | retry | retry |
/// | 500, 502, 504 | retry | only if allowed |
/// | 429 | never (``RetryStopReason/tooManyRequests``) | never |
/// | 401, 407 | stop: ``RetryStopReason/authenticationRequired`` | same |
/// | other statuses | stop | stop |
/// | ``URLErrorCategory/requestNotSent`` | retry | retry |
/// | ``URLErrorCategory/requestMayHaveBeenSent`` | retry | only if allowed |
/// | ``URLErrorCategory/authenticationRequired`` | stop: ``RetryStopReason/authenticationRequired`` | same |
/// | ``URLErrorCategory/permanent`` | stop | stop |
///
/// Errors that are neither get `nil`, for the next classifier to decide.
///
/// ```swift
/// var request = URLRequest(url: ordersURL)
/// request.httpMethod = "POST"
/// let policy = try RetryPolicy(classifier: HTTPRetryClassifier(request: request))
/// let receipt = try await policy.execute {
///     let (data, response) = try await session.data(for: request)
///     return try HTTPResponseValidation.validate(data, response).data
/// }
/// ```
///
/// Without a method (`HTTPRetryClassifier()`), the classifier uses the method of
/// the request being sent by
/// ``RetryPolicy/data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:isolation:)``,
/// and outside such a call treats the request as idempotent.
/// ``DefaultRetryClassifier`` applies these rules in that way.
public struct HTTPRetryClassifier: RetryClassifier {
    /// The methods RFC 9110 (section 9.2.2) defines as idempotent.
    public static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]

    /// Statuses that show the server did not process the request, retried for every method.
    public static let notProcessedStatuses: Set<Int> = [408, 503]

    /// Statuses that ask for credentials.
    public static let authenticationStatuses: Set<Int> = [401, 407]

    /// The request's method, or `nil` to use the method of the request in flight.
    public let method: String?
    /// Whether failures that may have reached the server are retried even for a non-idempotent method.
    public let allowsNonIdempotentRetries: Bool

    /// Creates a classifier for requests with `method`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method, compared case-insensitively; `nil` uses the method of the
    ///     request sent by ``RetryPolicy/data(for:session:acceptableStatusCodes:allowsNonIdempotentRetries:isolation:)``,
    ///     or assumes an idempotent one.
    ///   - allowsNonIdempotentRetries: Retry a non-idempotent request even when the server may have
    ///     acted on it. Set it only when the server deduplicates, for example by an idempotency key.
    public init(method: String? = nil, allowsNonIdempotentRetries: Bool = false) {
        self.method = method?.uppercased()
        self.allowsNonIdempotentRetries = allowsNonIdempotentRetries
    }

    /// Creates a classifier for `request`'s method (GET when it has none).
    public init(request: URLRequest, allowsNonIdempotentRetries: Bool = false) {
        self.init(method: request.httpMethod ?? "GET", allowsNonIdempotentRetries: allowsNonIdempotentRetries)
    }

    /// Whether `method` is idempotent, compared case-insensitively.
    public static func isIdempotent(method: String) -> Bool {
        self.idempotentMethods.contains(method.uppercased())
    }

    /// The decision for an HTTP status or URL loading error; `nil` for any other error.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        if error is CancellationError { return nil }
        if let status = ErrorHints.httpStatus(of: error) {
            return self.decision(forStatus: status)
        }
        if let category = URLErrorCategory(error) {
            return self.decision(for: category)
        }
        return nil
    }

    /// The decision for a response with `status`.
    public func decision(forStatus status: Int) -> RetryDecision {
        if status == 429 { return .doNotRetry(because: .tooManyRequests) }
        if Self.authenticationStatuses.contains(status) { return .doNotRetry(because: .authenticationRequired) }
        if Self.notProcessedStatuses.contains(status) { return .retry }
        if DefaultRetryClassifier.retryableHTTPStatuses.contains(status) {
            return self.mayRetryProcessedRequest ? .retry : .doNotRetry
        }
        return .doNotRetry
    }

    /// The decision for a URL loading failure in `category`.
    public func decision(for category: URLErrorCategory) -> RetryDecision {
        switch category {
        case .requestNotSent: return .retry
        case .requestMayHaveBeenSent: return self.mayRetryProcessedRequest ? .retry : .doNotRetry
        case .authenticationRequired: return .doNotRetry(because: .authenticationRequired)
        default: return .doNotRetry
        }
    }

    /// Whether a request the server may have acted on may be sent again.
    var mayRetryProcessedRequest: Bool {
        let scope = HTTPRequestScope.current
        if self.allowsNonIdempotentRetries || scope?.allowsNonIdempotentRetries == true { return true }
        guard let method = self.method ?? scope?.method else { return true }
        return Self.isIdempotent(method: method)
    }
}
