/// The error a ``ConcurrencyLimiter`` or ``RateLimiter`` refuses a call with, and a
/// ``RetryPolicy`` a time-limited attempt that an enclosing call's deadline left no time
/// to start (``Reason/noTimeLeft``).
///
/// The operation never ran, so the request provably never left
/// (``RequestDelivery/notSent``): a retry policy may try it again even when it is
/// not idempotent, and its retry costs no ``RetryBudget`` token. A breaker around the
/// limiter never holds it against the dependency, whatever its classifier says and
/// wherever the rejection sits in the error's chain (``FailureAnalysis/isLocalRejection``,
/// ``Rulebook/countsAsFailure(_:)``), and neither does an ``AdaptiveThrottle``.
/// ``retryAfter`` says when a permit frees, where the limiter knows; the failure
/// analysis reads it like a server's hint, and a retry policy waits at least that long.
///
/// A refusal for ``Reason/noTimeLeft`` or ``Reason/waitCutShort`` is a deadline's outcome,
/// not load shedding: it is no ``FailureAnalysis/isLocalRejection`` and no
/// ``FallbackContext/isRejection``, though it too proves the request never left, which no
/// breaker counts and no budget pays for.
public struct LimiterRejectionError: RetryableError, RetryAfterProviding, RequestDeliveryReporting, Hashable,
    CustomStringConvertible
{
    /// Why a limiter refused a call.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        /// A stable identifier, such as `"queueFull"`.
        public let rawValue: String

        private init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// Every slot was taken and the queue was full (or there was none).
        public static let queueFull = Reason(rawValue: "queueFull")
        /// The caller waited in the queue longer than the queue timeout.
        public static let queueTimedOut = Reason(rawValue: "queueTimedOut")
        /// No permit was free, and none would free within the time the caller may wait.
        public static let noPermit = Reason(rawValue: "noPermit")
        /// An enclosing call's deadline had already passed, so a time-limited attempt
        /// (``RetryPolicy/execute(attemptTimeout:idempotency:operation:)``) could not start.
        public static let noTimeLeft = Reason(rawValue: "noTimeLeft")
        /// A library time limit enclosing the call (a ``Timeout``, a policy's `attemptTimeout`)
        /// ended it while it waited for a ``ConcurrencyLimiter``'s slot or a ``RateLimiter``'s
        /// permit: the operation never ran.
        ///
        /// Like ``noTimeLeft``, a deadline's outcome rather than load shedding. The time limit
        /// keeps it as its late error, and no breaker counts that time-out: the call ended in
        /// front of the dependency. The time-out still reads as a request that may have been
        /// sent (``RequestDelivery/mayHaveBeenSent``): the operation may have sent one before it
        /// waited, so a call that may not run twice is not sent again.
        ///
        /// A ``RateLimiter``'s carries the time until the permit the caller waited for frees as
        /// ``LimiterRejectionError/retryAfter``; the time-out reads it as a hint, so a policy
        /// around the limit waits for the permit rather than try again before it frees. A
        /// ``ConcurrencyLimiter``'s carries none: no one knows when a slot frees.
        public static let waitCutShort = Reason(rawValue: "waitCutShort")

        /// The identifier.
        public var description: String { self.rawValue }
    }

    /// The name of the limiter that refused the call.
    public let limiterName: String
    /// Why it refused.
    public let reason: Reason
    /// How many callers were queued when it refused: a ``ConcurrencyLimiter`` always reports
    /// it (`0` for one without a queue); `nil` from a ``RateLimiter``, which queues no one.
    public let queued: Int?
    /// When a permit frees, where the limiter knows.
    public let retryAfter: Duration?
    /// For ``Reason/queueTimedOut``: when the queue's deadline was and when it ended the wait,
    /// for a time limit enclosing the call (see `TimeLimitEnd`); otherwise `nil`. Not compared.
    let limitEnd: TimeLimitEnd?

    /// Creates a rejection.
    public init(limiterName: String, reason: Reason, queued: Int? = nil, retryAfter: Duration? = nil) {
        self.init(limiterName: limiterName, reason: reason, queued: queued, retryAfter: retryAfter, limitEnd: nil)
    }

    /// Creates a rejection that `limitEnd` says when a deadline of the limiter's ended.
    init(limiterName: String, reason: Reason, queued: Int?, retryAfter: Duration? = nil, limitEnd: TimeLimitEnd?) {
        self.limiterName = limiterName
        self.reason = reason
        self.queued = queued
        self.retryAfter = retryAfter
        self.limitEnd = limitEnd
    }

    /// Whether the two report the same limiter, reason, queue length and retry-after.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.limiterName == rhs.limiterName && lhs.reason == rhs.reason && lhs.queued == rhs.queued
            && lhs.retryAfter == rhs.retryAfter
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.limiterName)
        hasher.combine(self.reason)
        hasher.combine(self.queued)
        hasher.combine(self.retryAfter)
    }

    /// Always `true`: a permit may be free next time.
    public var isRetryable: Bool { true }

    /// Always ``RequestDelivery/notSent``.
    public var requestDelivery: RequestDelivery { .notSent }

    /// `<name> rejected the call (<reason>) …`.
    public var description: String {
        var text = "\(self.limiterName) rejected the call (\(self.reason))"
        if let queued { text += ", \(queued) queued" }
        if let retryAfter { text += ", retry after \(retryAfter)" }
        return text
    }
}
