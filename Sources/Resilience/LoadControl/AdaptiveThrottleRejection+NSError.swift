public import Foundation

/// Bridges to `NSError` with a stable domain and code and the description.
///
/// A plain `NSError` made from it still reads as a local refusal of a request that never
/// left (``FailureAnalysis/isLocalRejection``).
extension AdaptiveThrottleRejection: CustomNSError, LocalizedError {
    /// `"Resilience.AdaptiveThrottleRejection"`.
    public static var errorDomain: String { BridgedLibraryError.throttleRejectionDomain }

    /// Always 1.
    public var errorCode: Int { 1 }

    /// The description under `NSLocalizedDescriptionKey`.
    public var errorUserInfo: [String: Any] {
        BridgedLibraryError.userInfo(description: self.description)
    }

    /// The ``description``.
    public var errorDescription: String? { self.description }
}
