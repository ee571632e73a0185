/// A type-erased clock that measures time as a `Duration` since its creation.
///
/// The public API takes `some Clock<Duration>`; the types that remember
/// instants store this instead, so they need no generic parameter. An instant
/// becomes the duration elapsed since the clock's origin, which makes deadline
/// arithmetic plain `Duration` arithmetic.
///
/// `ContinuousClock`, the default everywhere, is read directly rather than
/// through the stored closure: the closure call and the generic clock's witness
/// calls cost about a third of a clock read, and a time-window breaker reads
/// the clock on every call.
package struct ElapsedClock: Sendable {
    /// The origin, when the wrapped clock is exactly `ContinuousClock`.
    private let continuousOrigin: ContinuousClock.Instant?
    /// The time elapsed since the origin, on any other wrapped clock.
    private let elapsed: @Sendable () -> Duration
    /// Sleeps until the given elapsed time; throws `CancellationError` when cancelled.
    package let sleepUntil: @Sendable (Duration) async throws -> Void

    /// Wraps `clock`, taking its current instant as the origin.
    package init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        self.continuousOrigin = C.self == ContinuousClock.self ? origin as? ContinuousClock.Instant : nil
        self.elapsed = { origin.duration(to: clock.now) }
        self.sleepUntil = { elapsed in
            try await clock.sleep(until: origin.advanced(by: elapsed), tolerance: nil)
        }
    }

    /// The time elapsed since the origin, on the wrapped clock.
    @inline(__always)
    package func now() -> Duration {
        if let origin = self.continuousOrigin {
            return origin.duration(to: ContinuousClock.now)
        }
        return self.elapsed()
    }
}
