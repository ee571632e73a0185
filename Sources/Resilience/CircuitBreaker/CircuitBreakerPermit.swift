/// The right to run one call through a breaker, and the key its result is recorded under.
///
/// A permit remembers the breaker's generation when it was granted, so a
/// result that arrives after the breaker has changed state is ignored, and,
/// for a half-open probe, the ticket of the probe slot it holds.
@usableFromInline
package struct CircuitBreakerPermit: Sendable, Hashable {
    /// The breaker's generation when the permit was granted.
    @usableFromInline package let generation: UInt64
    /// The probe ticket, or 0 for a call admitted while closed.
    @usableFromInline package let ticket: UInt64
    /// When the call started, and the breaker's re-base count when that was read; kept only
    /// when a slow-call rule needs it. One optional, so a permit without a start is written
    /// as it was before the count was kept.
    @usableFromInline package let started: Start?

    /// A start reading on the breaker's clock, with the re-base count loaded before it: the
    /// offset that places it on the breaker's own time line (see
    /// ``CircuitBreakerStateMachine/offset``).
    @usableFromInline package struct Start: Sendable, Hashable {
        @usableFromInline package let reading: Duration
        @usableFromInline package let rebases: UInt64

        @inlinable package init(reading: Duration, rebases: UInt64) {
            self.reading = reading
            self.rebases = rebases
        }
    }

    @inlinable package init(generation: UInt64, ticket: UInt64, start: Duration?, rebases: UInt64 = 0) {
        self.generation = generation
        self.ticket = ticket
        self.started = start.map { Start(reading: $0, rebases: rebases) }
    }

    /// When the call started, on the breaker's clock; kept only when a slow-call rule needs it.
    package var start: Duration? {
        self.started?.reading
    }

    /// The breaker's re-base count when ``start`` was read.
    package var rebases: UInt64 {
        self.started?.rebases ?? 0
    }

    /// Whether the permit holds a half-open probe slot.
    @inlinable package var isProbe: Bool {
        self.ticket != 0
    }
}
