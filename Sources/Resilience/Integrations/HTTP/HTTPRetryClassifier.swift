import Foundation

/// Retry rules for HTTP calls that know the request's method, so that a request
/// the server may already have acted on is not sent twice by accident.
///
/// The ``Rulebook`` already stops every request that is not idempotent once it
/// may have reached the server (any status, a timeout, a dropped connection), and
/// every 429, whatever a classifier says. This classifier decides the rest:
///
/// | failure | decision |
/// |---|---|
/// | 408, and every 5xx but 501, 505, 506, 508, 510, 511 (``DefaultRetryClassifier/retryableHTTPStatuses``) | retry (idempotent requests only: the rules stop the others) |
/// | 429 | never (``RetryStopReason/tooManyRequests``) |
/// | 401, 407 | stop: ``RetryStopReason/authenticationRequired`` |
/// | other statuses | stop |
/// | ``URLErrorCategory/requestNotSent`` | retry, whatever the method |
/// | ``URLErrorCategory/requestMayHaveBeenSent`` | retry (idempotent requests only) |
/// | ``URLErrorCategory/authenticationRequired`` | stop: ``RetryStopReason/authenticationRequired`` |
/// | ``URLErrorCategory/permanent`` | stop |
///
/// Errors that are neither get `nil`, for the next classifier to decide.
///
/// Which requests are idempotent: the call's declaration, else the method given here
/// (``declaredIdempotency``), made stricter (never looser) by the request's own report
/// (the errors of `RetryPolicy.data(for:)` (in `ResilienceURLSession`) and of
/// `HTTPResponseValidation.validate(_:_:for:acceptableStatusCodes:receivedAt:)` carry
/// it); see ``Idempotency``.
///
/// ```swift
/// var request = URLRequest(url: ordersURL)
/// request.httpMethod = "POST"
/// let policy = try RetryPolicy(classifier: HTTPRetryClassifier(request: request))
/// let receipt = try await policy.execute {
///     let (data, response) = try await session.data(for: request)
///     return try HTTPResponseValidation.validate(data, response, for: request).data
/// }
/// ```
public struct HTTPRetryClassifier: RetryClassifier {
    /// The methods RFC 9110 (section 9.2.2) defines as idempotent.
    public static let idempotentMethods: Set<String> = Idempotency.idempotentHTTPMethods

    /// Statuses that ask for credentials.
    public static let authenticationStatuses: Set<Int> = [401, 407]

    /// The requests' method, or `nil` when the classifier serves requests of any method.
    public let method: String?
    /// Whether requests are taken as idempotent whatever their method (the server deduplicates them).
    public let allowsNonIdempotentRetries: Bool
    /// Whether the request's body can be read only once (a stream), so that it is not
    /// idempotent whatever its method or ``allowsNonIdempotentRetries``.
    let bodyIsReadOnce: Bool

    /// Creates a classifier for requests with `method`.
    ///
    /// - Parameters:
    ///   - method: The HTTP method, compared as spelled (methods are case-sensitive, so `"get"`
    ///     is an unknown method, not `GET`: see ``Idempotency/http(method:headers:)``); `nil`
    ///     when the policy sends requests of any method (each request's own method then decides).
    ///   - allowsNonIdempotentRetries: Take every request as idempotent. Set it only when the
    ///     server deduplicates, for example by an `Idempotency-Key` header.
    public init(method: String? = nil, allowsNonIdempotentRetries: Bool = false) {
        self.init(method: method, allowsNonIdempotentRetries: allowsNonIdempotentRetries, bodyIsReadOnce: false)
    }

    /// Creates a classifier for requests with `method`, whose body may be readable only once.
    package init(method: String?, allowsNonIdempotentRetries: Bool, bodyIsReadOnce: Bool) {
        self.method = method
        self.allowsNonIdempotentRetries = allowsNonIdempotentRetries
        self.bodyIsReadOnce = bodyIsReadOnce
    }

    /// Whether `method` is idempotent, compared as spelled: methods are case-sensitive
    /// (RFC 9110, section 9.1), so `"get"` is an unknown method, and not idempotent.
    public static func isIdempotent(method: String) -> Bool {
        self.idempotentMethods.contains(method)
    }

    /// The idempotency of the method this classifier was made for, if any.
    public var declaredIdempotency: Idempotency? {
        if self.bodyIsReadOnce { return self.method.map { .notIdempotent(method: $0) } ?? .notIdempotent }
        if self.allowsNonIdempotentRetries { return .idempotent }
        return self.method.map { Idempotency.http(method: $0) }
    }

    /// The decision for an HTTP status or URL loading error; `nil` for any other error.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        if error is CancellationError { return nil }
        // A policy has already read the chain once; reuse its reading rather than walk it again.
        let analysis = context.analysis(of: error)
        if let status = analysis.httpStatus {
            return self.decision(forStatus: status)
        }
        if let category = analysis.urlErrorCategory {
            return self.decision(for: category)
        }
        return nil
    }

    /// The decision for a response with `status`.
    public func decision(forStatus status: Int) -> RetryDecision {
        if status == 429 { return .doNotRetry(because: .tooManyRequests) }
        if Self.authenticationStatuses.contains(status) { return .doNotRetry(because: .authenticationRequired) }
        return DefaultRetryClassifier.retryableHTTPStatuses.contains(status) ? .retry : .doNotRetry
    }

    /// The decision for a URL loading failure in `category`.
    public func decision(for category: URLErrorCategory) -> RetryDecision {
        switch category {
        case .requestNotSent, .requestMayHaveBeenSent: return .retry
        case .authenticationRequired: return .doNotRetry(because: .authenticationRequired)
        default: return .doNotRetry
        }
    }
}
