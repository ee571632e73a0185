/// The calls a failure-rate rule looks at, with their failures: a ring of the
/// last N outcomes, or a ring of time buckets.
///
/// Both rings are allocated once, when the breaker is made; recording a call
/// writes in place and never allocates. Time is the breaker's elapsed time and
/// must not go backwards, which the state machine guarantees.
struct CircuitBreakerSlidingWindow: Sendable {
    private struct Bucket: Sendable {
        /// Which slice of time the bucket holds: elapsed nanoseconds divided by the bucket span.
        var epoch: Int64
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
    private let bucketSpanNanoseconds: Int64
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
            self.bucketSpanNanoseconds = Swift.max(1, Self.nanoseconds(duration / buckets))
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

    /// Makes the bucket of `now` the current one, emptying it if it still holds an older slice.
    private mutating func moveToBucket(at now: Duration) {
        let epoch = Self.nanoseconds(now) / self.bucketSpanNanoseconds
        let index = Int(epoch % Int64(self.buckets.count))
        if self.buckets[index].epoch != epoch {
            self.buckets[index] = Bucket(epoch: epoch, calls: 0, failures: 0)
        }
        self.currentIndex = index
        self.currentStart = .nanoseconds(epoch * self.bucketSpanNanoseconds)
        self.currentEnd = self.currentStart + .nanoseconds(self.bucketSpanNanoseconds)
    }

    /// The calls and failures in the window as seen at `now`.
    func totals(at now: Duration) -> (calls: Int, failures: Int) {
        guard self.isTimeBased else { return (self.filledSlots, self.failuresInRing) }
        let current = Self.nanoseconds(now) / self.bucketSpanNanoseconds
        let oldest = current - Int64(self.buckets.count)
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

    /// A non-negative duration in whole nanoseconds, saturating at `Int64.max`.
    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return .max }
        let (total, overflow2) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflow2 ? .max : total
    }
}
