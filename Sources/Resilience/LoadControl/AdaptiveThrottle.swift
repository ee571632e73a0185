import Synchronization

/// Client-side adaptive throttling: when the server stops accepting requests,
/// most new requests fail locally, before they reach it.
///
/// A retry budget limits retries; it cannot limit first attempts, so during an
/// outage every fresh request still reaches the dead server. This throttle
/// follows the "Handling Overload" chapter of Google's *Site Reliability
/// Engineering* book: over a sliding window (about two minutes) it counts the
/// requests it saw and those the server accepted, and rejects each new request
/// locally with probability
///
///     max(0, (requests − multiplier × accepts − floor) / (requests + 1))
///
/// With the default multiplier of 2 nothing is rejected while the server accepts
/// at least half the requests. When it accepts none, almost every request is
/// rejected, yet a trickle still goes through; as soon as those succeed the
/// probability falls, so recovery needs nobody to intervene.
///
/// `requests` counts, as the book defines it, every request the application
/// attempted, those rejected locally included, with one refinement: the window is
/// cut into twelve spans, and a local rejection counts only in a span in which the
/// server also failed a request. Counting local rejections is what holds an
/// overloaded server near its capacity: a client offering 100 times what the server
/// can accept sends it about its capacity, where counting only the requests sent
/// lets through about `sqrt(2 × 100)`, 14 times it. Counting them everywhere is what
/// makes the book's throttle slow to recover: after an outage the window is full of
/// local rejections that only accepts can outweigh, and accepts grow by a factor of
/// e only every `window / multiplier`: in a model of the benchmark's outage (10
/// requests a second, the defaults), traffic was still throttled about five windows
/// after the server came back. A span in which the server
/// failed nothing says the server is answering, and the throttle's own rejections
/// in it are left out: traffic is back to full within a window of the recovery, and
/// a dead server sees a few requests per window.
///
/// Share one throttle among everything that calls one server side by side. A
/// ``RetryPolicy`` (``RetryPolicy/throttle``) or a ``CircuitBreaker``
/// (``CircuitBreaker/throttle``) takes one and asks it before every attempt:
///
/// ```swift
/// let throttle = try AdaptiveThrottle()
/// let policy = try RetryPolicy(maximumAttempts: 3, throttle: throttle)
/// let breaker = try CircuitBreaker(name: "search", throttle: throttle)
/// ```
///
/// A pipeline runs it as a stage, and any other layer can drive it through its
/// small API:
///
/// ```swift
/// guard throttle.admit() else { throw AdaptiveThrottleRejection(rejectionProbability: throttle.rejectionProbability) }
/// do {
///     let value = try await client.fetch()
///     throttle.recordAccepted()
/// } catch {
///     throttle.record(error)
///     throw error
/// }
/// ```
///
/// ``execute(operation:)`` does exactly that. The success path takes no lock:
/// a request is counted with one atomic compare-and-swap, and ``admit()`` reads
/// one atomic word while no request has failed within the window. Time comes
/// from the injected clock; a jump backwards is ignored (time never runs back for
/// the window), a jump forwards ages out what the skipped time held.
public final class AdaptiveThrottle: Sendable {
    /// K: how many requests each accepted request pays for before rejection starts.
    public let multiplier: Double
    /// The span over which requests and accepts are counted.
    public let window: Duration
    /// Requests beyond `multiplier × accepts` tolerated in a window before anything is rejected.
    public let floor: Int

    /// The number of buckets the window is cut into; it moves one bucket at a time.
    static let bucketCount = 12

    private let bucketLength: Duration
    private let clock: ElapsedClock
    private let buckets: [Bucket]
    /// The latest bucket epoch seen, so a clock that jumps back does not move the window back.
    private let latestEpoch = Atomic<UInt64>(0)
    /// One more than the epoch of the latest request the server did not accept; 0 for never.
    private let latestFailureEpoch = Atomic<UInt64>(0)
    /// The generator, used only when the rejection probability is above zero; drawn with no lock held.
    private let generator: ThrottleDraw

