import Foundation
import Resilience

/// The breakers the overhead and memory rows measure, built as a user would build them.
enum BreakerFixtures {
    /// The consecutive-failures rule (the package default: five in a row).
    static func consecutive() throws -> CircuitBreaker {
        try CircuitBreaker(name: "benchmark", tripRule: .consecutiveFailures(5))
    }

    /// A failure-rate rule over a time window: half the calls of the last 30 s (10 buckets),
    /// once the window holds 20 calls. A success is counted in the current bucket with one
    /// compare-and-exchange, without the lock, after a cheap reading of the clock.
    static func timeWindow() throws -> CircuitBreaker {
        try CircuitBreaker(
            name: "benchmark",
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 20, window: .time(.seconds(30), buckets: 10)))
    }

    /// A registry of consecutive-rule breakers by host, holding 100 hosts, the one the rows call among them.
    static func registry() throws -> CircuitBreakerRegistry<String> {
        let registry = try CircuitBreakerRegistry<String>(
            name: "hosts", configuration: CircuitBreakerConfiguration(tripRule: .consecutiveFailures(5)))
        for index in 0..<100 {
            _ = registry.breaker(for: "host-\(index).example.com")
        }
        return registry
    }

    /// A consecutive-rule breaker that no run's failures can trip: it counts every failure and stays closed.
    static func neverTripping() throws -> CircuitBreaker {
        try CircuitBreaker(name: "benchmark", tripRule: .consecutiveFailures(.max))
    }

    /// A consecutive-rule breaker tripped open for an hour, so every call in a run is rejected
    /// with a ``CircuitBreakerOpenError`` whose `retryAfter` is set.
    static func trippedOpen() async throws -> CircuitBreaker {
        let breaker = try CircuitBreaker(
            name: "benchmark", tripRule: .consecutiveFailures(5), openDuration: .fixed(.seconds(3_600)))
        for _ in 0..<5 {
            _ = try? await breaker.execute { () async throws -> Int in throw WorkloadError() }
        }
        guard breaker.state == .open else { throw FixtureError("the breaker did not open after five failures") }
        return breaker
    }
}

/// A fixture that could not be built as intended.
struct FixtureError: Error, CustomStringConvertible {
    /// What went wrong.
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// `breaker.success.consecutive` and `breaker.success.window`: a call through a closed
/// ``CircuitBreaker`` shared by every task of the row.
struct BreakerSuccess: OverheadSubject {
    let breaker: CircuitBreaker

    func call(_ input: Int) async -> Int {
        (try? await self.breaker.execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.breaker.execute { try await Workload.operation(input) }) ?? input
    }
}

/// `registry.success`: looking a host's breaker up in a ``CircuitBreakerRegistry`` keyed by
/// `String`, then a call through it, as a client that does not keep the breaker would.
///
/// The host is the same value on every call, so the registry finds it among the keys it
/// remembers bit for bit; `registry.success.equal-key` measures equal hosts stored apart.
struct RegistrySuccess: OverheadSubject {
    let registry: CircuitBreakerRegistry<String>
    let host = "host-42.example.com"

    func call(_ input: Int) async -> Int {
        (try? await self.registry.breaker(for: self.host).execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await self.registry.breaker(for: self.host).execute { try await Workload.operation(input) }) ?? input
    }
}

/// `registry.success.equal-key`: the same lookup and call, with a host equal to a held one
/// but with storage of its own, as a host read from each request's URL would be.
///
/// The subject cycles through 64 such copies of one host, made at setup (so the loop
/// allocates nothing), more than the registry remembers bit for bit: each lookup hashes
/// the host and compares it with `==`, the registry's path for a key it has not seen in
/// that representation.
struct RegistryEqualKeySuccess: OverheadSubject {
    let registry: CircuitBreakerRegistry<String>
    let hosts: [String]

