import ResilienceTesting

/// Seeds for independent random streams, all derived from the run's one seed.
///
/// Every simulated client and trial gets its own stream, so a run's figures
/// depend only on the seed, never on scheduling.
enum SeedDerivation {
    /// A seed for the stream identified by `path` under `seed`.
    static func derive(_ seed: UInt64, _ path: Int...) -> UInt64 {
        Self.derive(seed, path)
    }

    /// A generator for the stream identified by `path` under `seed`.
    static func generator(_ seed: UInt64, _ path: Int...) -> SeededRandomNumberGenerator {
        SeededRandomNumberGenerator(seed: Self.derive(seed, path))
    }

    private static func derive(_ seed: UInt64, _ path: [Int]) -> UInt64 {
        var state = seed
        for component in path {
            var generator = SeededRandomNumberGenerator(seed: state ^ UInt64(truncatingIfNeeded: component))
            state = generator.next()
        }
        return state
    }
}
