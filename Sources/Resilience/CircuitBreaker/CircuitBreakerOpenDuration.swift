/// How long a ``CircuitBreaker`` stays open after it trips: a fixed time, or a
/// time that grows with each consecutive trip up to a cap.
///
/// ```swift
/// let fixed = CircuitBreakerOpenDuration.fixed(.seconds(30))
/// let growing = CircuitBreakerOpenDuration.growing(
///     initial: .seconds(5), multiplier: 2, maximum: .seconds(300))
/// growing.duration(forTrip: 1)  // 5 s
/// growing.duration(forTrip: 3)  // 20 s
/// ```
///
/// Trips are consecutive while the breaker never closes in between: a failed
/// half-open probe re-opens it as the next trip, and closing (or a manual
/// reset) starts the count again.
///
/// Two values are equal when their schedules and jitter spreads are (see
/// ``jittered(by:generator:)``): the random stream behind a jittered value is not
/// compared, so the same settings decoded twice are equal.
public struct CircuitBreakerOpenDuration: Sendable, Hashable, CustomStringConvertible {
    /// The schedule, reusing the retry engine's overflow-free arithmetic.
    let schedule: Backoff
    /// The random spread on each open time, if any (see ``jittered(by:generator:)``).
    var jitter: OpenDurationJitter?

    /// The same open time after every trip.
    ///
    /// - Parameter duration: The open time; greater than zero, and at most about 146 years
    ///   (the package's longest duration). A breaker's configuration refuses any other.
    public static func fixed(_ duration: Duration) -> CircuitBreakerOpenDuration {
        CircuitBreakerOpenDuration(schedule: .constant(duration))
    }

    /// An open time of `initial * multiplier^(trip - 1)` for the trip-th consecutive trip, capped at `maximum`.
    ///
    /// A breaker's configuration refuses values outside the ranges below.
    ///
    /// - Parameters:
    ///   - initial: The open time after the first trip; greater than zero, and at most
    ///     about 146 years (the package's longest duration).
    ///   - multiplier: The growth per consecutive trip; finite and at least 1. Defaults to 2.
    ///   - maximum: The cap; at least `initial`, and at most about 146 years.
    public static func growing(
        initial: Duration,
        multiplier: Double = 2,
        maximum: Duration
    ) -> CircuitBreakerOpenDuration {
        CircuitBreakerOpenDuration(schedule: .exponential(initial: initial, multiplier: multiplier, maximum: maximum))
    }

    /// The package default: 30 seconds, fixed.
    public static let `default` = CircuitBreakerOpenDuration.fixed(.seconds(30))

    /// The open time after the trip-th consecutive trip (1 for the first).
    ///
    /// Trips below 1, down to `Int.min`, are treated as 1. Never overflows: a huge trip
    /// number yields the cap, and every result is at most about 146 years (the
    /// package's longest duration). A breaker's configuration refuses longer durations;
    /// a value not yet validated may be previewed here, its durations counted as at most that.
    public func duration(forTrip trip: Int) -> Duration {
        // `Swift.max` first: `Int.min - 1` would trap.
        self.clampedSchedule.delay(forAttempt: Swift.max(trip, 1) - 1).clampedToResilienceRange
    }

    /// The schedule with its durations cut to the package's maximum before any arithmetic,
    /// since the schedule's `Double` arithmetic cannot take a duration beyond `Int64.max` seconds.
    private var clampedSchedule: Backoff {
        switch self.schedule.kind {
        case .exponential(let initial, let multiplier, let maximum):
            .exponential(
                initial: Swift.min(initial, .resilienceMaximum), multiplier: multiplier,
                maximum: Swift.min(maximum, .resilienceMaximum))
        case .constant, .linear:
            self.schedule
        }
    }

    /// `fixed(30.0 seconds)` or `growing(initial: 5.0 seconds, multiplier: 2.0, maximum: 300.0 seconds)`.
    public var description: String {
        guard let jitter = self.jitter else { return self.scheduleDescription }
        return "\(self.scheduleDescription).jittered(by: \(jitter.spread))"
    }

    private var scheduleDescription: String {
        switch self.schedule.kind {
        case .constant(let duration):
            "fixed(\(duration))"
        case .exponential(let initial, let multiplier, let maximum):
            "growing(initial: \(initial), multiplier: \(multiplier), maximum: \(maximum))"
        case .linear:
            "\(self.schedule)"
        }
    }

    /// Checks the schedule, naming its settings `<prefix>.duration`, `<prefix>.initial` and so on.
    func validate(settingPrefix prefix: String = "openDuration") throws(ConfigurationError) {
        if let jitter = self.jitter {
            try ConfigurationError.require(
                jitter.spread >= 0 && jitter.spread <= 1, ConfigurationError.settingName(prefix, "jitter"),
                jitter.spread,
                "in 0...1")
        }
        func name(_ key: String) -> String { ConfigurationError.settingName(prefix, key) }
        switch self.schedule.kind {
        case .constant(let duration):
            try ConfigurationError.requirePositive(duration, name("duration"))
            try ConfigurationError.requireAtMostResilienceMaximum(duration, name("duration"))
        case .exponential(let initial, _, let maximum):
            // In the order of the parameters, so that the first invalid one is the one named.
            try ConfigurationError.requirePositive(initial, name("initial"))
            try ConfigurationError.requireAtMostResilienceMaximum(initial, name("initial"))
            try self.schedule.validate(settingPrefix: prefix)
            try ConfigurationError.requireAtMostResilienceMaximum(maximum, name("maximum"))
        case .linear:
            try self.schedule.validate(settingPrefix: prefix)
        }
    }
}
