import MallocCounter
import Resilience
import ResilienceTesting
import Synchronization

/// `--soak`: millions of calls through the circuit breaker side of the library,
/// to show that memory does not grow with the number of calls.
///
/// Three phases, each with its own fixture, on one ``SoakClock`` that moves 1 ms per
/// call (so ten million calls cover about three hours of virtual time: time windows
/// rotate their buckets thousands of times, and breakers trip, stay open, turn
/// half-open and close again, over and over):
///
/// - `breaker.time-window`: one breaker with a failure-rate rule over a 30 s window in
///   10 buckets. 10% of calls fail; of every 100,000 calls the last 20,000 all fail (an
///   outage of 20 s), which trips it; it rejects, probes, re-opens, and closes after the outage.
/// - `retry+breaker`: a ``RetryPolicy`` around a consecutive-rule breaker, the same
///   outages; a call's first attempt fails one time in ten and its retry succeeds;
///   rejections during an outage are waited out by the policy (its sleeps move the clock).
/// - `registry`: a ``CircuitBreakerRegistry`` bounded at 1,000 breakers with a
///   time-window rule. Half the calls go to 500 hot keys (10 of which always fail, so
///   their breakers stay open and must be kept), half to 100,000 cold keys in turn, so
///   almost every cold call makes a new breaker and forgets an old one.
///
/// Every phase first runs a tenth of its calls as a warm-up (allocator pools, the
/// registry filling to its bound), then the measured calls. Resident memory (VmRSS)
/// is read at the start, after the warm-up, about ten times during each phase, and
/// at the end; the allocator's live bytes come from the malloc counter.
struct BreakerSoak {
    /// Measured calls per phase.
    var calls: Int
    /// The registry's bound.
    var registryBound = 1_000
    /// Cold keys the registry phase cycles through.
    var coldKeys = 100_000
    /// Hot keys, each called every `2 * hotKeys` calls.
    var hotKeys = 500
    /// Where progress lines go.
    var progress: Progress

    /// Warm-up calls per phase: a tenth of the measured calls.
    var warmUpCalls: Int {
        Swift.max(1, self.calls / 10)
    }

    /// Runs the warm-up, then the measured calls, of every phase.
    func run() async throws -> BreakerSoakResult {
        let counting = AllocationCounter.isSupported
        if counting { mc_start() }
        defer { if counting { mc_stop() } }
        let residentStart = ResidentMemory.current()
        let heapStart = counting ? mc_read().liveBytes : nil

        var phases: [any SoakPhase] = [
            try TimeWindowSoakPhase(), try RetryAroundBreakerSoakPhase(),
            try RegistrySoakPhase(bound: self.registryBound, hotKeys: self.hotKeys, coldKeys: self.coldKeys),
        ]
        for index in phases.indices {
            let started = ContinuousClock.now
            _ = await phases[index].run(0..<self.warmUpCalls)
            self.progress.note(
                "soak warm-up \(phases[index].name): \(Format.grouped(self.warmUpCalls)) calls in "
                    + "\(Format.decimal((ContinuousClock.now - started).milliseconds / 1_000, 1)) s")
        }
        let residentAfterWarmUp = ResidentMemory.current()
        let heapAfterWarmUp = counting ? mc_read().liveBytes : nil

        var results: [SoakPhaseResult] = []
        var residentPeak = residentAfterWarmUp
        let measured = self.warmUpCalls..<(self.warmUpCalls + self.calls)
        let slice = Swift.max(1, self.calls / 10)
        for index in phases.indices {
            let allocationsBefore = counting ? mc_read().allocations : nil
            let started = ContinuousClock.now
            var counts = SoakCounts()
            var start = measured.lowerBound
            while start < measured.upperBound {
                let end = Swift.min(start + slice, measured.upperBound)
                counts.add(await phases[index].run(start..<end))
                if let resident = ResidentMemory.current() {
                    residentPeak = Swift.max(residentPeak ?? resident, resident)
                }
                start = end
            }
            let seconds = (ContinuousClock.now - started).milliseconds / 1_000
            let allocations = allocationsBefore.map { Int(mc_read().allocations &- $0) }
            let result = SoakPhaseResult(
                name: phases[index].name,
                detail: phases[index].detail,
                calls: self.calls,
                seconds: seconds,
                counts: counts,
                transitions: phases[index].transitions,
                allocationsPerCall: allocations.map { Double($0) / Double(self.calls) },
                residentAfter: ResidentMemory.current(),
                registry: phases[index].registryFigures)
            self.progress.note(
                "soak \(result.name): \(Format.grouped(self.calls)) calls in \(Format.decimal(seconds, 1)) s, "
                    + "RSS \(result.residentAfter.map(Self.mebibytes) ?? "n/a") MiB")
            results.append(result)
        }
        let residentEnd = ResidentMemory.current()
        let heapEnd = counting ? mc_read().liveBytes : nil
        return BreakerSoakResult(
            callsPerPhase: self.calls,
            warmUpCallsPerPhase: self.warmUpCalls,
            residentStart: residentStart,
            residentAfterWarmUp: residentAfterWarmUp,
            residentPeak: residentPeak,
            residentEnd: residentEnd,
            heapStart: heapStart.map { Int($0) },
            heapAfterWarmUp: heapAfterWarmUp.map { Int($0) },
            heapEnd: heapEnd.map { Int($0) },
            phases: results)
    }

