/// The pure state of a ``RateLimiter``: permits counted against instants on its clock.
///
/// No locks, no awaits, no clock of its own: each method takes the current
/// elapsed time. Time never goes back for the machine: a reading earlier than the
/// latest it has seen counts as that latest one. Callers read the clock before they
/// take the lock (the clock may be user code), so a caller that waited for the lock
/// brings a reading older than one already applied; taken as it stands, it would move
/// the period's (or segment's) start back by the wait and let the limiter admit more
/// than its rate. A reading behind the latest cannot tell a stale reading from a clock
/// that really jumped back, so the machine alone would free nothing until such a clock
/// passed its latest reading again. ``rebase(from:to:)`` is the way out: given a
/// reading known to have been taken after the latest one was applied (the storage's
/// caller reads the clock again once it has seen the latest under the lock), a reading
/// still behind it proves a jump, and the machine moves its marks back by the jump,
/// counting it as no time elapsed. A clock that jumps far forwards refills at most to
/// the limit.
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
    /// The latest elapsed time the machine has been given.
    private(set) var latest: Duration

    init(_ algorithm: RateLimiterAlgorithm, at now: Duration) {
        self.latest = now
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

    /// `reading`, or the latest time seen when that is later; recorded as the latest.
    private mutating func advanceTime(to reading: Duration) -> Duration {
        self.latest = Swift.max(self.latest, reading)
        return self.latest
    }

    /// Moves every mark back by `observed - reading`, when `reading` is behind `observed`:
    /// the clock jumped back, and the jump counts as no time elapsed.
    ///
    /// - Precondition: `reading` was read after the machine's latest time was `observed`,
    ///   and no other re-base came in between (the storage checks its re-base count), so a
    ///   reading behind it is a clock that went back, never a stale one. Then the
    ///   machine's time stays no later than the time really elapsed: `reading` maps to
    ///   `observed` or earlier, and later readings run on from there. A period's or a
    ///   segment's progress, the tokens and the counts are kept: the limiter goes on from
    ///   where it was, as if the clock had stood still for the jump.
    /// - Returns: Whether the marks moved.
    mutating func rebase(from observed: Duration, to reading: Duration) -> Bool {
        guard reading < observed else { return false }
        let jump = observed - reading
        self.latest -= jump
        switch self.state {
        case .tokenBucket(var bucket):
            bucket.periodStart -= jump
            self.state = .tokenBucket(bucket)
        case .slidingWindow(var window):
            window.segmentStart -= jump
            self.state = .slidingWindow(window)
        }
        return true
    }

    /// Takes a permit if one is free at `now` (no earlier than the latest time seen).
    ///
    /// A denial's `retryAfter` is counted from `reading`: a caller whose clock reads less
    /// than the latest time seen (a clock set back) waits until its own clock reaches the
    /// time a permit frees.
    mutating func acquire(at reading: Duration) -> Decision {
        let now = self.advanceTime(to: reading)
        let decision: Decision
        switch self.state {
        case .tokenBucket(var bucket):
            decision = bucket.acquire(at: now)
            self.state = .tokenBucket(bucket)
        case .slidingWindow(var window):
            decision = window.acquire(at: now)
            self.state = .slidingWindow(window)
        }
        if case .denied(let retryAfter) = decision, reading < now {
            return .denied(retryAfter: retryAfter + (now - reading))
        }
        return decision
    }

    /// Permits lent to a lock-free path, and the span of elapsed time they may be taken in.
    struct Loan: Equatable {
        /// How many permits were lent.
        var permits: Int
        /// The earliest elapsed time at which a lent permit may be taken.
        var spanStart: Duration
        /// The elapsed time from which no lent permit may be taken.
        var spanEnd: Duration
    }

    /// Lends every free permit, with the span in which taking one is exactly what
    /// ``acquire(at:)`` would do there.
    ///
    /// The storage lends them to its lock-free path, which takes them one by one while
    /// its clock reads within the span, and settles the loan with
    /// ``settle(_:unused:at:takesMayBeLate:)`` before the machine is asked anything else.
    ///
    /// - A token bucket lends its tokens. Taken without a refill, a token is what
    ///   ``acquire(at:)`` grants as long as no refill since the period's start would have
    ///   lost tokens to the capacity: a refill deferred then adds exactly what the refills
    ///   skipped would have added. The span runs from the period's start to the first refill
    ///   that would have filled the bucket past its capacity had no lent token been taken
    ///   (a token taken only pushes that later): one period for a full bucket, more for a
    ///   bucket that holds fewer tokens than its capacity less one period's refill.
    /// - A sliding window lends the permits its window has room for, counted at once in
    ///   the current segment (the lock-free path cannot touch the counts); the span is the
    ///   current segment, in which a permit taken counts in that segment.
    mutating func lend() -> Loan {
        switch self.state {
        case .tokenBucket(var bucket):
            let permits = bucket.tokens
            bucket.tokens = 0
            self.state = .tokenBucket(bucket)
            let periodsUntilFull = (bucket.capacity - permits) / bucket.tokensPerPeriod + 1
            return Loan(
                permits: permits, spanStart: bucket.periodStart,
                spanEnd: bucket.periodStart + bucket.period * periodsUntilFull)
        case .slidingWindow(var window):
            let permits = window.limit - window.total
            window.counts[window.current] += permits
            window.total += permits
            self.state = .slidingWindow(window)
            return Loan(
                permits: permits, spanStart: window.segmentStart, spanEnd: window.segmentStart + window.segmentLength)
        }
    }

    /// Takes back the permits of `loan` left `unused` and counts the others as taken.
    ///
    /// Taken within the loan's span, they count as ``lend()`` says. When
    /// `takesMayBeLate` (the lock-free path's clock may have read within the span after
    /// the span had ended), they are counted as taken at `now` or at the span's end,
    /// whichever is later: `now` was read before the lock and may be older than the
    /// takes, which then came no earlier than the span's end. A token bucket refills to
    /// that time with them still in it, then gives them up; a sliding window counts them
    /// in the segment current at that time. Either can only refuse more than an exact
    /// count would, never admit more.
    mutating func settle(_ loan: Loan, unused: Int, at reading: Duration, takesMayBeLate: Bool) {
        let taken = loan.permits - unused
        let late = takesMayBeLate && taken > 0
        let now = self.advanceTime(to: late ? Swift.max(reading, loan.spanEnd) : reading)
        switch self.state {
        case .tokenBucket(var bucket):
            if late {
                bucket.tokens = loan.permits
                bucket.refill(at: now)
                bucket.tokens = Swift.max(0, bucket.tokens - taken)
            } else {
                bucket.tokens = Swift.min(bucket.capacity, bucket.tokens + unused)
            }
            self.state = .tokenBucket(bucket)
        case .slidingWindow(var window):
            window.counts[window.current] -= unused
            window.total -= unused
            if late {
                window.counts[window.current] -= taken
                window.total -= taken
                window.advance(to: now)
                window.counts[window.current] += taken
                window.total += taken
            }
            self.state = .slidingWindow(window)
        }
    }

    /// The permits free at `now` (no earlier than the latest time seen), without taking one.
    mutating func available(at reading: Duration) -> Int {
        let now = self.advanceTime(to: reading)
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

    /// Whether the limiter would be back at its full allowance at `reading` (or at the latest
    /// time seen, when that is later) if nothing more were taken: a token bucket full, a
    /// sliding window empty. Asked of a copy, after any loan was settled on it.
    ///
    /// A limiter in that state admits from then on exactly what a new one made then would
    /// (a new bucket's first refill comes no earlier), so forgetting it admits nothing more.
    mutating func isAtFullAllowance(at reading: Duration) -> Bool {
        let available = self.available(at: reading)
        switch self.state {
        case .tokenBucket(let bucket): return available >= bucket.capacity
        case .slidingWindow(let window): return available >= window.limit
        }
    }

    struct TokenBucket {
        let capacity: Int
        let tokensPerPeriod: Int
        let period: Duration
        var tokens: Int
        var periodStart: Duration

        /// Adds `tokensPerPeriod` for each whole period since the period's start, up to the
        /// capacity, and moves the start on by those periods.
        ///
        /// Whole periods only, counted in exact integer arithmetic, so that refilling at one
        /// time and then at a later one adds what refilling once at the later time adds,
        /// unless the capacity cut the first refill short (the lent tokens rely on it).
        mutating func refill(at now: Duration) {
            // Never earlier: the machine's time does not go back, and the start follows it.
            guard now >= self.periodStart else { return }
            let elapsed = (now - self.periodStart).attoseconds
            let length = self.period.attoseconds
            guard elapsed >= length else { return }
            // At most about 10^38 / 10^12 periods, times at most 10^9 tokens: within Int128.
            let periods = elapsed / length
            let added = periods * Int128(self.tokensPerPeriod)
            self.tokens = Int(Swift.min(Int128(self.capacity), Int128(self.tokens) + added))
            self.periodStart += Duration(attoseconds: periods * length)
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
            // Never earlier: the machine's time does not go back, and the start follows it.
            guard now >= self.segmentStart else { return }
            let elapsed = now - self.segmentStart
            guard elapsed >= self.segmentLength else { return }
            // Whole segments in exact integer arithmetic: a quotient in `Double` rounds up
            // within a nanosecond of a segment's end on long windows, and would forget a
            // segment, and its permits, before it has left the window.
            let steps = elapsed.attoseconds / self.segmentLength.attoseconds
            if steps >= Int128(self.counts.count) {
                for index in self.counts.indices { self.counts[index] = 0 }
                self.total = 0
                self.current = 0
                self.segmentStart = now
                return
            }
            for _ in 0..<Int(steps) {
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
