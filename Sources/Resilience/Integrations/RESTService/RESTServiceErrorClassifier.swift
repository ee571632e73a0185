/// Retry rules for ``RESTServiceError``: the SDK's code first, then the server's
/// error code, then the HTTP status.
///
/// 1. ``sdkCodeDecisions``: the SDK's own codes. Codes that mean the access token could not
///    be refreshed, such as Kii's `codeRefreshTokenFailed`, go in ``tokenRefreshFailureCodes``
///    and are added with `.doNotRetry(because: .authenticationRequired)`.
/// 2. ``serverCodeDecisions``: the server's error codes, compared exactly. By default
///    the OAuth 2.0 codes for a rejected or expired token (`invalid_grant`, RFC 6749;
///    `invalid_token`, RFC 6750) stop with ``RetryStopReason/authenticationRequired``.
/// 3. The HTTP status, by ``HTTPRetryClassifier``'s rules: 429 is never retried
///    (``RetryStopReason/tooManyRequests``); 401 and 407 stop with
///    ``RetryStopReason/authenticationRequired``; 408 and the statuses of a server's or a
///    proxy's failure (``DefaultRetryClassifier/retryableHTTPStatuses``) are retried;
///    every other status stops.
/// 4. No status: the ``RESTServiceError/underlying`` error decides through
///    ``DefaultRetryClassifier`` (a `URLError` timeout is retried, for instance);
///    without one, `nil`.
///
/// The error is looked for in the whole chain, outermost first, as every classifier does:
/// a ``RESTServiceError`` wrapped in an error of the app's own (``UnderlyingErrorProviding``)
/// or under `NSUnderlyingErrorKey` is judged as if it were thrown as it is. The outermost
/// one whose codes or status decide wins; when none does, the outermost one's
/// ``RESTServiceError/underlying`` error decides.
///
/// An authentication failure is reported as its own stop reason, so the app can
/// send the user to sign in again:
///
/// ```swift
/// let policy = try RetryPolicy(classifier: RESTServiceErrorClassifier(tokenRefreshFailureCodes: [kiiRefreshFailed]))
/// let outcome = await policy.outcome { try await loadProfile() }
/// if outcome.stopReason == .authenticationRequired { showSignIn() }
/// ```
///
/// Under ``RetryPolicy/execute(recovering:waitingFor:idempotency:operation:)``, the policy's
/// classifier (this one, or the first of its kind in a ``ChainedRetryClassifier``) also tells the
/// credential recovery which failures end the session: a ``tokenRefreshFailureCodes`` code on the
/// refresh's own error, or on a call's error (the SDK refreshed on its own and failed), stops the
/// call with ``RetryStopReason/authenticationRequired`` without another refresh, whatever status
/// came with it; only a 429 still stops with ``RetryStopReason/tooManyRequests``.
///
/// Other errors get `nil`. ``DefaultRetryClassifier`` applies these rules with the default tables.
public struct RESTServiceErrorClassifier: RetryClassifier {
    /// The server codes understood by default: OAuth 2.0's rejected-token codes.
    public static let standardServerCodeDecisions: [String: RetryDecision] = [
        "invalid_grant": .doNotRetry(because: .authenticationRequired),
        "invalid_token": .doNotRetry(because: .authenticationRequired),
    ]

    /// Decisions by the SDK's error code, consulted first.
    public let sdkCodeDecisions: [Int: RetryDecision]
    /// Decisions by the server's error code, consulted when the SDK code has none.
    public let serverCodeDecisions: [String: RetryDecision]
    /// The SDK codes that mean the access token could not be refreshed: those given as
    /// `tokenRefreshFailureCodes` that ``sdkCodeDecisions`` still stops with
    /// ``RetryStopReason/authenticationRequired``.
    ///
    /// A credential recovery reads such a code as the end of the session (see
    /// ``RetryPolicy/execute(recovering:waitingFor:idempotency:operation:)``).
    public let tokenRefreshFailureCodes: Set<Int>

