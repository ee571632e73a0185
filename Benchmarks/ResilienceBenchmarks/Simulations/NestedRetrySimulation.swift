import Resilience
import ResilienceTesting
import Synchronization

/// Three nested retry policies of 3 attempts each (an SDK inside an app inside a
/// job) against a server that fails every request with 503.
///
/// Without the guard (every layer ``NestedRetries/everyLayer``) each layer
/// retries what the layer inside it already retried: 3 × 3 × 3 = 27 attempts
/// reach the server per request. With it (the default,
/// ``NestedRetries/innermostLayer``) only the innermost layer retries. The figure
/// is attempts reaching the server per request. Waits run on a clock that jumps,
/// so the figure does not depend on the machine.
struct NestedRetrySimulation: Sendable {
    /// Requests sent, one after the other, from one task.
    var requests = 200
    /// Nested layers.
    var layers = 3
    /// Attempts per layer.
    var attemptsPerLayer = 3
    /// The seed every random stream derives from.
    var seed: UInt64

    /// Runs the variant with or without the guard.
    func run(guarded: Bool) async throws -> NestedRetryResult {
        let clock = SoakClock()
        let policies = try (0..<self.layers).map { layer in
            try RetryPolicy(
                maximumAttempts: self.attemptsPerLayer,
                backoff: .exponential(initial: .milliseconds(50), maximum: .seconds(1)),
                nestedRetries: guarded ? .innermostLayer : .everyLayer,
                clock: clock,
                generator: SeededRandomNumberGenerator(seed: SeedDerivation.derive(self.seed, 20, layer)))
        }
        let attempts = SimulationCounter()
        for _ in 0..<self.requests {
            _ = await Self.send(through: policies[...], attempts: attempts)
        }
        return NestedRetryResult(
            guarded: guarded, attemptsPerRequest: Double(attempts.value) / Double(self.requests),
            requests: self.requests, layers: self.layers, attemptsPerLayer: self.attemptsPerLayer)
    }

    /// Sends one request through `policies`, outermost first; each layer's error
    /// reaches the layer above as thrown, as an SDK's error reaches the app calling it.
    private static func send(through policies: ArraySlice<RetryPolicy>, attempts: SimulationCounter) async -> Bool {
        do {
            try await Self.attempt(through: policies, attempts: attempts)
            return true
        } catch {
            return false
        }
    }

    private static func attempt(through policies: ArraySlice<RetryPolicy>, attempts: SimulationCounter) async throws {
        guard let outer = policies.first else {
            attempts.increment()
            throw SimulatedServerError(httpStatusCode: 503, retryAfter: nil)  // the server fails every request
        }
        try await outer.execute { try await Self.attempt(through: policies.dropFirst(), attempts: attempts) }
    }
}

/// The figures of one nested-retry variant.
struct NestedRetryResult: Sendable {
    /// Whether the layers used the guard.
    var guarded: Bool
    /// Attempts reaching the server per request.
    var attemptsPerRequest: Double
    /// Requests sent.
    var requests: Int
    /// Nested layers.
    var layers: Int
    /// Attempts per layer.
    var attemptsPerLayer: Int
}

/// A counter a simulation's closures share.
final class SimulationCounter: Sendable {
    private let storage = Mutex(0)

    /// The count.
    var value: Int { self.storage.withLock { $0 } }

    /// Adds one.
    func increment() {
        self.storage.withLock { $0 += 1 }
    }
}
