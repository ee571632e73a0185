import Resilience
import ResilienceTesting

/// One simulated client: it sends a request, waits for the outcome, thinks, and
/// repeats until the simulation ends.
///
/// Each attempt takes two network hops (request and response) drawn from the
/// client's own seeded generator; the server decides at the moment the request
/// arrives.
struct ClientLoop: Sendable {
    /// Decides, at a request's arrival time, how the server answers.
    typealias Server = @Sendable (SimulationClock.Instant) -> SimulatedServerError?

    /// The simulation's clock.
    var clock: SimulationClock
    /// How the client sends requests.
    var caller: any SimulatedCaller
    /// The server's behaviour.
    var server: Server
    /// The per-hop delay.
    var network: NetworkDelay
    /// The shortest and longest pause between a response and the next request.
    var thinkTime: ClosedRange<Double>
    /// The client's random stream (hops, pauses).
    var generator: SeededRandomNumberGenerator

    /// What one request did.
    struct Request: Sendable {
        /// When the client sent it.
        var start: SimulationClock.Instant
        /// When its outcome was known.
        var end: SimulationClock.Instant
        /// Attempts that reached the server.
        var attempts: Int
        /// Whether it succeeded.
        var succeeded: Bool
        /// The time its successful response arrived, if it succeeded.
        var successArrival: SimulationClock.Instant?
        /// The retry-after hint the caller surfaced.
        var retryAfter: Duration?
    }

    /// Runs the client until the simulation ends; returns every request it completed.
    func run() async -> [Request] {
        var generator = self.generator
        var requests: [Request] = []
        let clock = self.clock
        do {
            try await clock.sleep(for: .seconds(Double.random(in: self.thinkTime, using: &generator)))
        } catch {
            return requests
        }
        while true {
            let start = clock.now
            var attempts = 0
            var successArrival: SimulationClock.Instant?
            let outcome = await self.caller.send {
                attempts += 1
                let arrival = clock.now.advanced(by: self.network.duration(using: &generator))
                let failure = self.server(arrival)
                try await clock.sleep(until: arrival.advanced(by: self.network.duration(using: &generator)))
                if let failure { throw failure }
                successArrival = clock.now
            }
            if clock.isStopped { break }
            requests.append(
                Request(
                    start: start, end: clock.now, attempts: attempts, succeeded: outcome.succeeded,
                    successArrival: successArrival, retryAfter: outcome.retryAfter))
            do {
                try await clock.sleep(for: .seconds(Double.random(in: self.thinkTime, using: &generator)))
            } catch {
                break
            }
        }
        return requests
    }
}