    /// Creates the classifier.
    ///
    /// - Parameters:
    ///   - tokenRefreshFailureCodes: SDK codes that mean the access token could not be refreshed;
    ///     they stop with ``RetryStopReason/authenticationRequired``.
    ///   - sdkCodeDecisions: Further decisions by SDK code; they win over `tokenRefreshFailureCodes`.
    ///   - serverCodeDecisions: Decisions by server error code.
    public init(
        tokenRefreshFailureCodes: Set<Int> = [],
        sdkCodeDecisions: [Int: RetryDecision] = [:],
        serverCodeDecisions: [String: RetryDecision] = RESTServiceErrorClassifier.standardServerCodeDecisions
    ) {
        var decisions: [Int: RetryDecision] = [:]
        for code in tokenRefreshFailureCodes {
            decisions[code] = .doNotRetry(because: .authenticationRequired)
        }
        decisions.merge(sdkCodeDecisions) { _, explicit in explicit }
        self.sdkCodeDecisions = decisions
        self.serverCodeDecisions = serverCodeDecisions
        // A code an explicit decision took over no longer says that the refresh failed.
        self.tokenRefreshFailureCodes = tokenRefreshFailureCodes.filter {
            decisions[$0] == .doNotRetry(because: .authenticationRequired)
        }
    }

    /// The decision for a ``RESTServiceError`` anywhere in `error`'s chain, or `nil` when there is none.
    public func decision(for error: any Error, context: RetryContext) -> RetryDecision? {
        var outermost: RESTServiceError?
        let decision = ErrorChain.first(in: error) { node -> RetryDecision? in
            guard let rest = node as? RESTServiceError else { return nil }
            if outermost == nil { outermost = rest }
            return self.ownDecision(for: rest)
        }
        if let decision { return decision }
        guard let underlying = outermost?.underlying else { return nil }
        return DefaultRetryClassifier().decision(for: underlying, context: context)
    }

    /// The decision `error`'s own codes and status make, without the error it wraps.
    func ownDecision(for error: RESTServiceError) -> RetryDecision? {
        if error.sdkCode != 0, let decision = self.sdkCodeDecisions[error.sdkCode] {
            return decision
        }
        if let code = error.serverErrorCode, let decision = self.serverCodeDecisions[code] {
            return decision
        }
        if let status = error.httpStatus, (100...599).contains(status) {
            // One rule for a status wherever it comes from: 401 and 407 alike ask for credentials.
            return HTTPRetryClassifier().decision(forStatus: status)
        }
        return nil
    }

    /// Whether `error` says that the access token could not be refreshed: the ``RESTServiceError``
    /// in its chain whose codes or status decide, as ``decision(for:context:)`` finds it, carries
    /// one of the ``tokenRefreshFailureCodes``.
    func saysTokenRefreshFailed(_ error: any Error) -> Bool {
        guard !self.tokenRefreshFailureCodes.isEmpty else { return false }
        let failed = ErrorChain.first(in: error) { node -> Bool? in
            guard let rest = node as? RESTServiceError, self.ownDecision(for: rest) != nil else { return nil }
            return rest.sdkCode != 0 && self.tokenRefreshFailureCodes.contains(rest.sdkCode)
        }
        return failed ?? false
    }

    /// The REST classifier that rules on an SDK's errors for `classifier`: itself, or the first
    /// one in a chain; `nil` when there is none, or when it lists no token refresh failure codes.
    static func refreshFailureJudge(in classifier: any RetryClassifier) -> RESTServiceErrorClassifier? {
        guard let rest = Self.first(in: classifier), !rest.tokenRefreshFailureCodes.isEmpty else { return nil }
        return rest
    }

    /// The first REST classifier in `classifier`, itself or in a chain, or `nil`.
    private static func first(in classifier: any RetryClassifier) -> RESTServiceErrorClassifier? {
        if let rest = classifier as? RESTServiceErrorClassifier { return rest }
        guard let chain = classifier as? ChainedRetryClassifier else { return nil }
        for link in chain.classifiers {
            if let rest = Self.first(in: link) { return rest }
        }
        return nil
    }

    /// Whether `other` has the same tables, so that it judges every error as this one does.
    func hasSameTables(as other: RESTServiceErrorClassifier) -> Bool {
        self.tokenRefreshFailureCodes == other.tokenRefreshFailureCodes
            && self.sdkCodeDecisions == other.sdkCodeDecisions
            && self.serverCodeDecisions == other.serverCodeDecisions
    }

    /// The decision the default tables make from `error`'s own codes and status, without the error it wraps.
    static func defaultOwnDecision(for error: RESTServiceError) -> RetryDecision? {
        Self.defaultTables.ownDecision(for: error)
    }

    /// The classifier with the default tables, made once.
    private static let defaultTables = RESTServiceErrorClassifier()
}
