/// The error of a call an ``AdaptiveThrottle`` rejected locally: the request never
/// reached the server.
///
/// It reports ``RequestDelivery/notSent``. A ``RetryPolicy`` does not retry it
/// (``RetryStopReason/throttled``), wherever it sits in the error's chain (an app's
/// wrapper, `NSUnderlyingErrorKey`, bridged to `NSError`): the point of the rejection
/// is to send less.
public struct AdaptiveThrottleRejection: Error, RequestDeliveryReporting, CustomStringConvertible {
    /// The probability of rejection when this call was rejected.
    public let rejectionProbability: Double

    /// Creates the error.
    public init(rejectionProbability: Double) {
        self.rejectionProbability = rejectionProbability
    }

    /// Always ``RequestDelivery/notSent``.
    public var requestDelivery: RequestDelivery { .notSent }

    /// `rejected locally by adaptive throttling (p = 0.97)`.
    public var description: String {
        "rejected locally by adaptive throttling (p = \((self.rejectionProbability * 100).rounded() / 100))"
    }
}
