/// The randomness behind an ``AdaptiveThrottle``'s rejections, drawn with no lock held
/// across the injected generator.
///
/// The system's generator is drawn from directly: it is the standard library's and needs
/// no guarding. Any other generator is user code: a draw takes it out of its slot under
/// the lock, calls its `next()` with the lock released, and puts it back. So a generator
/// that blocks, or that calls back into the throttle, never stalls another caller or
/// deadlocks on the throttle's lock.
///
/// A draw that finds the slot empty, because another call is drawing from the generator
/// at that moment or the generator's own `next()` asked the throttle again, draws from the
/// system's generator instead. One caller at a time (a seeded test, the benchmark's
/// simulation) therefore draws exactly the sequence the injected generator gives, as when
/// the generator was drawn under the lock; callers that overlap could never count on an
/// order of draws anyway.
final class ThrottleDraw: Sendable {
    /// The injected generator while no draw holds it; `nil` for the system's generator.
    private let slot: Lock<AnyRandomNumberGenerator?>?

    init(_ generator: some RandomNumberGenerator & Sendable) {
        self.slot = generator is SystemRandomNumberGenerator ? nil : Lock(AnyRandomNumberGenerator(generator))
    }

    /// A number uniform in `0..<1`.
    func unit() -> Double {
        if let slot = self.slot, var generator = slot.withLock({ slot in slot.take() }) {
            // The injected generator runs here, with the lock released.
            let draw = Double.random(in: 0..<1, using: &generator)
            slot.withLock { $0 = generator }
            return draw
        }
        var system = SystemRandomNumberGenerator()
        return Double.random(in: 0..<1, using: &system)
    }
}
