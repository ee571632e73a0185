import Synchronization

#if canImport(Glibc)
    import Glibc
    // `timespec`'s fields are declared in the toolchain's shim module on Linux; member import
    // visibility asks for it by name.
    import SwiftOverlayShims
#endif

/// The system clocks an ``ElapsedClock`` reads for the system's `ContinuousClock` on Linux,
/// and the margins that turn their cheap coarse readings into bounds of the precise one.
///
/// `ContinuousClock` reads `CLOCK_BOOTTIME` on Linux: elapsed time that keeps counting
/// while the system is suspended. Its coarse cousins, read from the last kernel tick
/// without a hardware timer, are `CLOCK_MONOTONIC_COARSE`, which stops during a
/// suspension, and `CLOCK_REALTIME_COARSE`, the wall clock, which counts a suspension but
/// moves when someone sets the time. Each, plus a margin measured against the boot-time
/// clock, is an upper bound of it until its own kind of event: a suspension for the
/// monotonic one, a step back of the wall clock for the other. ``upperBound()`` takes the
/// larger of the two, which is an upper bound unless both kinds of event happened since
/// the margins were last measured; and since the two disagree after either one, it
/// measures the margins again at once when they do.
///
/// The real source reads the system's clocks; a simulated one (``init(simulating:)``)
/// reads functions a test drives, so that a test can suspend the system
/// deterministically.
package final class SystemClockSource: Sendable {
    /// Clock readings in whole nanoseconds, for a simulated source.
    package struct Readings: Sendable {
        /// The precise boot-time clock (counts suspensions).
        package var boot: @Sendable () -> Int64
        /// The precise monotonic clock (stops during suspensions).
        package var monotonic: @Sendable () -> Int64
        /// The precise wall clock.
        package var realtime: @Sendable () -> Int64
        /// The monotonic clock at the last tick.
        package var monotonicCoarse: @Sendable () -> Int64
        /// The wall clock at the last tick.
        package var realtimeCoarse: @Sendable () -> Int64
        /// The coarse clocks' resolution: the length of a tick.
        package var tick: Int64

        /// Readings from the given functions.
        package init(
            boot: @escaping @Sendable () -> Int64, monotonic: @escaping @Sendable () -> Int64,
            realtime: @escaping @Sendable () -> Int64, monotonicCoarse: @escaping @Sendable () -> Int64,
            realtimeCoarse: @escaping @Sendable () -> Int64, tick: Int64
        ) {
            self.boot = boot
            self.monotonic = monotonic
            self.realtime = realtime
            self.monotonicCoarse = monotonicCoarse
            self.realtimeCoarse = realtimeCoarse
            self.tick = tick
        }
    }

    /// The simulated readings, in an object of their own so that checking for them copies one
    /// reference rather than five closures; `nil` for the system's clocks.
    private let simulated: Simulation?

    private final class Simulation: Sendable {
        let readings: Readings
        init(_ readings: Readings) { self.readings = readings }
    }
    /// Three ticks: more than a coarse reading trails the precise one. Measured on Linux 6.18
    /// with a 4 ms tick, a coarse reading taken just after a precise one trailed it by between
    /// one and two ticks nearly always; on a loaded 2-core machine, 165 of 2.1 billion such
    /// pairs trailed by a little over two (at most 2.001 ticks), when the tick interrupt came
    /// late. The third tick leaves room for a later one.
    private let slack: Int64
    /// The coarse clocks' resolution: the length of a tick.
    private let tick: Int64
    /// Added to a coarse monotonic reading: the boot-time clock's lead (the time spent
    /// suspended, rounded up) plus ``slack``.
    private let monotonicMargin: Atomic<Int64>
    /// Added to a coarse wall-clock reading: the boot-time clock's offset from it, rounded up,
    /// plus ``slack``.
    private let realtimeMargin: Atomic<Int64>
    /// Added to a coarse monotonic reading for a lower bound: the boot-time clock's lead,
    /// rounded down. The lead only grows, so this stays a lower bound after a suspension.
    private let monotonicFloor: Atomic<Int64>
    /// A sequence count of the margins' measurements: odd while one is being stored, even
    /// otherwise, and two more for each. A reader that finds the same even count before and
    /// after reading a margin read the margin that measurement stored (see
    /// ``upperBoundsHeld(below:since:)``).
    private let measurements: Atomic<Int64>
    /// Lets one measurement store its margins at a time, so that the count above has a single
    /// writer and the margins are stored in the order they were measured.
    private let measuring: Lock<Void>

    #if canImport(Glibc)
        /// The system's clocks.
        package static let system = SystemClockSource(readings: nil)
    #endif

    /// A source that reads `readings` instead of the system's clocks.
    package convenience init(simulating readings: Readings) {
        self.init(readings: readings)
    }

    private init(readings: Readings?) {
        self.simulated = readings.map(Simulation.init)
        self.tick = readings?.tick ?? Self.systemTick()
        self.slack = 3 * self.tick
        self.monotonicMargin = Atomic(0)
        self.realtimeMargin = Atomic(0)
        self.monotonicFloor = Atomic(0)
        self.measurements = Atomic(0)
        self.measuring = Lock(())
        self.recalibrate()
    }

    /// The precise boot-time clock.
    @inline(__always)
    package func boot() -> Int64 {
        self.read(.boot)
    }

    /// A reading no earlier than ``boot()`` now, from the coarse clocks: the larger of the
    /// monotonic and the wall-clock bound. When the two disagree by more than the slack,
    /// one of them trails (a suspension, or a step of the wall clock, since the margins
    /// were measured) and the margins are measured again; the larger is still an upper
    /// bound unless both events happened.
    @inline(__always)
    package func upperBound() -> Int64 {
        let monotonic = self.read(.monotonicCoarse) &+ self.monotonicMargin.load(ordering: .relaxed)
        let realtime = self.read(.realtimeCoarse) &+ self.realtimeMargin.load(ordering: .relaxed)
        let gap = monotonic &- realtime
        if gap > self.slack || gap < -self.slack { self.recalibrate() }
        return Swift.max(monotonic, realtime)
    }

    /// ``upperBound()`` and a reading no later than ``boot()`` now (the coarse monotonic
    /// clock plus the suspended time as last measured, which only grows). When the margins
    /// are measured again, the lower bound takes the new measure, so that it does not trail
    /// by a suspension it has just seen.
    @inline(__always)
    package func bounds() -> (lower: Int64, upper: Int64) {
        let coarse = self.read(.monotonicCoarse)
        let monotonic = coarse &+ self.monotonicMargin.load(ordering: .relaxed)
        let realtime = self.read(.realtimeCoarse) &+ self.realtimeMargin.load(ordering: .relaxed)
        let gap = monotonic &- realtime
        if gap > self.slack || gap < -self.slack { self.recalibrate() }
        return (coarse &+ self.monotonicFloor.load(ordering: .relaxed), Swift.max(monotonic, realtime))
    }

    /// Measures the margins again against precise readings.
    ///
    /// Each bound's margin is measured with the read order that rounds it the safe way:
    /// the other clock first and the boot-time clock after for an upper bound, the
    /// reverse for the lower one. Measurements take turns, each reading and storing under a
    /// lock that runs nothing but those readings (the system's clocks, or a test's simulation
    /// of them). A reader of a bound that finds the two bounds apart calls this, so after a
    /// suspension several may queue here at once: a caller that finds a measurement was
    /// stored while it waited takes that one instead of measuring again.
    ///
    /// Out of line: the bounds that call it are inlined into hot paths, which keep smaller
    /// frames without the lock's code.
    @inline(never)
    package func recalibrate() {
        let seen = self.measurements.load(ordering: .acquiring)
        self.measuring.withLock { _ in
            if seen & 1 == 0, self.measurements.load(ordering: .relaxed) != seen { return }
            self.measureMargins()
        }
    }

    private func measureMargins() {
        // Made odd first, and fenced, so that a reader who sees one of the new margins also
        // sees a changed count when it reads the count again, and so that a caller of
        // `recalibrate()` who saw the count even and then changed knows the readings below
        // were taken after it looked.
        self.measurements.wrappingAdd(1, ordering: .relaxed)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        let monotonic = self.read(.monotonic)
        let realtime = self.read(.realtime)
        let boot = self.boot()
        let monotonicAfter = self.read(.monotonic)
        self.monotonicMargin.store(boot &- monotonic &+ self.slack, ordering: .relaxed)
        self.realtimeMargin.store(boot &- realtime &+ self.slack, ordering: .relaxed)
        self.monotonicFloor.store(boot &- monotonicAfter, ordering: .relaxed)
        // Even again; released, so a reader that sees this count sees the margins stored before it.
        self.measurements.wrappingAdd(1, ordering: .releasing)
    }

    /// A token naming the margins in force: the sequence count of their measurements, even and
    /// at least 2 when no measurement is being stored, odd (a token that never holds) while one is.
    package func marginToken() -> Int64 {
        self.measurements.load(ordering: .acquiring)
    }

    /// Whether every ``upperBound()`` read since `token` was taken (``marginToken()``) and
    /// below `deadline` (in the boot-time clock's nanoseconds) was read before `deadline` on
    /// the boot-time clock.
    ///
    /// `true` at once when the boot-time clock still reads below `deadline`: every such
    /// reading came before now. Otherwise the answer is `true` only if no measurement of the
    /// margins started since `token` and the monotonic margin in force since then still covers
    /// all the time the system has spent suspended, less two ticks and a half (the coarse clock
    /// is taken to trail the precise one by at most that; at most about two were measured): then
    /// every bound read since was at least the coarse monotonic clock plus that margin, which
    /// was no earlier than the boot-time clock. Any other case answers `false` (measuring the
    /// margins again when they no longer cover a suspension): the caller must assume that
    /// bounds below `deadline` were read at or after it. The wall-clock bound is not relied on
    /// here; it only ever raises a bound.
    package func upperBoundsHeld(below deadline: Int64, since token: Int64) -> Bool {
        if self.boot() < deadline { return true }
        guard token & 1 == 0, self.measurements.load(ordering: .acquiring) == token else { return false }
        let margin = self.monotonicMargin.load(ordering: .relaxed)
        atomicMemoryFence(ordering: .acquiring)
        guard self.measurements.load(ordering: .relaxed) == token else { return false }
        // The monotonic clock first, so that the time suspended is never under-read.
        let monotonic = self.read(.monotonic)
        let suspended = self.boot() &- monotonic
        // The margin is the time suspended when it was measured plus three ticks; a bound read
        // since is at least the monotonic clock plus that time and half a tick.
        if suspended <= margin &- self.slack &+ self.tick / 2 { return true }
        self.recalibrate()
        return false
    }

    /// The clocks a source reads.
    private enum Reading {
        case boot, monotonic, realtime, monotonicCoarse, realtimeCoarse
    }

    /// `reading` in nanoseconds, from the simulation if there is one, or else from the system.
    @inline(__always)
    private func read(_ reading: Reading) -> Int64 {
        if let simulated = self.simulated {
            switch reading {
            case .boot: return simulated.readings.boot()
            case .monotonic: return simulated.readings.monotonic()
            case .realtime: return simulated.readings.realtime()
            case .monotonicCoarse: return simulated.readings.monotonicCoarse()
            case .realtimeCoarse: return simulated.readings.realtimeCoarse()
            }
        }
        #if canImport(Glibc)
            let clock: clockid_t
            switch reading {
            case .boot: clock = CLOCK_BOOTTIME
            case .monotonic: clock = CLOCK_MONOTONIC
            case .realtime: clock = CLOCK_REALTIME
            case .monotonicCoarse: clock = CLOCK_MONOTONIC_COARSE
            case .realtimeCoarse: clock = CLOCK_REALTIME_COARSE
            }
            var time = timespec()
            clock_gettime(clock, &time)
            return Self.nanoseconds(time)
        #else
            return 0
        #endif
    }

    #if canImport(Glibc)
        /// `time` in nanoseconds.
        @inline(__always)
        private static func nanoseconds(_ time: timespec) -> Int64 {
            let seconds: Int64 = Int64(time.tv_sec)
            return seconds &* 1_000_000_000 &+ Int64(time.tv_nsec)
        }

        /// The coarse clocks' resolution.
        private static func systemTick() -> Int64 {
            var resolution = timespec()
            clock_getres(CLOCK_MONOTONIC_COARSE, &resolution)
            return Self.nanoseconds(resolution)
        }
    #else
        private static func systemTick() -> Int64 { 0 }
    #endif
}
