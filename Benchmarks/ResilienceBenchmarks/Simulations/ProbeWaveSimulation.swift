import Resilience
import ResilienceTesting

/// 100 clients, each with its own ``CircuitBreaker`` (the defaults: open after 5
/// consecutive failures, for 30 s), trip within the same 100 ms when their server
/// fails. Each client then tries a call every 10 ms; the first call its breaker
/// lets through is its probe.
///
/// Without jitter every breaker half-opens 30 s after it tripped, so the probes
/// arrive in one wave. With ``CircuitBreakerOpenDuration/jittered(by:generator:)``
/// (±20%, each breaker seeded from the run's seed) they spread over 12 s. The
/// figure is the largest number of probes in any 100 ms slot, as a share of the clients.
struct ProbeWaveSimulation: Sendable {
    /// Clients, one breaker each.
    var clients = 100
    /// The breakers' open time.
    var openDuration = Duration.seconds(30)
    /// The jitter's spread.
    var spread = 0.2
    /// The seed every random stream derives from.
    var seed: UInt64

    /// Runs the variant with or without jitter.
    func run(jitter: Bool) async throws -> ProbeWaveResult {
        let clock = TestClock()
        var openDuration = CircuitBreakerOpenDuration.fixed(self.openDuration)
        var breakers: [CircuitBreaker] = []
        for client in 0..<self.clients {
            if jitter {
                openDuration = CircuitBreakerOpenDuration.fixed(self.openDuration).jittered(
                    by: self.spread, generator: SeedDerivation.generator(self.seed, 23, client))
            }
            breakers.append(try CircuitBreaker(name: "client-\(client)", openDuration: openDuration, clock: clock))
        }
        // The clients trip within 100 ms, in a seeded order.
        var generator = SeedDerivation.generator(self.seed, 24, 0)
        let tripTimes = (0..<self.clients).map { _ in
            Duration.milliseconds(Int64.random(in: 0..<100, using: &generator))
        }
        var now = Duration.zero
        for (client, tripTime) in tripTimes.enumerated().sorted(by: { $0.element < $1.element }) {
            clock.advance(by: tripTime - now)
            now = tripTime
            for _ in 0..<5 {
                _ = try? await breakers[client].execute { throw SimulatedServerError(httpStatusCode: 503) }
            }
        }
        // Every client tries a call every 10 ms until its breaker lets one through.
        var probeTimes: [Duration?] = Array(repeating: nil, count: self.clients)
        let step = Duration.milliseconds(10)
        let end = self.openDuration * (1 + self.spread) + .seconds(1)
        while now < end, probeTimes.contains(where: { $0 == nil }) {
            clock.advance(by: step)
            now += step
            for client in 0..<self.clients where probeTimes[client] == nil {
                if (try? await breakers[client].execute {}) != nil { probeTimes[client] = now }
            }
        }
        var slots: [Int: Int] = [:]
        for time in probeTimes.compactMap({ $0 }) {
            slots[Int(time / .milliseconds(100)), default: 0] += 1
        }
        let largest = slots.values.max() ?? 0
        return ProbeWaveResult(
            jitter: jitter, maxProbesPer100msShare: Double(largest) / Double(self.clients),
            probes: probeTimes.count { $0 != nil }, clients: self.clients)
    }
}

/// The figures of one probe-wave variant.
struct ProbeWaveResult: Sendable {
    /// Whether the open durations were jittered.
    var jitter: Bool
    /// The largest number of probes in any 100 ms slot, over the number of clients.
    var maxProbesPer100msShare: Double
    /// Clients whose probe went through within the run.
    var probes: Int
    /// Clients.
    var clients: Int
}