    /// Bytes as MiB with one decimal.
    static func mebibytes(_ bytes: Int) -> String {
        Format.decimal(Double(bytes) / 1_048_576, 1)
    }
}

/// What the calls of a phase ended with.
struct SoakCounts: Sendable {
    /// Calls that returned a value.
    var successes = 0
    /// Calls that failed with the operation's error (after retries, where a policy retries).
    var failures = 0
    /// Calls that ended with a breaker's rejection.
    var rejections = 0
    /// Times the operation ran (attempts that passed the breaker).
    var attempts = 0

    /// Adds `other`'s counts.
    mutating func add(_ other: SoakCounts) {
        self.successes += other.successes
        self.failures += other.failures
        self.rejections += other.rejections
        self.attempts += other.attempts
    }
}

/// One phase of the soak: a fixture and the calls through it.
protocol SoakPhase {
    /// The row name.
    var name: String { get }
    /// What the phase does, for the table.
    var detail: String { get }
    /// State changes the phase's breakers have reported so far.
    var transitions: Int { get }
    /// The registry's figures, for the registry phase.
    var registryFigures: SoakRegistryFigures? { get }
    /// Runs the calls numbered `calls`; the number decides what each call does.
    mutating func run(_ calls: Range<Int>) async -> SoakCounts
}

extension SoakPhase {
    var registryFigures: SoakRegistryFigures? { nil }

    /// The time-window and retry phases fail every tenth call, and every call in the
    /// last fifth of each stretch of 100,000 calls (an outage of 20 s of virtual time, long
    /// enough to push the failure rate of a 30 s window over one half).
    static func isInOutage(_ call: Int) -> Bool {
        call % 100_000 >= 80_000
    }

    /// One call in ten, picked by a hash of its number rather than by `call % 10`, so that
    /// the probes of a breaker that opens for a whole number of seconds (1,000 calls each)
    /// do not keep landing on failing calls.
    static func isUnlucky(_ call: Int) -> Bool {
        (UInt64(truncatingIfNeeded: call) &* 0x9E37_79B9_7F4A_7C15) >> 32 % 10 == 0
    }
}

/// Counts the state changes breakers report.
final class TransitionCounter: CircuitBreakerObserver {
    private let count = Atomic<Int>(0)

    /// State changes so far.
    var transitions: Int {
        self.count.load(ordering: .relaxed)
    }

    func stateChanged(_ event: CircuitBreakerStateChangeEvent) {
        self.count.wrappingAdd(1, ordering: .relaxed)
    }
}

/// The server error the soak's operations throw: HTTP 503, which every breaker counts.
private let soakFailure = SimulatedServerError(httpStatusCode: 503, retryAfter: nil)