    /// Creates a throttle, validating every setting.
    ///
    /// - Parameters:
    ///   - multiplier: K in the formula; at least 1. Defaults to 2, the SRE book's value:
    ///     lower rejects sooner, higher tolerates more failures.
    ///   - window: The span over which requests are counted; greater than zero, and at most
    ///     about 146 years. Defaults to 120 s.
    ///   - floor: Requests tolerated beyond `multiplier × accepts` before anything is
    ///     rejected; zero or more. Defaults to 0, the book's formula; raise it so a
    ///     client that sends a handful of requests is never throttled.
    ///   - clock: The clock the window runs on; inject a test clock in tests.
    ///   - generator: Decides each rejection; inject a seeded one for repeatable runs. Its
    ///     `next()` runs with no lock of the throttle held, so it may call the throttle; a
    ///     rejection decided while another call is drawing from it (or from inside its
    ///     `next()`) draws from the system's generator instead, so overlapping calls are
    ///     repeatable only in how many they reject on average.
    /// - Throws: ``ConfigurationError`` naming the first invalid setting.
    public init(
        multiplier: Double = 2,
        window: Duration = .seconds(120),
        floor: Int = 0,
        clock: some Clock<Duration> = ContinuousClock(),
        generator: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) throws(ConfigurationError) {
        try ConfigurationError.require(
            multiplier.isFinite && multiplier >= 1, "multiplier", multiplier, "finite and at least 1")
        try ConfigurationError.requirePositive(window, "window")
        try ConfigurationError.requireAtMostResilienceMaximum(window, "window")
        try ConfigurationError.require(floor >= 0, "floor", floor, "zero or greater")
        self.multiplier = multiplier
        self.window = window
        self.floor = floor
        self.bucketLength = Swift.max(self.window / Self.bucketCount, .nanoseconds(1))
        self.clock = ElapsedClock(clock)
        self.buckets = (0..<Self.bucketCount).map { _ in Bucket() }
        self.generator = ThrottleDraw(generator)
    }

    // MARK: - The small API

    /// Decides whether one request may be sent; `false` means reject it locally.
    ///
    /// A local rejection is counted here (see the type's discussion of `requests`);
    /// an admitted request is counted when its outcome is: it must be followed by
    /// ``recordAccepted()`` or ``recordRejected()`` (or ``record(_:)``), or by nothing
    /// if it was never sent after all.
    public func admit() -> Bool {
        let epoch = self.currentEpoch()
        let failure = self.latestFailureEpoch.load(ordering: .relaxed)
        if failure == 0 || epoch &- (failure &- 1) >= UInt64(Self.bucketCount) {
            return true  // nothing failed within the window: the probability is zero
        }
        let probability = self.probability(at: epoch)
        guard probability > 0 else { return true }
        let draw = self.generator.unit()
        if draw >= probability { return true }
        Self.increment(self.buckets[Int(epoch % UInt64(Self.bucketCount))].localRejections, epoch: epoch)
        return false
    }

    /// Counts a request the server accepted (answered, even with a client error).
    public func recordAccepted() {
        self.count(accepted: true, at: self.currentEpoch())
    }

    /// Counts a request the server did not accept: it was overloaded, unreachable or failed.
    public func recordRejected() {
        self.count(accepted: false, at: self.currentEpoch())
    }

    private static let breakerRejection = ObjectIdentifier(CircuitBreakerOpenError.self)
    private static let throttleRejection = ObjectIdentifier(AdaptiveThrottleRejection.self)

