import Resilience
import ResilienceTesting

/// A server with a quota of 50 requests per 10 s window that publishes
/// `RateLimit: "default";r=<left>;t=<seconds to reset>` on every response, and a
/// client that wants 10 requests a second, twice the quota, for 120 s.
///
/// The client sends one request at a time. When it honours the field it records
/// each response in a ``RateLimitGate`` and waits, before each request, as long as
/// the gate says. The figure is the number of 429 responses after the first
/// response was read.
struct RateLimitHeaderSimulation: Sendable {
    /// The quota per window.
    var quota = 50
    /// The server's window.
    var window = Duration.seconds(10)
    /// Requests the client wants per second.
    var requestsPerSecond = 10
    /// How long the client runs.
    var length = Duration.seconds(120)
    /// The seed every random stream derives from.
    var seed: UInt64

    /// Runs the variant that honours the field or ignores it.
    func run(honoured: Bool) throws -> RateLimitHeaderResult {
        let clock = TestClock()
        let gate = try RateLimitGate(clock: clock)
        var network = SeedDerivation.generator(self.seed, 22, 0)
        let spacing = Duration.seconds(1) / self.requestsPerSecond
        var now = Duration.zero
        var windowIndex = -1
        var used = 0
        var tooManyRequests = 0
        var responses = 0
        while now < self.length {
            if honoured {
                let wait = gate.reserve()
                if wait > .zero {
                    clock.advance(by: wait)
                    now += wait
                }
            }
            // The request arrives after a few milliseconds on the network.
            let arrival = now + .microseconds(Int64.random(in: 1_000...5_000, using: &network))
            let index = Int(arrival / self.window)
            if index != windowIndex {
                windowIndex = index
                used = 0
            }
            let reset = self.window * (index + 1) - arrival
            let accepted = used < self.quota
            if accepted { used += 1 }
            let seconds = Int64((reset / .seconds(1)).rounded(.up))
            let field = "\"default\";r=\(self.quota - used);t=\(seconds)"
            if !accepted, responses > 0 { tooManyRequests += 1 }
            responses += 1
            let responseTime = arrival + .microseconds(Int64.random(in: 1_000...5_000, using: &network))
            clock.advance(by: responseTime - now)
            now = responseTime
            if honoured { gate.record(headers: ["RateLimit": field]) }
            let next = now + spacing
            clock.advance(by: next - now)
            now = next
        }
        return RateLimitHeaderResult(honoured: honoured, tooManyRequests: tooManyRequests, requests: responses)
    }
}

/// The figures of one RateLimit-header variant.
struct RateLimitHeaderResult: Sendable {
    /// Whether the client honoured the field.
    var honoured: Bool
    /// 429 responses after the first response.
    var tooManyRequests: Int
    /// Requests sent.
    var requests: Int
}