/// `breaker.time-window`: one breaker with a failure-rate rule over a time window.
struct TimeWindowSoakPhase: SoakPhase {
    let name = "breaker.time-window"
    let detail = "failure rate over 30 s in 10 buckets, opens 5 s"
    private let clock = SoakClock()
    private let observer = TransitionCounter()
    private let breaker: CircuitBreaker

    init() throws {
        self.breaker = try CircuitBreaker(
            name: "soak",
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 20, window: .time(.seconds(30), buckets: 10)),
            openDuration: .fixed(.seconds(5)), observer: self.observer, clock: self.clock)
    }

    var transitions: Int { self.observer.transitions }

    mutating func run(_ calls: Range<Int>) async -> SoakCounts {
        var counts = SoakCounts()
        var sink = 0
        for call in calls {
            self.clock.advance(nanoseconds: 1_000_000)
            let fails = Self.isInOutage(call) || Self.isUnlucky(call)
            do {
                sink &+= try await self.breaker.execute { () async throws -> Int in
                    counts.attempts += 1
                    if fails { throw soakFailure }
                    return call
                }
                counts.successes += 1
            } catch let rejection as CircuitBreakerOpenError {
                sink &+= Int(truncatingIfNeeded: (rejection.retryAfter ?? .zero).components.seconds)
                counts.rejections += 1
            } catch {
                counts.failures += 1
            }
        }
        blackHole(sink)
        return counts
    }
}

/// `retry+breaker`: a retry policy around a consecutive-rule breaker.
struct RetryAroundBreakerSoakPhase: SoakPhase {
    let name = "retry+breaker"
    let detail = "RetryPolicy(3 attempts) around 5 consecutive failures, opens 5 s"
    private let clock = SoakClock()
    private let observer = TransitionCounter()
    private let policy: RetryPolicy
    private let breaker: CircuitBreaker

    init() throws {
        self.policy = try RetryPolicy(
            maximumAttempts: 3, clock: self.clock, generator: SeededRandomNumberGenerator(seed: 2_015))
        self.breaker = try CircuitBreaker(
            name: "soak", tripRule: .consecutiveFailures(5), openDuration: .fixed(.seconds(5)),
            observer: self.observer, clock: self.clock)
    }

    var transitions: Int { self.observer.transitions }

    mutating func run(_ calls: Range<Int>) async -> SoakCounts {
        var counts = SoakCounts()
        var sink = 0
        let breaker = self.breaker
        for call in calls {
            self.clock.advance(nanoseconds: 1_000_000)
            let inOutage = Self.isInOutage(call)
            var attempt = 0
            do {
                sink &+= try await self.policy.execute {
                    try await breaker.execute { () async throws -> Int in
                        attempt += 1
                        if inOutage || (attempt == 1 && Self.isUnlucky(call)) { throw soakFailure }
                        return call
                    }
                }
                counts.successes += 1
            } catch is CircuitBreakerOpenError {
                counts.rejections += 1
            } catch {
                counts.failures += 1
            }
            counts.attempts += attempt
        }
        blackHole(sink)
        return counts
    }
}

/// The registry's figures at the end of the soak.
struct SoakRegistryFigures: Sendable {
    /// The registry's bound.
    var bound: Int
    /// Breakers held at the end.
    var count: Int
    /// The most breakers held at any sample (every 1,024 calls).
    var maximumCount: Int
    /// Breakers the registry made, warm-up included.
    var breakersMade: Int
}

/// `registry`: a bounded registry with far more keys than its bound.
struct RegistrySoakPhase: SoakPhase {
    let name = "registry"
    let detail: String
    private let clock = SoakClock()
    private let observer = TransitionCounter()
    private let made = MadeCounter()
    private let registry: CircuitBreakerRegistry<Int>
    private let bound: Int
    private let hotKeys: Int
    private let coldKeys: Int
    private var maximumCount = 0

    /// Counts the breakers the registry makes.
    private final class MadeCounter: Sendable {
        let count = Atomic<Int>(0)
    }

