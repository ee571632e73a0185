import Synchronization

/// A manual clock for the breaker soak: time moves only when the soak advances it,
/// and a sleep returns at once after moving the clock to its deadline.
///
/// The soak drives one caller at a time, so "sleeping" by jumping ahead is exact:
/// a retry policy waiting out a breaker's open time simply finds the time passed.
/// That lets ten million calls cover hours of virtual time, so time windows rotate
/// their buckets and open breakers turn half-open, without a real wait.
final class SoakClock: Clock, Sendable {
    /// An instant: the virtual time elapsed since the soak began.
    struct Instant: InstantProtocol, Sendable, Hashable, Comparable {
        /// Nanoseconds since the start.
        var nanoseconds: Int64

        /// The instant `duration` later, saturating at the largest representable instant.
        func advanced(by duration: Duration) -> Instant {
            let (sum, overflow) = self.nanoseconds.addingReportingOverflow(SoakClock.nanoseconds(duration))
            return Instant(nanoseconds: overflow ? .max : sum)
        }

        /// The duration from this instant to `other`.
        func duration(to other: Instant) -> Duration {
            .nanoseconds(other.nanoseconds) - .nanoseconds(self.nanoseconds)
        }

        /// Whether `lhs` comes first.
        static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.nanoseconds < rhs.nanoseconds
        }
    }

    private let elapsed = Atomic<Int64>(0)

    /// A clock at zero.
    init() {}

    /// The current instant.
    var now: Instant {
        Instant(nanoseconds: self.elapsed.load(ordering: .relaxed))
    }

    /// One nanosecond.
    var minimumResolution: Duration { .nanoseconds(1) }

    /// Moves the clock forward by `nanoseconds`.
    func advance(nanoseconds: Int64) {
        self.elapsed.wrappingAdd(nanoseconds, ordering: .relaxed)
    }

    /// Moves the clock to `deadline` if it is later, and returns at once.
    ///
    /// - Throws: `CancellationError` if the task is cancelled.
    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        var current = self.elapsed.load(ordering: .relaxed)
        while current < deadline.nanoseconds {
            let (exchanged, original) = self.elapsed.compareExchange(
                expected: current, desired: deadline.nanoseconds, ordering: .relaxed)
            if exchanged { break }
            current = original
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
