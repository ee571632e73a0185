import Foundation

/// The network of the simulations: each hop takes `|N(mean, standardDeviation)|`.
///
/// This is the delay model of Brooker's backoff simulator (a normal distribution,
/// folded at zero), drawn with the Box–Muller transform from a seeded generator.
struct NetworkDelay: Sendable {
    /// The mean delay of one hop.
    var mean: Duration
    /// The standard deviation of one hop.
    var standardDeviation: Duration

    /// The hop of Brooker's model ("Exponential Backoff And Jitter", AWS Architecture Blog, 2015): |N(10 ms, 2 ms)|.
    static let anchors = NetworkDelay(mean: .milliseconds(10), standardDeviation: .milliseconds(2))

    /// One hop's delay, in seconds.
    func seconds(using generator: inout some RandomNumberGenerator) -> Double {
        let mean = self.mean.nanoseconds / 1e9
        let deviation = self.standardDeviation.nanoseconds / 1e9
        return abs(mean + deviation * Self.standardNormal(using: &generator))
    }

    /// One hop's delay.
    func duration(using generator: inout some RandomNumberGenerator) -> Duration {
        .nanoseconds(Int64((self.seconds(using: &generator) * 1e9).rounded()))
    }

    private static func standardNormal(using generator: inout some RandomNumberGenerator) -> Double {
        // Box–Muller; 1 - u keeps the logarithm's argument in (0, 1].
        let u1 = 1 - Double.random(in: 0..<1, using: &generator)
        let u2 = Double.random(in: 0..<1, using: &generator)
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}