    /// Counts a failed request as the failure says: see ``isAccepted(_:)``.
    ///
    /// A call the caller cancelled is not counted at all: it says nothing of the
    /// server. Neither is a hedge cancelled because another attempt won
    /// (``Interruption/superseded``), nor a call a breaker, another throttle or a
    /// limiter rejected locally (``CircuitBreakerOpenError``, ``AdaptiveThrottleRejection``,
    /// or ``LimiterRejectionError`` anywhere in the error's chain: see
    /// ``FailureAnalysis/isLocalRejection``), nor a request that never left an offline
    /// device: none of them reached it (``Rulebook/countsAsFailure(_:)``).
    public func record(_ error: any Error) {
        // A breaker's or a throttle's own rejection as thrown (a breaker with this throttle
        // rejecting every call of an outage) is known by its type, a comparison rather than an analysis.
        let type = ObjectIdentifier(Swift.type(of: error))
        if type == Self.breakerRejection || type == Self.throttleRejection { return }
        let analysis = FailureAnalysis(error)
        if !Rulebook.loadedTheDependency(analysis) { return }
        if Self.isAccepted(analysis) { self.recordAccepted() } else { self.recordRejected() }
    }

    /// Whether a failure still counts as accepted by the server: an HTTP 4xx answer
    /// other than 408 Request Timeout and 429 Too Many Requests (the server did its
    /// work and found the request wrong), or a request for credentials of another
    /// shape (CloudKit's `notAuthenticated`, `URLError.userAuthenticationRequired`),
    /// which is accepted like the 401 it stands for (``FailureAnalysis/needsCredentials``).
    /// Everything else, a 5xx, a timeout, a refused connection, counts as not accepted.
    public static func isAccepted(_ analysis: FailureAnalysis) -> Bool {
        guard !analysis.isTooManyRequests else { return false }
        guard let status = analysis.httpStatus else { return analysis.needsCredentials }
        return (400..<500).contains(status) && status != 408
    }

    /// The probability that ``admit()`` rejects a request now.
    public var rejectionProbability: Double {
        self.probability(at: self.currentEpoch())
    }

    /// The requests and accepts counted within the window now.
    ///
    /// `requests` includes the local rejections that count: those in a span of the
    /// window in which the server also failed a request.
    public var counts: (requests: Int, accepts: Int) {
        let totals = self.totals(at: self.currentEpoch())
        return (totals.requests, totals.accepts)
    }

    /// Runs `operation` if the throttle admits it, and counts its outcome.
    ///
    /// - Throws: ``AdaptiveThrottleRejection`` without running the operation when the
    ///   throttle rejects the call (the request never reached the server); otherwise the
    ///   operation's error, unchanged.
    public nonisolated(nonsending) func execute<Value>(
        operation: () async throws -> Value
    ) async throws -> Value {
        guard self.admit() else {
            throw AdaptiveThrottleRejection(rejectionProbability: self.rejectionProbability)
        }
        let value: Value
        do {
            value = try await operation()
        } catch {
            self.record(error)
            throw error
        }
        self.recordAccepted()
        return value
    }

    // MARK: - The window

    /// Three counters per bucket, each one word: the bucket's epoch (low 32 bits of it)
    /// in the high half, the count in the low half.
    final class Bucket: Sendable {
        /// Requests the server accepted.
        let accepts = Atomic<UInt64>(0)
        /// Requests sent that the server did not accept.
        let others = Atomic<UInt64>(0)
        /// Requests rejected locally; they count only beside a failure in the same bucket.
        let localRejections = Atomic<UInt64>(0)
    }

    private func currentEpoch() -> UInt64 {
        let computed = self.epoch(at: self.clock.now())
        var latest = self.latestEpoch.load(ordering: .relaxed)
        while computed > latest {
            let (exchanged, original) = self.latestEpoch.compareExchange(
                expected: latest, desired: computed, ordering: .relaxed)
            if exchanged { return computed }
            latest = original
        }
        return latest
    }

    /// The bucket epoch `elapsed` falls in.
    private func epoch(at elapsed: Duration) -> UInt64 {
        UInt64(Swift.max(0, (Swift.max(elapsed, .zero) / self.bucketLength).rounded(.down)).clampedToUInt64)
    }

