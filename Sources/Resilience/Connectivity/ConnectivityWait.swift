/// How a ``RetryPolicy`` call waits for the network after a failure that means "offline".
///
/// A failure that says the device is offline (``FailureAnalysis/isOffline``:
/// `URLError.notConnectedToInternet` and its kin, CloudKit's `networkUnavailable`)
/// does not spend the call's attempts on backoff. When the monitor confirms that
/// the device is offline, the call waits until the monitor reports it online,
/// then tries again at once, or once the rest of the failure's retry-after hint
/// (CloudKit's `CKRetryAfter`) has passed; a hint over
/// ``RetryPolicy/maximumRetryAfter`` ends the call with
/// ``RetryStopReason/retryAfterTooLong`` without waiting. A ``CircuitBreaker``
/// inside the call never counts a request that never left the offline device
/// (``Rulebook/countsAsFailure(_:)``). The failed attempt and the wait do not count
/// against ``RetryPolicy/maximumAttempts``; the wait does count against the
/// ``RetryPolicy/deadline``.
///
/// A call waits for the network at most ``maximumWaits`` times (5 unless set). A network
/// that comes back only to drop again as each attempt goes out would otherwise keep a
/// call without a deadline sending for ever, none of its attempts counted. Past that
/// many waits an offline failure is a failure like any other: the classifier judges it,
/// it takes one of ``RetryPolicy/maximumAttempts``, and the retry follows the backoff. So
/// a call sends at most ``maximumWaits`` plus ``RetryPolicy/maximumAttempts`` times,
/// however the network flaps.
///
/// A wait that reaches `limit` ends the call with ``RetryStopReason/offline``; one
/// that reaches the deadline first, with ``RetryStopReason/deadlineExceeded``.
/// Cancelling the call during the wait ends it with ``RetryStopReason/cancelled``,
/// unless the clock had already jumped past the wait's end (its `limit`, or the deadline
/// when that comes first): the wait's end came first, and the call ends as that end says
/// (``RetryStopReason/offline``, or ``RetryStopReason/deadlineExceeded``), even if the
/// wait's timer has not woken yet. So does a network that comes back after such a jump.
/// When the monitor says the device is online although the failure said offline,
/// the failure is treated like any other and retried with the backoff.
///
/// ```swift
/// let network = ConnectivityWait(monitor: monitor, limit: .seconds(300))
/// let feed = try await policy.execute(waitingFor: network) { try await api.feed() }
/// ```
public struct ConnectivityWait: Sendable {
    /// The source of connectivity changes.
    public let monitor: any ConnectivityMonitor
    /// The longest one wait lasts.
    public let limit: Duration
    /// The most waits for the network one call makes; past them an offline failure takes
    /// an attempt and the backoff, as any other failure does.
    public let maximumWaits: Int

    /// The number of waits for the network a call makes unless told otherwise: 5.
    ///
    /// Enough to ride out the few drops of a commute without spending an attempt on any,
    /// few enough that a network flapping with every request costs a call no more than
    /// five extra sends.
    public static let defaultMaximumWaits = 5

    /// The most waits for the network a call may be allowed: 100.
    public static let maximumWaitsLimit = 100

    /// Creates a wait on `monitor` of at most `limit`, at most ``defaultMaximumWaits`` times a call.
    ///
    /// - Parameters:
    ///   - monitor: The source of connectivity changes.
    ///   - limit: The longest one wait lasts; a negative limit counts as zero, which
    ///     stops an offline call at once with ``RetryStopReason/offline``, and one beyond
    ///     about 146 years (the package's longest duration) as that longest, as a policy's
    ///     ``RetryPolicy/deadline`` does. ``limit`` reads back the value counted.
    public init(monitor: any ConnectivityMonitor, limit: Duration) {
        self.monitor = monitor
        self.limit = Swift.max(limit, .zero).clampedToResilienceRange
        self.maximumWaits = Self.defaultMaximumWaits
    }

    /// Creates a wait on `monitor` of at most `limit`, at most `maximumWaits` times a call.
    ///
    /// ```swift
    /// let network = try ConnectivityWait(monitor: monitor, limit: .seconds(300), maximumWaits: 3)
    /// ```
    ///
    /// - Parameters:
    ///   - monitor: The source of connectivity changes.
    ///   - limit: The longest one wait lasts; a negative limit counts as zero, which
    ///     stops an offline call at once with ``RetryStopReason/offline``, and one beyond
    ///     about 146 years (the package's longest duration) as that longest, as a policy's
    ///     ``RetryPolicy/deadline`` does. ``limit`` reads back the value counted.
    ///   - maximumWaits: The most waits for the network one call makes, in `1...100`
    ///     (``maximumWaitsLimit``); past them an offline failure counts as an attempt.
    /// - Throws: ``ConfigurationError`` naming `maximumWaits` when it is outside that range.
    public init(monitor: any ConnectivityMonitor, limit: Duration, maximumWaits: Int) throws(ConfigurationError) {
        try ConfigurationError.require(
            (1...Self.maximumWaitsLimit).contains(maximumWaits), "maximumWaits", maximumWaits,
            "in 1...\(Self.maximumWaitsLimit)")
        self.monitor = monitor
        self.limit = Swift.max(limit, .zero).clampedToResilienceRange
        self.maximumWaits = maximumWaits
    }

    /// How a wait ended.
    enum Ending {
        case connected
        case limitReached
        case cancelled
    }

    /// Waits until the monitor reports the device online, `clock` reaches `end`, or the task is cancelled.
    func waitForConnection(until end: Duration, clock: ElapsedClock) async -> Ending {
        let updates = self.monitor.connectivityUpdates()
        let ending = await withTaskGroup(of: Ending?.self) { group in
            group.addTask {
                for await connectivity in updates where connectivity.isOnline {
                    return .connected
                }
                return nil  // The stream ended, or the wait was cancelled: the timer decides.
            }
            group.addTask {
                do {
                    try await clock.sleepUntil(end)
                    return .limitReached
                } catch {
                    return .cancelled
                }
            }
            defer { group.cancelAll() }
            while let next = await group.next() {
                if let next { return next }
            }
            return Ending.cancelled
        }
        return Task.isCancelled ? .cancelled : ending
    }
}
