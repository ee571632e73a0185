public import Foundation

/// What a URL loading failure (`URLError`, or an `NSError` in `NSURLErrorDomain`)
/// means for a retry.
///
/// Four categories:
///
/// | category | meaning | examples |
/// |---|---|---|
/// | ``requestNotSent`` | transient; the request never reached the server, so any method may be retried | cannot find or connect to host, DNS failure, not connected |
/// | ``requestMayHaveBeenSent`` | transient; the server may already have received and acted on the request | timed out, connection lost, response lost or garbled |
/// | ``authenticationRequired`` | the server wants credentials the user must supply | user authentication required or cancelled |
/// | ``permanent`` | retrying cannot help | bad or unsupported URL, cancelled, certificate failures, too many redirects |
///
/// The split between the first two is what makes retrying a `POST` safe or not:
/// the ``Rulebook`` lets a request that is not idempotent be sent again after
/// ``requestNotSent`` only. Codes not listed in any category are ``permanent``.
///
/// Linux's `URLSession` (FoundationNetworking, built on libcurl) reports a
/// connection the server closed without answering as `badServerResponse`, where
/// Apple platforms say `networkConnectionLost`; both are
/// ``requestMayHaveBeenSent``. It reports a response cut short in its body (fewer
/// bytes than its `Content-Length` promised) as `unknown`, which is
/// ``requestMayHaveBeenSent`` too: the server answered, so the request reached it,
/// and a failure nothing else explains leaves unknown whether it did.
///
/// ```swift
/// URLErrorCategory(code: .timedOut)             // .requestMayHaveBeenSent
/// URLErrorCategory(code: .cannotConnectToHost)  // .requestNotSent
/// URLErrorCategory(error)                       // nil when error is not a URL loading error
/// ```
public struct URLErrorCategory: Sendable, Hashable, CustomStringConvertible {
    /// A stable identifier, such as `"requestNotSent"`.
    public let rawValue: String

    private init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// A transient failure that happened before the request reached the server.
    public static let requestNotSent = URLErrorCategory(rawValue: "requestNotSent")
    /// A transient failure after which the server may have received, and acted on, the request.
    public static let requestMayHaveBeenSent = URLErrorCategory(rawValue: "requestMayHaveBeenSent")
    /// The server requires credentials; the user must sign in.
    ///
    /// The session met an authentication challenge (an HTTP 401 or 407) that it could not
    /// answer, so the server refused the request before acting on it: like the status it
    /// stands for, it lets even a request that is not idempotent be sent again once the
    /// credentials are in order (``RequestDelivery/refused``).
    public static let authenticationRequired = URLErrorCategory(rawValue: "authenticationRequired")
    /// A failure that another attempt would repeat.
    public static let permanent = URLErrorCategory(rawValue: "permanent")

    /// Whether another attempt may succeed, setting idempotency aside.
    public var isTransient: Bool {
        self == .requestNotSent || self == .requestMayHaveBeenSent
    }

    /// The category of a `URLError` code.
    public init(code: URLError.Code) {
        if Self.notSentCodes.contains(code) {
            self = .requestNotSent
        } else if Self.mayHaveBeenSentCodes.contains(code) {
            self = .requestMayHaveBeenSent
        } else if Self.authenticationCodes.contains(code) {
            self = .authenticationRequired
        } else {
            self = .permanent
        }
    }

    /// The category of `error` when it is a URL loading error, or `nil`.
    ///
    /// Recognizes `URLError` and any `NSError` in `NSURLErrorDomain`, anywhere in
    /// the error's chain (see ``UnderlyingErrorProviding``); the outermost wins.
    public init?(_ error: any Error) {
        guard let code = ErrorChain.first(in: error, { Self.ownCode(of: $0) }) else { return nil }
        self.init(code: code)
    }

    /// The identifier.
    public var description: String { self.rawValue }

    // MARK: - The tables

    /// Codes for failures before the request left the device or reached the server.
    public static let notSentCodes: Set<URLError.Code> = [
        .cannotFindHost, .cannotConnectToHost, .dnsLookupFailed, .notConnectedToInternet,
        .internationalRoamingOff, .callIsActive, .dataNotAllowed,
    ]

    /// Codes for transient failures after which the server may have received the request.
    ///
    /// `unknown` is among them: FoundationNetworking on Linux reports a response cut short
    /// in its body with it (Swift 6.3), and it names no failure another attempt would repeat.
    public static let mayHaveBeenSentCodes: Set<URLError.Code> = [
        .timedOut, .networkConnectionLost, .badServerResponse, .cannotParseResponse, .zeroByteResource,
        .backgroundSessionWasDisconnected, .unknown,
    ]

    /// Codes that mean the user must provide credentials.
    public static let authenticationCodes: Set<URLError.Code> = [
        .userAuthenticationRequired, .userCancelledAuthentication,
    ]

    /// Codes that mean the device has no usable network, so waiting for one beats retrying at once.
    public static let offlineCodes: Set<URLError.Code> = [
        .notConnectedToInternet, .internationalRoamingOff, .dataNotAllowed, .callIsActive,
    ]

    /// The URL loading error code of `error` itself, without looking below it.
    static func ownCode(of error: any Error) -> URLError.Code? {
        self.ownCode(of: ErrorChain.Node(error))
    }

    /// The URL loading error code of the node's error itself, read from its shared `NSError` form.
    static func ownCode(of node: ErrorChain.Node) -> URLError.Code? {
        if node.kinds.contains(.urlError), let urlError = node.error as? URLError { return urlError.code }
        guard let nsError = node.nsError else { return nil }
        return nsError.domain == NSURLErrorDomain ? URLError.Code(rawValue: nsError.code) : nil
    }
}
