import Resilience
import ResilienceTesting

/// A full outage seen by one client process that offers 10 requests a second:
/// the server answers for 60 s, is dead for 300 s (two and a half windows),
/// then answers again for 600 s.
///
/// With throttling, every request goes through one ``AdaptiveThrottle`` with the
/// defaults (K = 2, a 120 s window, no floor). Figures: requests reaching the
/// dead server per request offered, from one window after the outage began to its
/// end; and the time from the recovery until the throttle admits every request
/// again (its rejection probability back to 0), in windows. Without throttling
/// every offered request reaches the server and nothing needs to recover.
struct AdaptiveThrottlingSimulation: Sendable {
    /// Requests offered per second, evenly spaced.
    var requestsPerSecond = 10
    /// Healthy time before the outage.
    var healthy = Duration.seconds(60)
    /// The outage.
    var outage = Duration.seconds(300)
    /// Time after the recovery.
    var after = Duration.seconds(600)
    /// The throttle's window.
    var window = Duration.seconds(120)
    /// The seed every random stream derives from.
    var seed: UInt64

    /// Runs the variant with or without throttling.
    func run(throttling: Bool) throws -> AdaptiveThrottlingResult {
        let clock = TestClock()
        let throttle = try AdaptiveThrottle(
            window: self.window, clock: clock,
            generator: SeededRandomNumberGenerator(seed: SeedDerivation.derive(self.seed, 21, 0)))
        let step = Duration.seconds(1) / self.requestsPerSecond
        let outageStart = self.healthy
        let recovery = self.healthy + self.outage
        let end = recovery + self.after
        var offeredAfterFirstWindow = 0
        var reachedAfterFirstWindow = 0
        var fullTrafficAt: Duration?
        var now = Duration.zero
        while now < end {
            clock.advance(by: step)
            now += step
            let serverIsUp = now < outageStart || now >= recovery
            let admitted = !throttling || throttle.admit()
            if admitted {
                if serverIsUp { throttle.recordAccepted() } else { throttle.recordRejected() }
            }
            if !serverIsUp, now >= outageStart + self.window {
                offeredAfterFirstWindow += 1
                if admitted { reachedAfterFirstWindow += 1 }
            }
            if now >= recovery, fullTrafficAt == nil, !throttling || throttle.rejectionProbability == 0 {
                fullTrafficAt = now
            }
        }
        let recoveryWindows = fullTrafficAt.map { ($0 - recovery) / self.window }
        return AdaptiveThrottlingResult(
            throttling: throttling,
            serverRequestsPerOffered: Double(reachedAfterFirstWindow) / Double(Swift.max(offeredAfterFirstWindow, 1)),
            recoveryWindows: recoveryWindows)
    }
}

/// The figures of one adaptive-throttling variant.
struct AdaptiveThrottlingResult: Sendable {
    /// Whether the client throttled.
    var throttling: Bool
    /// Requests reaching the dead server per request offered, after the first window of the outage.
    var serverRequestsPerOffered: Double
    /// Windows from the recovery to full traffic; `nil` if it never got there.
    var recoveryWindows: Double?
}
