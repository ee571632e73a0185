extension CircuitBreakerOpenDuration {
    /// The same schedule with each open time spread at random by up to `spread` of
    /// itself either way, so that a fleet of breakers that tripped together (every
    /// client of one failed server) does not probe it again at the same instant.
    ///
    /// Each trip's open time becomes `t × (1 + r)` with `r` uniform in
    /// `-spread...spread`, and at most about 146 years (the package's longest
    /// duration), however near to it `t` is. The randomness comes from
    /// `generator`: it seeds the breaker's own stream once, here, so no user code
    /// runs while the breaker holds its lock; a seeded generator gives a
    /// repeatable schedule.
    ///
    /// ```swift
    /// let breaker = try CircuitBreaker(
    ///     name: "api", openDuration: .fixed(.seconds(30)).jittered(by: 0.2))  // 24...36 s
    /// ```
    ///
    /// - Parameters:
    ///   - spread: The largest change, as a fraction of the open time; in `0...1`.
    ///   - generator: Seeds the breaker's stream; inject a seeded one in tests.
    public func jittered(
        by spread: Double,
        generator: some RandomNumberGenerator = SystemRandomNumberGenerator()
    ) -> CircuitBreakerOpenDuration {
        var generator = generator
        var copy = self
        copy.jitter = OpenDurationJitter(spread: spread, seed: generator.next())
        return copy
    }

    /// The open time after the trip-th consecutive trip, jittered when ``jittered(by:generator:)`` asked for it.
    func drawDuration(forTrip trip: Int) -> Duration {
        let duration = self.duration(forTrip: trip)
        guard let jitter = self.jitter else { return duration }
        return jitter.apply(to: duration)
    }
}

/// The random stream behind a jittered open duration: SplitMix64 behind a lock.
final class OpenDurationJitter: Sendable, Hashable {
    /// The largest change, as a fraction of the open time.
    let spread: Double
    private let state: Lock<UInt64>

    init(spread: Double, seed: UInt64) {
        self.spread = spread
        self.state = Lock(seed)
    }

    /// `duration × (1 + r)`, `r` uniform in `-spread...spread`, clamped to the package's range.
    func apply(to duration: Duration) -> Duration {
        let bits = self.state.withLock { state -> UInt64 in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let unit = Double(bits >> 11) * 0x1.0p-53  // [0, 1)
        let factor = 1 + self.spread * (2 * unit - 1)
        return Duration.clampedSeconds(duration.secondsValue * factor)
    }

    /// Equal spreads: a setting, as its encoded form says it. The stream is not compared, so
    /// that the same settings, decoded twice or made with different generators, are equal.
    static func == (lhs: OpenDurationJitter, rhs: OpenDurationJitter) -> Bool { lhs.spread == rhs.spread }

    func hash(into hasher: inout Hasher) { hasher.combine(self.spread) }
}
