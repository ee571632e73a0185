public import Foundation

/// Bridges to `NSError` with a stable domain, a code for the state that refused the call,
/// the description and the retry-after hint.
///
/// ```swift
/// let error = CircuitBreakerOpenError(breakerName: "orders", state: .open, retryAfter: .seconds(5))
/// let bridged = error as NSError
/// // bridged.domain == CircuitBreakerOpenError.errorDomain, bridged.code == 1,
/// // bridged.userInfo["Retry-After"] as? Double == 5
/// ```
///
/// A plain `NSError` made from it still reads as a breaker's refusal of a request that
/// never left (``FailureAnalysis/delivery`` is ``RequestDelivery/notSent``), with its hint.
extension CircuitBreakerOpenError: CustomNSError, LocalizedError {
    /// `"Resilience.CircuitBreakerOpenError"`.
    public static var errorDomain: String { BridgedLibraryError.breakerOpenDomain }

    /// 1 when the breaker was open, 2 half-open with every probe slot taken, 3 isolated.
    public var errorCode: Int {
        switch self.state {
        case .open: 1
        case .halfOpen: 2
        case .isolated: 3
        default: 0
        }
    }

    /// The description under `NSLocalizedDescriptionKey`, and ``retryAfter`` in seconds
    /// under `"Retry-After"` when known.
    public var errorUserInfo: [String: Any] {
        BridgedLibraryError.userInfo(description: self.description, retryAfter: self.retryAfter)
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
