import Foundation

/// Reads the facts a retry decision needs out of any error: its HTTP status and
/// the server's retry-after advice.
///
/// Errors report them in several ways, and all are understood:
/// - Swift errors adopt ``HTTPStatusReporting`` or ``RetryAfterProviding``.
/// - An `NSError` carries an HTTP status in `userInfo` under one of the keys
///   REST-backed SDKs use (``httpStatusKeys``), and retry-after advice under
///   `"CKRetryAfter"` (CloudKit's `CKErrorRetryAfterKey`, in seconds) or
///   `"Retry-After"` (seconds, or an HTTP `Retry-After` value).
/// - An error that holds the HTTP response it failed with, among its stored values or
///   its `userInfo` values (``HTTPResponseReporting``), reports that response's status
///   when it says the request failed, and its `Retry-After` or spent `RateLimit` quota.
/// - Either may sit anywhere in the error's chain: `NSUnderlyingErrorKey`, the
///   library's own wrappers, CloudKit's per-item errors, or a wrapper of yours
///   (see ``UnderlyingErrorProviding``).
///
/// ``FailureAnalysis`` reads all of these at once; these functions answer one question each,
/// as the analysis does, a library time limit's late error included (see ``retryAfter(of:)``).
public enum ErrorHints {
    /// The `userInfo` keys read for an HTTP status, in order.
    public static let httpStatusKeys = [
        "HTTPStatusCode", "httpStatusCode", "HTTPStatus", "httpStatus", "kiiHttpStatus", "KiiHttpStatus",
        "statusCode", "StatusCode", "status",
    ]

    /// The `userInfo` key CloudKit uses for retry-after advice (`CKErrorRetryAfterKey`).
    public static let cloudKitRetryAfterKey = "CKRetryAfter"

    /// The `userInfo` keys read for an HTTP `Retry-After` value: seconds as a number, or the header's text.
    public static let retryAfterKeys = ["Retry-After", "retry-after", "RetryAfter", "retryAfter"]

    /// The `userInfo` key under which the library records a failed request's ``Idempotency``.
    public static let requestIdempotencyKey = "ResilienceRequestIdempotency"

    /// The `userInfo` key under which the library records how far a failed request got (a
    /// ``RequestDelivery``) when the error's code alone would say less.
    ///
    /// The HTTP helpers of `ResilienceURLSession` record ``RequestDelivery/mayHaveBeenSent`` on a
    /// `URLError` that follows a redirect: the server that redirected received the request, so
    /// a later failure whose code says no connection was made (to the redirect's target) no
    /// longer proves the request had no effect. ``FailureAnalysis`` reads the entry as it reads
    /// a ``RequestDeliveryReporting`` error: of all the chain says, what takes the request
    /// farthest wins, so this entry outweighs the code of the error that holds it.
    public static let requestDeliveryKey = "ResilienceRequestDelivery"

    /// The `userInfo` key under which a library time limit's error, bridged to `NSError`, keeps
    /// the error its operation failed with after the limit fired (``TimeoutError/operationError``,
    /// ``AttemptTimeoutError/operationError``), as the value itself.
    ///
    /// Not `NSUnderlyingErrorKey`: the error's chain does not go below a time limit's error, so a
    /// classifier judges a time-out; ``FailureAnalysis`` and the functions here read the late
    /// error's rule facts from this entry as they do from the Swift value, in an `NSError` copied
    /// from the bridged one too.
    public static let lateOperationErrorKey = "ResilienceLateOperationError"

    /// The outermost HTTP status code in `error`'s chain, or `nil`.
    ///
    /// Only values in `100...599` count; anything else is ignored as malformed. As in
    /// ``FailureAnalysis/httpStatus``, a library time limit's error has no status of its own and
    /// the status of the error its operation failed with after the limit fired is not read: the
    /// failure is a time-out, which a classifier judges by what it is, not by a late answer.
    public static func httpStatus(of error: any Error) -> Int? {
        var found: Int?
        ErrorChain.walkNodes(error) { node in
            found = self.ownStatus(of: node)
            return found == nil
        }
        return found
    }

    /// Whether any error in `error`'s chain reports HTTP 429 Too Many Requests.
    ///
    /// As in ``FailureAnalysis/isTooManyRequests``, a 429 that a library time limit's operation
    /// failed with after the limit fired counts (see ``TimeoutError/operationError``), through
    /// nested limits and in the limit's `NSError` form (``lateOperationErrorKey``).
    public static func isTooManyRequests(_ error: any Error) -> Bool {
        FailureAnalysis(error, isCancelled: false, timeLimitFired: false).isTooManyRequests
    }

    /// The longest retry-after advice in `error`'s chain, or `nil`.
    ///
    /// Negative, NaN and infinite values are ignored, as are malformed `Retry-After`
    /// texts, so a well-formed entry under another key still counts; values too
    /// large to represent are clamped to about 146 years, which any policy's
    /// `maximumRetryAfter` then refuses.
    ///
    /// As in ``FailureAnalysis/retryAfter``, the advice of the error a library time limit's
    /// operation failed with after the limit fired counts (see ``TimeoutError/operationError``),
    /// through nested limits and in the limit's `NSError` form (``lateOperationErrorKey``).
    public static func retryAfter(of error: any Error) -> Duration? {
        FailureAnalysis(error, isCancelled: false, timeLimitFired: false).retryAfter
    }

    // MARK: - One error, without its chain

    /// The status `error` itself reports, without looking below it.
    static func ownStatus(of error: any Error) -> Int? {
        self.ownStatus(of: ErrorChain.Node(error))
    }

