import Synchronization

/// A token bucket that stops retries from multiplying load during an outage.
///
/// It follows gRPC's retry throttling (proposal A6): the bucket starts full at
/// ``maximumTokens``; every failed attempt that is a candidate for a retry takes
/// one token, every success gives back ``tokenRatio``; a retry is allowed only
/// while more than half the tokens remain. The first attempt of a call is never
/// gated, so a budget can slow retries but never blocks a request outright.
/// A ``CircuitBreakerOpenError`` costs no token, wherever it sits in the error's chain:
/// the breaker rejected the call locally, so the dependency saw no load from it. Nor does a rejection by one of
/// the library's own limiters, wherever it sits in the error's chain
/// (``FailureAnalysis/isLocalRejection``): a full ``ConcurrencyLimiter``, a
/// ``RateLimiter`` out of permits. Nor does a request that never left an offline
/// device (``FailureAnalysis/isOffline`` with ``RequestDelivery/notSent``): the same
/// failures a ``CircuitBreaker`` never counts (``Rulebook/countsAsFailure(_:)``).
///
/// Share one budget among everything that calls the same dependency: pass it to
/// one ``RetryPolicy`` used everywhere, or to several policies. Give it to one layer
/// of a nesting, though: layers nested in one another (a policy around a ``Hedging``,
/// a policy around a policy) that share a budget each give back a success and each
/// pay for a failure they retry, so one call counts twice. A layer learns nothing of
/// the budgets of the layers around it; that keeps a success free of any lookup.
///
/// ```swift
/// let budget = try RetryBudget(maximumTokens: 10, tokenRatio: 0.1)
/// let policy = try RetryPolicy(maximumAttempts: 3, budget: budget)
/// ```
///
/// Tokens are kept in thousandths (gRPC also allows three decimal places) in a
/// single atomic integer, so recording a success costs one atomic load when the
/// bucket is full and one compare-and-swap otherwise; no lock, no actor hop.
public final class RetryBudget: Sendable {
    /// The bucket's capacity and starting level.
    public let maximumTokens: Double
    /// The tokens a success gives back.
    public let tokenRatio: Double

    private let milliTokens: Atomic<Int>
    private let maximumMilliTokens: Int
    private let refundMilliTokens: Int

    private static let failureCost = 1_000

    /// Creates a full bucket, validating both settings.
    ///
    /// - Parameters:
    ///   - maximumTokens: Capacity, in `1...1_000_000`. Defaults to 10.
    ///   - tokenRatio: Tokens refunded per success, in `0.001...maximumTokens`. Defaults to 0.1.
    /// - Throws: ``ConfigurationError`` naming the setting out of range.
    public convenience init(maximumTokens: Double = 10, tokenRatio: Double = 0.1) throws(ConfigurationError) {
        self.init(configuration: try RetryBudgetConfiguration(maximumTokens: maximumTokens, tokenRatio: tokenRatio))
    }

    /// Creates a full bucket from settings already validated; it cannot fail.
    ///
    /// ```swift
    /// let budget = RetryBudget(configuration: .default)
    /// ```
    public init(configuration: RetryBudgetConfiguration) {
        self.maximumTokens = configuration.maximumTokens
        self.tokenRatio = configuration.tokenRatio
        self.maximumMilliTokens = Self.thousandths(atMost: configuration.maximumTokens)
        self.refundMilliTokens = Int((configuration.tokenRatio * 1_000).rounded())
        self.milliTokens = Atomic(self.maximumMilliTokens)
    }

    /// The settings the bucket was made with.
    public var configuration: RetryBudgetConfiguration {
        RetryBudgetConfiguration(uncheckedMaximumTokens: self.maximumTokens, tokenRatio: self.tokenRatio)
    }

    /// The largest whole number of thousandths that is not more than `value`.
    ///
    /// Plain rounding would turn a capacity of 2.0176 into 2.018 tokens, above the
    /// capacity the caller set; `.down` alone would turn 1.001 (which `Double`
    /// holds as a hair under 1.001) into 1.000.
    private static func thousandths(atMost value: Double) -> Int {
        let nearest = Int((value * 1_000).rounded())
        return Double(nearest) / 1_000 > value ? nearest - 1 : nearest
    }

    /// The tokens in the bucket now, in `0...maximumTokens`.
    public var tokens: Double {
        Double(self.milliTokens.load(ordering: .relaxed)) / 1_000
    }

    /// Whether the bucket is full: no token spent, or every one given back. A fresh bucket
    /// is full, so one that is not holds something a fresh one lacks.
    var isFull: Bool {
        self.milliTokens.load(ordering: .relaxed) >= self.maximumMilliTokens
    }

    /// Whether a retry would be allowed now: more than half the tokens remain.
    public var allowsRetry: Bool {
        self.milliTokens.load(ordering: .relaxed) * 2 > self.maximumMilliTokens
    }

    /// Gives back ``tokenRatio`` tokens, up to the maximum.
    public func recordSuccess() {
        var current = self.milliTokens.load(ordering: .relaxed)
        while current < self.maximumMilliTokens {
            let next = Swift.min(self.maximumMilliTokens, current + self.refundMilliTokens)
            let (exchanged, original) = self.milliTokens.weakCompareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// Takes one token for a failed attempt, down to zero.
    public func recordFailure() {
        var current = self.milliTokens.load(ordering: .relaxed)
        while current > 0 {
            let next = Swift.max(0, current - Self.failureCost)
            let (exchanged, original) = self.milliTokens.weakCompareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
}