    /// A subject over `registry` with 64 separately stored copies of `host-42.example.com`.
    init(registry: CircuitBreakerRegistry<String>) {
        self.registry = registry
        // Decoded from bytes at run time, so each copy has its own storage and its own bits.
        let bytes = Array("host-42.example.com".utf8)
        self.hosts = (0..<64).map { _ in String(decoding: bytes, as: UTF8.self) }
    }

    func call(_ input: Int) async -> Int {
        let host = self.hosts[input & 63]
        return (try? await self.registry.breaker(for: host).execute { try await Workload.operation(input) }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        let host = self.hosts[input & 63]
        return (try? await self.registry.breaker(for: host).execute { try await Workload.operation(input) }) ?? input
    }
}

/// `retry+breaker.success`: a ``RetryPolicy`` with the package defaults around a closed
/// consecutive-rule breaker, the usual nesting (the breaker sees every attempt).
struct RetryAroundBreakerSuccess: OverheadSubject {
    let policy: RetryPolicy
    let breaker: CircuitBreaker

    func call(_ input: Int) async -> Int {
        let breaker = self.breaker
        return
            (try? await self.policy.execute {
                try await breaker.execute { try await Workload.operation(input) }
            }) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        let breaker = self.breaker
        return
            (try? await self.policy.execute {
                try await breaker.execute { try await Workload.operation(input) }
            }) ?? input
    }
}

/// `breaker.rejection`: an open breaker rejects the call; the caller catches the
/// ``CircuitBreakerOpenError`` and reads its `retryAfter`.
///
/// The result depends on the error's `retryAfter`, so the optimizer can drop
/// neither the throw nor the error: the rejection is built, thrown, cast and read
/// on every call, as in an app that shows the wait to its user.
struct BreakerRejection: OverheadSubject {
    let breaker: CircuitBreaker

    /// A subject around a breaker tripped open for an hour.
    static func make() async throws -> BreakerRejection {
        BreakerRejection(breaker: try await BreakerFixtures.trippedOpen())
    }

    func call(_ input: Int) async -> Int {
        do {
            return try await self.breaker.execute { try await Workload.operation(input) }
        } catch let rejection as CircuitBreakerOpenError {
            return Self.fold(input, rejection)
        } catch {
            return input
        }
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        do {
            return try await self.breaker.execute { try await Workload.operation(input) }
        } catch let rejection as CircuitBreakerOpenError {
            return Self.fold(input, rejection)
        } catch {
            return input
        }
    }

    /// The next input: the previous one mixed with the rejection's retry-after.
    @inline(__always)
    private static func fold(_ input: Int, _ rejection: CircuitBreakerOpenError) -> Int {
        let (seconds, attoseconds) = (rejection.retryAfter ?? .zero).components
        return input &+ Int(truncatingIfNeeded: seconds) &+ Int(truncatingIfNeeded: attoseconds) | 1
    }
}

/// `breaker.failure`: the operation runs, then fails with a `URLError(.timedOut)`, which a
/// closed consecutive-rule breaker that never trips reads (`FailureAnalysis`) and records
/// as a failure; the caller catches the error.
///
/// A breaker in an outage records failures at the rate of its calls, so this is the cost it
/// pays on each.
struct BreakerFailure: OverheadSubject {
    let breaker: CircuitBreaker
    /// The failure, built once: the row measures reading and recording it, not making it.
    let failure = URLError(.timedOut)

    func call(_ input: Int) async -> Int {
        let failure = self.failure
        do {
            return try await self.breaker.execute { () async throws -> Int in
                let next = try await Workload.operation(input)
                if next != 0 { throw failure }
                return next
            }
        } catch {
            return input &+ 1
        }
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        let failure = self.failure
        do {
            return try await self.breaker.execute { () async throws -> Int in
                let next = try await Workload.operation(input)
                if next != 0 { throw failure }
                return next
            }
        } catch {
            return input &+ 1
        }
    }
}
