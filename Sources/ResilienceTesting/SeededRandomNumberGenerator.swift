/// A fast, repeatable random number generator (SplitMix64) for tests and simulations.
///
/// The same seed always yields the same sequence, on every platform, so jittered
/// schedules can be asserted exactly.
///
/// ```swift
/// let generator = SeededRandomNumberGenerator(seed: 42)
/// let delays = RetryDelays(backoff: .default, jitter: .full, generator: generator)
/// ```
public struct SeededRandomNumberGenerator: RandomNumberGenerator, Sendable, Hashable {
    private var state: UInt64

    /// Creates a generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        self.state = seed
    }

    /// The next 64 bits of the sequence.
    public mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
