/// A type-erased clock that measures time as a `Duration` since its creation.
///
/// The public API takes `some Clock<Duration>`; the types that remember
/// instants store this instead, so they need no generic parameter. An instant
/// becomes the duration elapsed since the clock's origin, which makes deadline
/// arithmetic plain `Duration` arithmetic.
package struct ElapsedClock: Sendable {
    /// The time elapsed since the origin, on the wrapped clock.
    package let now: @Sendable () -> Duration
    /// Sleeps until the given elapsed time; throws `CancellationError` when cancelled.
    package let sleepUntil: @Sendable (Duration) async throws -> Void

    /// Wraps `clock`, taking its current instant as the origin.
    package init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        self.now = { origin.duration(to: clock.now) }
        self.sleepUntil = { elapsed in
            try await clock.sleep(until: origin.advanced(by: elapsed), tolerance: nil)
        }
    }
}
