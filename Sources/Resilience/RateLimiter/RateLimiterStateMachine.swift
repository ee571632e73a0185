/// The pure state of a ``RateLimiter``: permits counted against instants on its clock.
///
/// No locks, no awaits, no clock of its own: each method takes the current
/// elapsed time. A clock that jumps backwards frees nothing and takes nothing
/// back; one that jumps far forwards refills at most to the limit.
struct RateLimiterStateMachine: Sendable {
    /// What a request for a permit ended in.
    enum Decision: Equatable {
        /// A permit was taken.
        case granted
        /// No permit is free; one frees after this long.
        case denied(retryAfter: Duration)
    }

    private enum State {
        case tokenBucket(TokenBucket)
        case slidingWindow(SlidingWindow)
    }

    private var state: State

    init(_ algorithm: RateLimiterAlgorithm, at now: Duration) {
        switch algorithm.kind {
        case .tokenBucket(let capacity, let tokensPerPeriod, let period):
            self.state = .tokenBucket(
                TokenBucket(
                    capacity: capacity, tokensPerPeriod: tokensPerPeriod, period: period, tokens: capacity,
                    periodStart: now))
        case .slidingWindow(let limit, let window, let segments):
            self.state = .slidingWindow(
                SlidingWindow(
                    limit: limit, segmentLength: window / segments,
                    counts: Array(repeating: 0, count: segments), current: 0, total: 0, segmentStart: now))
        }
    }

    /// Takes a permit if one is free at `now`.
    mutating func acquire(at now: Duration) -> Decision {
        switch self.state {
        case .tokenBucket(var bucket):
            let decision = bucket.acquire(at: now)
            self.state = .tokenBucket(bucket)
            return decision
        case .slidingWindow(var window):
            let decision = window.acquire(at: now)
            self.state = .slidingWindow(window)
            return decision
        }
    }

    /// Hands out every token a token bucket holds, with the span of time they are
    /// taken in without a refill: from the period's start to the next refill.
    ///
    /// The storage lends them to its lock-free path, which takes them one by one
    /// while the clock reads within that span, and gives back what is left with
    /// ``returnTokens(_:)`` before the machine is asked anything else. Taking a lent
    /// token within the span is exactly what ``acquire(at:)`` does there: nothing
    /// refills before the span ends. A sliding window lends nothing (`nil`).
    mutating func lendTokens() -> (tokens: Int, periodStart: Duration, refillDue: Duration)? {
        guard case .tokenBucket(var bucket) = self.state else { return nil }
        let lent = bucket.tokens
        bucket.tokens = 0
        self.state = .tokenBucket(bucket)
        return (lent, bucket.periodStart, bucket.periodStart + bucket.period)
    }

    /// Takes back the lent tokens that were not taken.
    mutating func returnTokens(_ count: Int) {
        guard count > 0, case .tokenBucket(var bucket) = self.state else { return }
        bucket.tokens = Swift.min(bucket.capacity, bucket.tokens + count)
        self.state = .tokenBucket(bucket)
    }

    /// The permits free at `now`, without taking one.
    mutating func available(at now: Duration) -> Int {
        switch self.state {
        case .tokenBucket(var bucket):
            bucket.refill(at: now)
            self.state = .tokenBucket(bucket)
            return bucket.tokens
        case .slidingWindow(var window):
            window.advance(to: now)
            self.state = .slidingWindow(window)
            return window.limit - window.total
        }
    }

    struct TokenBucket {
        let capacity: Int
        let tokensPerPeriod: Int
        let period: Duration
        var tokens: Int
        var periodStart: Duration

        mutating func refill(at now: Duration) {
            guard now >= self.periodStart else {
                self.periodStart = now  // the clock went back: start the period again, add nothing
                return
            }
            let elapsed = now - self.periodStart
            guard elapsed >= self.period else { return }
            let periods = elapsed / self.period  // a Double: no overflow on a huge jump
            if periods * Double(self.tokensPerPeriod) >= Double(self.capacity) {
                self.tokens = self.capacity
                self.periodStart = now
                return
            }
            let whole = Int(periods.rounded(.down))
            self.tokens = Swift.min(self.capacity, self.tokens + whole * self.tokensPerPeriod)
            self.periodStart += self.period * whole
        }

        mutating func acquire(at now: Duration) -> Decision {
            self.refill(at: now)
            if self.tokens > 0 {
                self.tokens -= 1
                return .granted
            }
            return .denied(retryAfter: Swift.max(.zero, self.periodStart + self.period - now))
        }
    }

    struct SlidingWindow {
        let limit: Int
        let segmentLength: Duration
        var counts: [Int]
        var current: Int
        var total: Int
        var segmentStart: Duration

        mutating func advance(to now: Duration) {
            guard now >= self.segmentStart else {
                self.segmentStart = now  // the clock went back: keep every count
                return
            }
            let elapsed = now - self.segmentStart
            guard elapsed >= self.segmentLength else { return }
            let steps = elapsed / self.segmentLength
            if steps >= Double(self.counts.count) {
                for index in self.counts.indices { self.counts[index] = 0 }
                self.total = 0
                self.current = 0
                self.segmentStart = now
                return
            }
            for _ in 0..<Int(steps.rounded(.down)) {
                self.current = (self.current + 1) % self.counts.count
                self.total -= self.counts[self.current]
                self.counts[self.current] = 0
                self.segmentStart += self.segmentLength
            }
        }

        mutating func acquire(at now: Duration) -> Decision {
            self.advance(to: now)
            if self.total < self.limit {
                self.counts[self.current] += 1
                self.total += 1
                return .granted
            }
            // The oldest segment holding a permit frees it when the window passes it.
            var age = 1
            while age < self.counts.count {
                let index = (self.current + age) % self.counts.count
                if self.counts[index] > 0 { break }
                age += 1
            }
            let frees = self.segmentStart + self.segmentLength * age
            return .denied(retryAfter: Swift.max(.zero, frees - now))
        }
    }
}
