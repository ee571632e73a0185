/// The calls a failure-rate rule looks at, with their failures: a ring of the
/// last N outcomes, or a ring of time buckets.
///
/// Both rings are allocated once, when the breaker is made; recording a call
/// writes in place and never allocates. Time is the breaker's elapsed time and
/// must not go backwards, which the state machine guarantees.
struct CircuitBreakerSlidingWindow: Sendable {
    private struct Bucket: Sendable {
        /// Which slice of time the bucket holds: elapsed nanoseconds divided by the bucket span.
        ///
        /// 128 bits wide, so that the window keeps sliding however far the clock jumps: 64
        /// bits of nanoseconds run out after about 292 years.
        var epoch: Int128
        var calls: Int
        var failures: Int
    }

    private let isTimeBased: Bool

    // Count-based: the last `outcomes.count` results, 1 for a failure.
    private var outcomes: [UInt8]
    private var nextSlot = 0
    private var filledSlots = 0
    private var failuresInRing = 0

    // Time-based: `buckets.count` slices of `bucketSpanNanoseconds` each.
    private var buckets: [Bucket]
    private let bucketSpanNanoseconds: Int128
    // The bucket the last call went to and the span of time it covers, `start..<end`:
    // a call inside that span is counted there without converting `now` to nanoseconds
    // (a 128-bit division) or dividing by the span. Empty until the first call.
    private var currentIndex = 0
    private var currentStart = Duration.zero
    private var currentEnd = Duration.zero

    init(_ window: CircuitBreakerWindow) {
        switch window.kind {
        case .count(let calls):
            self.isTimeBased = false
            self.outcomes = [UInt8](repeating: 0, count: calls)
            self.buckets = []
            self.bucketSpanNanoseconds = 1
        case .time(let duration, let buckets):
            self.isTimeBased = true
            self.outcomes = []
            self.buckets = [Bucket](repeating: Bucket(epoch: .min, calls: 0, failures: 0), count: buckets)
            self.bucketSpanNanoseconds = Swift.max(1, Self.nanoseconds(duration) / Int128(buckets))
        }
    }

    /// Adds one call's outcome, finished at `now`.
    mutating func record(failure: Bool, at now: Duration) {
        if self.isTimeBased {
            if now < self.currentStart || now >= self.currentEnd {
                self.moveToBucket(at: now)
            }
            self.buckets[self.currentIndex].calls += 1
            if failure { self.buckets[self.currentIndex].failures += 1 }
        } else {
            if self.filledSlots == self.outcomes.count {
                self.failuresInRing -= Int(self.outcomes[self.nextSlot])
            } else {
                self.filledSlots += 1
            }
            self.outcomes[self.nextSlot] = failure ? 1 : 0
            if failure { self.failuresInRing += 1 }
            self.nextSlot += 1
            if self.nextSlot == self.outcomes.count { self.nextSlot = 0 }
        }
    }

    /// The bucket the last call went to, as the span of time it covers and its epoch, or `nil`
    /// before the first call, for a count window, or when the span could not be cached.
    var currentBucket: (start: Duration, end: Duration, epoch: Int128)? {
        guard self.isTimeBased, self.currentEnd > self.currentStart else { return nil }
        return (self.currentStart, self.currentEnd, self.buckets[self.currentIndex].epoch)
    }

    /// Adds `count` successful calls to the bucket of `epoch`, if the ring still holds that slice.
    ///
    /// The breaker counts closed-state successes within the current bucket outside its lock,
    /// and hands them over here, under the lock, before anything reads the window.
    mutating func addSuccesses(_ count: Int, inBucketOf epoch: Int128) {
        guard self.isTimeBased, count > 0 else { return }
        let index = Int(epoch % Int128(self.buckets.count))
        if self.buckets[index].epoch == epoch {
            self.buckets[index].calls += count
        }
    }

    /// Makes the bucket of `now` the current one, emptying it if it still holds an older slice.
    private mutating func moveToBucket(at now: Duration) {
        let epoch = self.epoch(of: now)
        let index = Int(epoch % Int128(self.buckets.count))
        if self.buckets[index].epoch != epoch {
            self.buckets[index] = Bucket(epoch: epoch, calls: 0, failures: 0)
        }
        self.currentIndex = index
        // The span in attoseconds; it cannot overflow for any `Duration` a clock can
        // reach, but if it would, leave the cache empty so every call takes this path.
        let (start, startOverflow) = (epoch * self.bucketSpanNanoseconds).multipliedReportingOverflow(
            by: 1_000_000_000)
        let (span, spanOverflow) = self.bucketSpanNanoseconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (end, endOverflow) = start.addingReportingOverflow(span)
        if startOverflow || spanOverflow || endOverflow || now < .zero {
            self.currentStart = .zero
            self.currentEnd = .zero
        } else {
            self.currentStart = Duration(attoseconds: start)
            self.currentEnd = Duration(attoseconds: end)
        }
    }

    /// The calls and failures in the window as seen at `now`.
    func totals(at now: Duration) -> (calls: Int, failures: Int) {
        guard self.isTimeBased else { return (self.filledSlots, self.failuresInRing) }
        return self.totals(throughBucketOf: self.epoch(of: now))
    }

    /// The calls and failures a time window holds as seen at any time within the bucket of
    /// `current`: that bucket's and those of the slices before it still in the window.
    func totals(throughBucketOf current: Int128) -> (calls: Int, failures: Int) {
        guard self.isTimeBased else { return (self.filledSlots, self.failuresInRing) }
        let oldest = current - Int128(self.buckets.count)
        var calls = 0
        var failures = 0
        for bucket in self.buckets where bucket.epoch > oldest && bucket.epoch <= current {
            calls += bucket.calls
            failures += bucket.failures
        }
        return (calls, failures)
    }

    /// Forgets every call, keeping the storage.
    mutating func removeAll() {
        if self.isTimeBased {
            for index in self.buckets.indices {
                self.buckets[index] = Bucket(epoch: .min, calls: 0, failures: 0)
            }
            self.currentStart = .zero
            self.currentEnd = .zero
        } else {
            self.nextSlot = 0
            self.filledSlots = 0
            self.failuresInRing = 0
        }
    }

    /// The bucket epoch of `now`: the whole bucket spans elapsed.
    private func epoch(of now: Duration) -> Int128 {
        let nanoseconds = Self.nanoseconds(now)
        // 64-bit division when both fit, which is every case short of a clock jumping centuries.
        if let nanoseconds = Int64(exactly: nanoseconds), let span = Int64(exactly: self.bucketSpanNanoseconds) {
            return Int128(nanoseconds / span)
        }
        return nanoseconds / self.bucketSpanNanoseconds
    }

    /// A duration in whole nanoseconds, zero if negative; exact for every `Duration`, even
    /// those too long for `Duration.components`.
    static func nanoseconds(_ duration: Duration) -> Int128 {
        guard duration > .zero else { return 0 }
        return duration.attoseconds / 1_000_000_000
    }
}
