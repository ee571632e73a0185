/// How far a failed request got: whether it may have reached the server.
///
/// It decides whether a request that is not idempotent may be sent again: only a
/// request that provably had no effect (``notSent``, ``refused``) may be. A request
/// the server answered, even with an error status, or that failed in a way that
/// leaves it unknown (a timeout, a dropped connection), is never re-sent unless
/// it is idempotent.
///
/// A struct with static members rather than an enum, so that cases can be added.
public struct RequestDelivery: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier, such as `"notSent"`.
    public let rawValue: String

    private init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The request provably never reached the server: the connection was refused,
    /// the host was not found, the device is offline, a breaker or limiter
    /// rejected the call before it was made.
    public static let notSent = RequestDelivery(rawValue: "notSent")
    /// The request may have reached the server: a timeout, a dropped connection, a lost response.
    public static let mayHaveBeenSent = RequestDelivery(rawValue: "mayHaveBeenSent")
    /// The server received the request and answered it (an HTTP status, a CloudKit server error).
    public static let answered = RequestDelivery(rawValue: "answered")
    /// The server refused the request before acting on it: it asked for credentials
    /// (HTTP 401 or 407, or what stands for them: a URL loading authentication error,
    /// which follows a challenge the session could not answer, and CloudKit's
    /// `notAuthenticated`), or, for CloudKit, rolled the item back with its atomic batch
    /// (`batchRequestFailed`) or found no zone to write to (`userDeletedZone`,
    /// `zoneNotFound`, an error carrying ``CloudKitErrorCode/userDidResetEncryptedDataKey``).
    /// Safe to send again, once what it lacked is in order.
    public static let refused = RequestDelivery(rawValue: "refused")
    /// Nothing in the error says; treated like ``mayHaveBeenSent`` for requests that are not idempotent.
    public static let unknown = RequestDelivery(rawValue: "unknown")

    /// Whether the failure proves the request had no effect on the server: it was
    /// never sent (``notSent``), or refused before it was acted on (``refused``).
    public var provesNotSent: Bool { self == .notSent || self == .refused }

    /// The identifier.
    public var description: String { self.rawValue }
}

/// An error that knows how far its request got.
///
/// Adopt it for a transport error of your own so that a request that is not
/// idempotent can still be retried after a failure that proves it was never sent:
///
/// ```swift
/// struct SocketRefused: Error, RequestDeliveryReporting {
///     var requestDelivery: RequestDelivery { .notSent }
/// }
/// ```
public protocol RequestDeliveryReporting: Error {
    /// How far the request got.
    var requestDelivery: RequestDelivery { get }
}
