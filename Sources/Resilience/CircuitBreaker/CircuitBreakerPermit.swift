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
    /// When the call started, on the breaker's clock; kept only when a slow-call rule needs it.
    @usableFromInline package let start: Duration?
    /// The breaker's re-base count when ``start`` was read: the offset that places `start` on
    /// the breaker's own time line (see ``CircuitBreakerStateMachine/offset``).
    @usableFromInline package let rebases: UInt64

    @inlinable package init(generation: UInt64, ticket: UInt64, start: Duration?, rebases: UInt64 = 0) {
        self.generation = generation
        self.ticket = ticket
        self.start = start
        self.rebases = rebases
    }

    /// Whether the permit holds a half-open probe slot.
    @inlinable package var isProbe: Bool {
        self.ticket != 0
    }
}
