/// The delays a retry schedule would use, as a sequence, without running anything.
///
/// Use it to preview a configuration or to assert a schedule in a test:
///
/// ```swift
/// let delays = RetryDelays(backoff: .exponential(initial: .seconds(1), maximum: .seconds(8)), jitter: .none)
/// Array(delays.prefix(5))  // [1 s, 2 s, 4 s, 8 s, 8 s]
/// ```
///
/// ``RetryPolicy`` draws its delays from the same code, so a preview with the same
/// seeded generator reproduces what a policy would wait.
public struct RetryDelays<Generator: RandomNumberGenerator>: Sequence, IteratorProtocol {
    /// The un-jittered schedule.
    public let backoff: Backoff
    /// The jitter applied to each delay.
    public let jitter: Jitter
    private var generator: Generator
    private var attempt = 0
    private var previous: Duration?

    /// Creates the sequence of delays for `backoff` and `jitter`, drawing randomness from `generator`.
    public init(backoff: Backoff, jitter: Jitter, generator: Generator) {
        self.backoff = backoff
        self.jitter = jitter
        self.generator = generator
    }

    /// The delay before the next retry. The sequence never ends.
    public mutating func next() -> Duration? {
        let delay = self.jitter.delay(
            for: self.backoff, attempt: self.attempt, previous: self.previous, using: &self.generator)
        self.previous = delay
        self.attempt = self.attempt == .max ? .max : self.attempt + 1
        return delay
    }
}

extension RetryDelays where Generator == SystemRandomNumberGenerator {
    /// Creates the sequence of delays for `backoff` and `jitter` with the system's random generator.
    public init(backoff: Backoff, jitter: Jitter) {
        self.init(backoff: backoff, jitter: jitter, generator: SystemRandomNumberGenerator())
    }
}
