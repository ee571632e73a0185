import Synchronization

#if canImport(Glibc)
    import Glibc
    // `timespec`'s fields are declared in the toolchain's shim module on Linux; member import
    // visibility asks for it by name.
    import SwiftOverlayShims
#endif

/// A type-erased clock that measures time as a `Duration` since its creation.
///
/// The public API takes `some Clock<Duration>`; the types that remember
/// instants store this instead, so they need no generic parameter. An instant
/// becomes the duration elapsed since the clock's origin, which makes deadline
/// arithmetic plain `Duration` arithmetic.
///
/// On Linux, when the wrapped clock is the system's `ContinuousClock`, the
/// clock is read with `clock_gettime(CLOCK_BOOTTIME)` directly (the clock
/// `ContinuousClock` reads there) in whole nanoseconds: no closure, no generic
/// witnesses and no 128-bit arithmetic on the way. Every other clock, a test
/// clock included, is read through its own `now`, exactly.
package struct ElapsedClock: Sendable {
    /// The wrapped clock's reading, for clocks other than the system's continuous clock.
    private let read: @Sendable () -> Duration
    /// Sleeps until the given elapsed time; throws `CancellationError` when cancelled.
    package let sleepUntil: @Sendable (Duration) async throws -> Void
    /// The system clock's origin in nanoseconds of `CLOCK_BOOTTIME`, when the wrapped clock is
    /// the system's `ContinuousClock` on Linux; `nil` otherwise.
    private let systemOrigin: Int64?

    /// Wraps `clock`, taking its current instant as the origin.
    package init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        self.read = { origin.duration(to: clock.now) }
        self.sleepUntil = { elapsed in
            try await clock.sleep(until: origin.advanced(by: elapsed), tolerance: nil)
        }
        #if canImport(Glibc)
            self.systemOrigin = C.self == ContinuousClock.self ? Self.systemNanoseconds() : nil
        #else
            self.systemOrigin = nil
        #endif
    }

    /// The time elapsed since the origin, on the wrapped clock.
    @inline(__always)
    package func now() -> Duration {
        if let origin = self.systemOrigin {
            return Duration(attoseconds: Int128(Self.systemNanoseconds() &- origin) &* 1_000_000_000)
        }
        return self.read()
    }

    /// The time elapsed since the origin in whole nanoseconds, or `nil` when it is not a whole
    /// number of nanoseconds within `Int64` (a test clock may say so); the caller then reads ``now()``.
    @inline(__always)
    package func nanoseconds() -> Int64? {
        if let origin = self.systemOrigin {
            return Self.systemNanoseconds() &- origin
        }
        let (quotient, remainder) = self.read().attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        guard remainder == 0 else { return nil }
        return Int64(exactly: quotient)
    }

    /// A time no earlier than the time elapsed now, in whole nanoseconds, and cheaper to read
    /// than ``nanoseconds()``; `nil` as for ``nanoseconds()``.
    ///
    /// For the system's continuous clock on Linux this is the coarse monotonic clock (updated
    /// once per kernel tick, read without a hardware timer) plus a margin: two ticks (the coarse
    /// clock trails the precise one by a tick, a little more when the tick interrupt comes late
    /// on a loaded machine; one tick was measured to fall short by a few hundred
    /// nanoseconds), plus the time the system had
    /// spent suspended when the margin was measured (the boot-time clock counts it, the
    /// monotonic one does not). After a further suspension the bound may trail the precise
    /// reading until ``recalibrateUpperBound()`` measures the margin again; a caller that finds
    /// the bound below a precise reading calls it. Every other clock gives its precise reading.
    @inline(__always)
    package func upperBoundNanoseconds() -> Int64? {
        #if canImport(Glibc)
            if let origin = self.systemOrigin {
                var time = timespec()
                clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
                let seconds: Int64 = Int64(time.tv_sec)
                let coarse: Int64 = seconds &* 1_000_000_000 &+ Int64(time.tv_nsec)
                return coarse &+ Self.currentCoarseMargin() &- origin
            }
        #endif
        return self.nanoseconds()
    }

    /// Measures again the margin that makes ``upperBoundNanoseconds()`` an upper bound, after
    /// a caller found it below a precise reading (the system was suspended since).
    ///
    /// The margin never shrinks: a new measurement smaller than the one in force (an
    /// earlier one that was preempted between its two readings) is dropped, so that
    /// ``upperBoundsHeld(below:sinceMargin:)`` may rely on the margin recorded with
    /// ``upperBoundMargin()`` being the least in force since.
    package func recalibrateUpperBound() {
        #if canImport(Glibc)
            if self.systemOrigin != nil {
                Self.coarseMargin.max(Self.measureCoarseMargin(), ordering: .relaxed)
            }
        #endif
    }

    /// The margin ``upperBoundNanoseconds()`` adds now, for a caller that will later ask
    /// ``upperBoundsHeld(below:sinceMargin:)`` about the bounds it reads from now on; `nil`
    /// for every clock other than the system's continuous clock on Linux, whose bound is
    /// its precise reading.
    package func upperBoundMargin() -> Int64? {
        #if canImport(Glibc)
            if self.systemOrigin != nil {
                return Self.currentCoarseMargin()
            }
        #endif
        return nil
    }

    /// Whether every reading of ``upperBoundNanoseconds()`` taken since `margin` was read
    /// (with ``upperBoundMargin()``) and below `deadline` was taken before `deadline` on the
    /// precise clock.
    ///
    /// `true` at once when the precise clock still reads below `deadline`: every such reading
    /// came before now. Otherwise the bound can have trailed only if the system was
    /// suspended for longer than the margin allows since `margin` was measured: the time
    /// spent suspended is read again (boot-time clock after monotonic clock, so it is never
    /// under-read) and compared with what `margin` covers, less a tick and a half (the
    /// coarse clock is taken to trail the precise one by at most that; about one tick was
    /// measured). When it exceeds that, the margin is measured again and the answer is
    /// `false`: the caller must assume that bounds below `deadline` were read at or after it.
    /// The caller calls this after the last such reading can have been taken.
    package func upperBoundsHeld(below deadline: Int64, sinceMargin margin: Int64) -> Bool {
        #if canImport(Glibc)
            if let origin = self.systemOrigin {
                if Self.systemNanoseconds() &- origin < deadline { return true }
                let covered = margin - 2 * Self.coarseTick + Self.coarseTick / 2
                if Self.suspendedNanoseconds() <= covered { return true }
                self.recalibrateUpperBound()
                return false
            }
        #endif
        return true
    }

    #if canImport(Glibc)
        /// `CLOCK_BOOTTIME` in nanoseconds.
        @inline(__always)
        private static func systemNanoseconds() -> Int64 {
            var time = timespec()
            clock_gettime(CLOCK_BOOTTIME, &time)
            let seconds: Int64 = Int64(time.tv_sec)
            return seconds &* 1_000_000_000 &+ Int64(time.tv_nsec)
        }

        /// What turns a coarse monotonic reading into an upper bound of the boot-time clock;
        /// zero until first measured. A constant initial value lets the compiler initialize it
        /// statically, so reading it needs no once-only initialization check.
        private static let coarseMargin = Atomic<Int64>(0)

        /// The margin in force, measured on first use.
        @inline(__always)
        private static func currentCoarseMargin() -> Int64 {
            let margin = Self.coarseMargin.load(ordering: .relaxed)
            if margin != 0 { return margin }
            return Self.firstCoarseMargin()
        }

        /// Measures the margin for the first time (or again, if two callers race here: the larger stays).
        @inline(never)
        private static func firstCoarseMargin() -> Int64 {
            let measured = Self.measureCoarseMargin()
            let (_, kept) = Self.coarseMargin.max(measured, ordering: .relaxed)
            return kept
        }

        /// Two of the coarse clock's ticks, plus how far the boot-time clock is ahead
        /// of the monotonic one (the time the system has spent suspended).
        private static func measureCoarseMargin() -> Int64 {
            2 * Self.coarseTick + Self.suspendedNanoseconds()
        }

        /// The coarse monotonic clock's tick (its resolution), in nanoseconds.
        private static let coarseTick: Int64 = {
            var resolution = timespec()
            clock_getres(CLOCK_MONOTONIC_COARSE, &resolution)
            let tickSeconds: Int64 = Int64(resolution.tv_sec)
            return tickSeconds * 1_000_000_000 + Int64(resolution.tv_nsec)
        }()

        /// How far the boot-time clock is ahead of the monotonic one (the time the system has
        /// spent suspended), never less than it is: the monotonic clock is read first.
        private static func suspendedNanoseconds() -> Int64 {
            var boot = timespec()
            var monotonic = timespec()
            clock_gettime(CLOCK_MONOTONIC, &monotonic)
            clock_gettime(CLOCK_BOOTTIME, &boot)
            let seconds: Int64 = Int64(boot.tv_sec) - Int64(monotonic.tv_sec)
            let nanoseconds: Int64 = Int64(boot.tv_nsec) - Int64(monotonic.tv_nsec)
            return Swift.max(0, seconds * 1_000_000_000 + nanoseconds)
        }
    #else
        private static func systemNanoseconds() -> Int64 { 0 }
    #endif
}