    init(bound: Int, hotKeys: Int, coldKeys: Int) throws {
        self.bound = bound
        self.hotKeys = hotKeys
        self.coldKeys = coldKeys
        self.detail =
            "\(Format.grouped(hotKeys)) hot + \(Format.grouped(coldKeys)) cold keys, bound \(Format.grouped(bound))"
        let configuration = try CircuitBreakerConfiguration(
            tripRule: .failureRate(threshold: 0.5, minimumCalls: 5, window: .time(.seconds(30), buckets: 10)),
            openDuration: .fixed(.seconds(5)))
        let (observer, clock, made) = (self.observer, self.clock, self.made)
        self.registry = try CircuitBreakerRegistry<Int>(maximumCount: bound) { key in
            made.count.wrappingAdd(1, ordering: .relaxed)
            return CircuitBreaker(name: "soak[\(key)]", configuration: configuration, observer: observer, clock: clock)
        }
    }

    var transitions: Int { self.observer.transitions }

    var registryFigures: SoakRegistryFigures? {
        SoakRegistryFigures(
            bound: self.bound, count: self.registry.count, maximumCount: self.maximumCount,
            breakersMade: self.made.count.load(ordering: .relaxed))
    }

    mutating func run(_ calls: Range<Int>) async -> SoakCounts {
        var counts = SoakCounts()
        var sink = 0
        for call in calls {
            self.clock.advance(nanoseconds: 1_000_000)
            let half = call / 2
            // Even calls: the hot keys in turn. Odd calls: the cold keys, in an order that
            // visits all of them (7,919 is prime, so coprime with the count).
            let key =
                call % 2 == 0
                ? half % self.hotKeys : self.hotKeys + (half % self.coldKeys) &* 7_919 % self.coldKeys
            // One hot key in fifty always fails, so its breaker stays open (or half-open).
            let fails = key < self.hotKeys && key % 50 == 0
            do {
                sink &+= try await self.registry.breaker(for: key).execute { () async throws -> Int in
                    counts.attempts += 1
                    if fails { throw soakFailure }
                    return call
                }
                counts.successes += 1
            } catch is CircuitBreakerOpenError {
                counts.rejections += 1
            } catch {
                counts.failures += 1
            }
            if call % 1_024 == 0 {
                self.maximumCount = Swift.max(self.maximumCount, self.registry.count)
            }
        }
        self.maximumCount = Swift.max(self.maximumCount, self.registry.count)
        blackHole(sink)
        return counts
    }
}

/// What the soak measured.
struct BreakerSoakResult: Sendable {
    /// Measured calls per phase.
    var callsPerPhase: Int
    /// Warm-up calls per phase.
    var warmUpCallsPerPhase: Int
    /// VmRSS before anything ran, in bytes.
    var residentStart: Int?
    /// VmRSS after every phase's warm-up.
    var residentAfterWarmUp: Int?
    /// The largest VmRSS sampled after the warm-up.
    var residentPeak: Int?
    /// VmRSS at the end.
    var residentEnd: Int?
    /// The allocator's live bytes counted since the start, at the start (0), after the warm-up and at the end.
    var heapStart: Int?
    /// Live heap bytes after the warm-up.
    var heapAfterWarmUp: Int?
    /// Live heap bytes at the end.
    var heapEnd: Int?
    /// One row per phase.
    var phases: [SoakPhaseResult]

    /// VmRSS growth from after the warm-up to the end.
    var residentGrowth: Int? {
        guard let end = self.residentEnd, let warm = self.residentAfterWarmUp else { return nil }
        return end - warm
    }

    /// Live heap growth from after the warm-up to the end.
    var heapGrowth: Int? {
        guard let end = self.heapEnd, let warm = self.heapAfterWarmUp else { return nil }
        return end - warm
    }
}

/// One phase's figures.
struct SoakPhaseResult: Sendable {
    /// The row name.
    var name: String
    /// What the phase does.
    var detail: String
    /// Measured calls.
    var calls: Int
    /// Wall-clock seconds of the measured calls.
    var seconds: Double
    /// How the calls ended.
    var counts: SoakCounts
    /// State changes reported by the phase's breakers, warm-up included.
    var transitions: Int
    /// Heap allocations per measured call, where counted.
    var allocationsPerCall: Double?
    /// VmRSS after the phase.
    var residentAfter: Int?
    /// The registry's figures, for the registry phase.
    var registry: SoakRegistryFigures?
}
