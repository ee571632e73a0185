/// Something a ``Timeout``, ``Fallback``, ``ConcurrencyLimiter``, ``RateLimiter``
/// or ``Hedging`` did, as reported to a ``StrategyObserver``.
public struct StrategyEvent: Sendable, CustomStringConvertible {
    /// What happened.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        /// A stable identifier, such as `"timedOut"`.
        public let rawValue: String

        private init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// A ``Timeout`` ended an operation that outlived its limit, and its limit decided the
        /// call: a limit nested in another whose deadline came earlier and had passed reports none.
        public static let timedOut = Kind(rawValue: "timedOut")
        /// A ``Fallback`` answered for a call that failed or was rejected; sent once its answer
        /// has returned.
        public static let fallbackUsed = Kind(rawValue: "fallbackUsed")
        /// A limiter put a caller in its queue.
        public static let queued = Kind(rawValue: "queued")
        /// A limiter refused a call without running it, for whatever reason, also when an
        /// enclosing library time limit cut its wait short.
        public static let rejected = Kind(rawValue: "rejected")
        /// ``Hedging`` started another attempt of a call that was still running.
        public static let hedged = Kind(rawValue: "hedged")

        /// The identifier.
        public var description: String { self.rawValue }
    }

    /// The name of the strategy that reports it.
    public let strategyName: String
    /// What happened.
    public let kind: Kind
    /// The failure involved, if any: the error a fallback answered for.
    public let error: (any Error)?
    /// When a rejected caller may try again, where the limiter knows.
    public let retryAfter: Duration?

    /// Creates an event.
    public init(strategyName: String, kind: Kind, error: (any Error)? = nil, retryAfter: Duration? = nil) {
        self.strategyName = strategyName
        self.kind = kind
        self.error = error
        self.retryAfter = retryAfter
    }

    /// `name: kind`.
    public var description: String { "\(self.strategyName): \(self.kind)" }
}
