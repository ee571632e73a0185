/// An error that knows whether retrying can help.
///
/// ``DefaultRetryClassifier`` honours it, so a library can ship errors that
/// classify themselves.
///
/// ```swift
/// enum StorageError: RetryableError {
///     case busy, corrupt
///     var isRetryable: Bool { self == .busy }
/// }
/// ```
public protocol RetryableError: Error {
    /// Whether another attempt may succeed.
    var isRetryable: Bool { get }
}

/// An error that reports the HTTP status code of the response that caused it.
///
/// A status of 429 makes every ``RetryPolicy`` stop at once, whatever its
/// classifier says.
public protocol HTTPStatusReporting: Error {
    /// The HTTP status code, or `nil` when the failure happened before a response arrived.
    var httpStatusCode: Int? { get }
}

/// An error that carries the server's advice on how long to wait before retrying.
///
/// The policy waits at least this long before the next attempt, or stops when
/// the advice exceeds its `maximumRetryAfter`.
public protocol RetryAfterProviding: Error {
    /// How long the server asked the client to wait, or `nil` for no advice.
    var retryAfter: Duration? { get }
}