    /// The status the node's error itself reports, read from its shared `NSError` form.
    static func ownStatus(of node: ErrorChain.Node) -> Int? {
        if node.kinds.contains(.statusReporting), let reporting = node.error as? any HTTPStatusReporting {
            guard let status = reporting.httpStatusCode, (100...599).contains(status) else { return nil }
            return status
        }
        // Empty for a `CancellationError`, which is not bridged.
        let userInfo = node.userInfo
        guard !userInfo.isEmpty else { return nil }
        for key in self.httpStatusKeys {
            if let value = userInfo[key], let status = self.integer(from: value), (100...599).contains(status) {
                return status
            }
        }
        return nil
    }

    /// The retry-after advice `error` itself carries, without looking below it.
    static func ownRetryAfter(of error: any Error) -> Duration? {
        self.ownRetryAfter(of: ErrorChain.Node(error))
    }

    /// The retry-after advice the node's error itself carries, read from its shared `NSError` form:
    /// the longest of its ``RetryAfterProviding`` hint and its `userInfo` entries.
    ///
    /// An error may carry several hints (CloudKit's key beside an HTTP `Retry-After`, or a
    /// `CustomNSError` whose `errorUserInfo` holds one its `retryAfter` does not give): the
    /// longest counts, as it does along the chain, so no hint can shorten the wait another asks for.
    static func ownRetryAfter(of node: ErrorChain.Node) -> Duration? {
        var longest: Duration?
        func consider(_ hint: Duration?) {
            guard let hint else { return }
            longest = Swift.max(longest ?? hint, hint)
        }
        if node.kinds.contains(.retryAfterProviding), let providing = node.error as? any RetryAfterProviding,
            let hint = providing.retryAfter, hint >= .zero
        {
            consider(hint.clampedToResilienceRange)
        }
        // Empty for a `CancellationError`, which is not bridged.
        let userInfo = node.userInfo
        guard !userInfo.isEmpty else { return longest }
        // A malformed entry is ignored, so it cannot hide a well-formed one under another key.
        if let value = userInfo[self.cloudKitRetryAfterKey] {
            consider(self.seconds(from: value))
        }
        for key in self.retryAfterKeys {
            guard let value = userInfo[key] else { continue }
            consider((value as? String).map { RetryAfterHeader.delay(parsing: $0) } ?? self.seconds(from: value))
        }
        return longest
    }

    /// The idempotency `error` itself records for its request, without looking below it.
    static func ownIdempotency(of error: any Error) -> Idempotency? {
        self.ownIdempotency(of: ErrorChain.Node(error))
    }

    /// The idempotency the node's error itself records, read from its shared `NSError` form.
    static func ownIdempotency(of node: ErrorChain.Node) -> Idempotency? {
        if node.kinds.contains(.idempotencyReporting), let reporting = node.error as? any IdempotencyReporting {
            return reporting.requestIdempotency
        }
        // Empty for a `CancellationError`, which is not bridged.
        let userInfo = node.userInfo
        guard !userInfo.isEmpty else { return nil }
        return userInfo[self.requestIdempotencyKey] as? Idempotency
    }

    /// The delivery the node's error records (an ``HTTPResponseError``'s ``HTTPResponseError/recordedDelivery``,
    /// or an entry in its `userInfo` under ``requestDeliveryKey``), without looking below it.
    static func ownRecordedDelivery(of node: ErrorChain.Node) -> RequestDelivery? {
        if node.kinds.contains(.httpResponseError), let response = node.error as? HTTPResponseError,
            let recorded = response.recordedDelivery
        {
            return recorded
        }
        // Empty for a `CancellationError`, which is not bridged.
        let userInfo = node.userInfo
        guard !userInfo.isEmpty else { return nil }
        return userInfo[self.requestDeliveryKey] as? RequestDelivery
    }

    /// A non-negative, finite number of seconds from a `userInfo` value, as a duration.
    static func seconds(from value: Any) -> Duration? {
        let seconds: Double
        switch value {
        case let value as Double: seconds = value
        case let value as Int: seconds = Double(value)
        case let value as Float: seconds = Double(value)
        case let value as Int64: seconds = Double(value)
        case let value as UInt: seconds = Double(value)
        case let value as NSNumber: seconds = value.doubleValue
        case let value as Duration: seconds = value.secondsValue
        case let value as String:
            let text = value.trimmingCharacters(in: .whitespaces)
            guard let parsed = Double(text) else { return nil }
            // A decimal number too large for a `Double` reads as infinity; it is clamped as a huge
            // finite one is. The words "inf", "infinity" and "nan" are no number of seconds.
            if parsed == .infinity, !text.lowercased().contains(where: { $0 == "i" || $0 == "n" }) {
                return .clampedSeconds(.greatestFiniteMagnitude)
            }
            seconds = parsed
        default: return nil
        }
        guard seconds.isFinite, seconds >= 0 else { return nil }
        return .clampedSeconds(seconds)
    }

    private static func integer(from value: Any) -> Int? {
        switch value {
        case let value as Int: return value
        case let value as Int64: return Int(exactly: value)
        case let value as Int32: return Int(value)
        case let value as UInt: return Int(exactly: value)
        case let value as NSNumber:
            let double = value.doubleValue
            guard double.isFinite, double == double.rounded(), abs(double) < 1e9 else { return nil }
            return Int(double)
        case let value as String: return Int(value.trimmingCharacters(in: .whitespaces))
        default: return nil
        }
    }
}
