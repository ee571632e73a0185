import Foundation

/// Reads the facts a retry decision needs out of any error: its HTTP status and
/// the server's retry-after advice.
///
/// Errors report them in several ways, and all are understood:
/// - Swift errors adopt ``HTTPStatusReporting`` or ``RetryAfterProviding``.
/// - An `NSError` carries an HTTP status in `userInfo` under one of the keys
///   REST-backed SDKs use (``httpStatusKeys``), and CloudKit's retry-after
///   advice under `"CKRetryAfter"` (`CKErrorRetryAfterKey`), in seconds.
/// - Either may sit on an underlying error (`NSUnderlyingErrorKey`), a few levels deep.
public enum ErrorHints {
    /// The `userInfo` keys read for an HTTP status, in order.
    public static let httpStatusKeys = [
        "HTTPStatusCode", "httpStatusCode", "HTTPStatus", "httpStatus", "kiiHttpStatus", "KiiHttpStatus",
        "statusCode", "StatusCode", "status",
    ]

    /// The `userInfo` key CloudKit uses for retry-after advice (`CKErrorRetryAfterKey`).
    public static let cloudKitRetryAfterKey = "CKRetryAfter"

    /// How many underlying errors deep the hints are looked for.
    static let maximumDepth = 4

    /// The HTTP status code `error` reports, or `nil`.
    ///
    /// Only values in `100...599` count; anything else is ignored as malformed.
    public static func httpStatus(of error: any Error) -> Int? {
        self.httpStatus(of: error, depth: 0)
    }

    /// Whether `error` reports HTTP 429 Too Many Requests.
    public static func isTooManyRequests(_ error: any Error) -> Bool {
        self.httpStatus(of: error) == 429
    }

    /// The retry-after advice `error` carries, or `nil`.
    ///
    /// Negative, NaN and infinite values are ignored; values too large to
    /// represent are clamped to about 146 years, which any policy's
    /// `maximumRetryAfter` then refuses.
    public static func retryAfter(of error: any Error) -> Duration? {
        self.retryAfter(of: error, depth: 0)
    }

    private static func httpStatus(of error: any Error, depth: Int) -> Int? {
        if let reporting = error as? any HTTPStatusReporting {
            if let status = reporting.httpStatusCode, (100...599).contains(status) { return status }
            return nil
        }
        if error is CancellationError { return nil }
        let nsError = error as NSError
        for key in self.httpStatusKeys {
            if let value = nsError.userInfo[key], let status = self.integer(from: value), (100...599).contains(status) {
                return status
            }
        }
        if depth < self.maximumDepth, let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? any Error {
            return self.httpStatus(of: underlying, depth: depth + 1)
        }
        return nil
    }

    private static func retryAfter(of error: any Error, depth: Int) -> Duration? {
        if let providing = error as? any RetryAfterProviding {
            guard let hint = providing.retryAfter, hint >= .zero else { return nil }
            return hint.clampedToResilienceRange
        }
        if error is CancellationError { return nil }
        let nsError = error as NSError
        if let value = nsError.userInfo[self.cloudKitRetryAfterKey] {
            return self.seconds(from: value)
        }
        if depth < self.maximumDepth, let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? any Error {
            return self.retryAfter(of: underlying, depth: depth + 1)
        }
        return nil
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
            guard let parsed = Double(value.trimmingCharacters(in: .whitespaces)) else { return nil }
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