    /// Whether ``admit()`` would reject some requests: the rejection probability is above
    /// zero, judged without reading the clock (which may be user code) for a registry that
    /// asks under its lock.
    ///
    /// It is judged at the latest time the throttle read its clock, or, for a throttle on the
    /// system's continuous clock on Linux, at the time of `boot` (a reading of the system's
    /// boot-time clock taken before the lock), whichever is later. The time judged at is
    /// never later than now, so a throttle whose window has just emptied, or one not called
    /// since it did, may still be judged to reject; never the other way round.
    func isRejecting(atSystemBoot boot: Int64?) -> Bool {
        let failure = self.latestFailureEpoch.load(ordering: .relaxed)
        guard failure != 0 else { return false }  // nothing ever failed: the probability is zero
        let reading = boot.flatMap { self.clock.elapsed(atSystemBoot: $0) }.map { self.epoch(at: $0) } ?? 0
        // Never before the failure, which a racing call may have counted at a later epoch.
        let epoch = Swift.max(self.latestEpoch.load(ordering: .relaxed), failure - 1, reading)
        if epoch - (failure - 1) >= UInt64(Self.bucketCount) { return false }  // none within the window
        return self.probability(at: epoch) > 0
    }

    private func count(accepted: Bool, at epoch: UInt64) {
        let bucket = self.buckets[Int(epoch % UInt64(Self.bucketCount))]
        if accepted {
            Self.increment(bucket.accepts, epoch: epoch)
        } else {
            Self.increment(bucket.others, epoch: epoch)
        }
        if !accepted {
            var latest = self.latestFailureEpoch.load(ordering: .relaxed)
            while epoch &+ 1 > latest {
                let (exchanged, original) = self.latestFailureEpoch.compareExchange(
                    expected: latest, desired: epoch &+ 1, ordering: .relaxed)
                if exchanged { break }
                latest = original
            }
        }
    }

    private static func increment(_ word: borrowing Atomic<UInt64>, epoch: UInt64) {
        let tag = epoch & 0xFFFF_FFFF
        var old = word.load(ordering: .relaxed)
        while true {
            let new: UInt64
            if old >> 32 == tag {
                let count = old & 0xFFFF_FFFF
                new = count == 0xFFFF_FFFF ? old : old + 1  // saturates rather than wraps into the tag
            } else {
                new = tag << 32 | 1
            }
            let (exchanged, original) = word.compareExchange(expected: old, desired: new, ordering: .relaxed)
            if exchanged { return }
            old = original
        }
    }

    private func totals(at epoch: UInt64) -> (requests: Int, accepts: Int) {
        var accepts = 0
        var others = 0
        for bucket in self.buckets {
            accepts += Self.count(in: bucket.accepts.load(ordering: .relaxed), at: epoch)
            let failed = Self.count(in: bucket.others.load(ordering: .relaxed), at: epoch)
            if failed > 0 {
                others += failed + Self.count(in: bucket.localRejections.load(ordering: .relaxed), at: epoch)
            }
        }
        return (accepts + others, accepts)
    }

    /// The count a word holds if its bucket lies within the window ending at `epoch`.
    private static func count(in word: UInt64, at epoch: UInt64) -> Int {
        let age = ((epoch & 0xFFFF_FFFF) &- (word >> 32)) & 0xFFFF_FFFF
        return age < UInt64(Self.bucketCount) ? Int(word & 0xFFFF_FFFF) : 0
    }

    private func probability(at epoch: UInt64) -> Double {
        let totals = self.totals(at: epoch)
        return Self.rejectionProbability(
            requests: totals.requests, accepts: totals.accepts, multiplier: self.multiplier, floor: self.floor)
    }

    /// The formula: `max(0, (requests − multiplier × accepts − floor) / (requests + 1))`.
    static func rejectionProbability(requests: Int, accepts: Int, multiplier: Double, floor: Int) -> Double {
        let excess = Double(requests) - multiplier * Double(accepts) - Double(floor)
        return Swift.max(0, excess / (Double(requests) + 1))
    }
}

extension Double {
    /// The value as a `UInt64`, clamped; NaN becomes 0.
    fileprivate var clampedToUInt64: UInt64 {
        guard self > 0 else { return 0 }
        return self >= 18_446_744_073_709_549_568 ? .max : UInt64(self)
    }
}
