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
/// witnesses and no 128-bit arithmetic on the way; ``SystemClockSource`` does the
/// reading, and a test may simulate it (``init(simulating:)``). Every other clock, a
/// test clock included, is read through its own `now`, exactly.
package struct ElapsedClock: Sendable {
    /// The wrapped clock's reading, for clocks other than the system's continuous clock.
    private let read: @Sendable () -> Duration
    /// Sleeps until the given elapsed time; throws `CancellationError` when cancelled.
    package let sleepUntil: @Sendable (Duration) async throws -> Void
    /// The system's clocks and the origin in nanoseconds of their boot-time clock, when the
    /// wrapped clock is the system's `ContinuousClock` on Linux (or a simulation of it);
    /// `nil` otherwise.
    ///
    /// The source is unmanaged so that a reading takes no reference count: `sourceOwner` holds
    /// the reference that keeps it alive.
    private let system: (source: Unmanaged<SystemClockSource>, origin: Int64)?
    /// The source of ``system``.
    private let sourceOwner: SystemClockSource?
    /// Whether the wrapped clock is one of the system's clocks (`ContinuousClock` or
    /// `SuspendingClock`), on which no one can see who sleeps: a sleep left running there
    /// is observable only by what it costs, unlike on a test clock that counts its sleepers.
    package let isSystemClock: Bool
    /// The clock wrapped: the instance, for a clock that is a class (a test clock), else its
    /// type (the system's clocks, which every instance of a type reads alike). Two elapsed
    /// clocks with the same identity read one time, from different origins.
    package let identity: ObjectIdentifier

    /// Wraps `clock`, taking its current instant as the origin.
    package init<C: Clock<Duration>>(_ clock: C) {
        let origin = clock.now
        // The closures below hold the clock, so the instance lives as long as this value.
        self.identity = C.self is AnyObject.Type ? ObjectIdentifier(clock as AnyObject) : ObjectIdentifier(C.self)
        self.read = { origin.duration(to: clock.now) }
        self.sleepUntil = { elapsed in
            try await clock.sleep(until: origin.advanced(by: elapsed), tolerance: nil)
        }
        self.isSystemClock = C.self == ContinuousClock.self || C.self == SuspendingClock.self
        #if canImport(Glibc)
            if C.self == ContinuousClock.self {
                let source = SystemClockSource.system
                self.system = (Unmanaged.passUnretained(source), source.boot())
                self.sourceOwner = source
            } else {
                self.system = nil
                self.sourceOwner = nil
            }
        #else
            self.system = nil
            self.sourceOwner = nil
        #endif
    }

    /// A clock that reads `source` as it would read the system's clocks, taking its current
    /// boot-time reading as the origin; for tests that move those clocks themselves. It
    /// cannot sleep: ``sleepUntil`` throws `CancellationError`.
    package init(simulating source: SystemClockSource) {
        let origin = source.boot()
        self.identity = ObjectIdentifier(source)
        self.read = { Duration(attoseconds: Int128(source.boot() &- origin) &* 1_000_000_000) }
        self.sleepUntil = { _ in throw CancellationError() }
        self.isSystemClock = false  // it cannot sleep
        self.system = (Unmanaged.passUnretained(source), origin)
        self.sourceOwner = source
    }

    /// The time elapsed since the origin, on the wrapped clock.
    @inline(__always)
    package func now() -> Duration {
        if let system = self.system {
            let boot = system.source._withUnsafeGuaranteedRef { $0.boot() }
            return Duration(attoseconds: Int128(boot &- system.origin) &* 1_000_000_000)
        }
        return self.read()
    }

    /// The time elapsed since the origin in whole nanoseconds, or `nil` when it is not a whole
    /// number of nanoseconds within `Int64` (a test clock may say so); the caller then reads ``now()``.
    @inline(__always)
    package func nanoseconds() -> Int64? {
        if let system = self.system {
            return system.source._withUnsafeGuaranteedRef { $0.boot() } &- system.origin
        }
        let (quotient, remainder) = self.read().attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        guard remainder == 0 else { return nil }
        return Int64(exactly: quotient)
    }

    /// A time no earlier than the time elapsed now, in whole nanoseconds, and cheaper to read
    /// than ``nanoseconds()``; `nil` as for ``nanoseconds()``.
    ///
    /// For the system's continuous clock on Linux this is ``SystemClockSource/upperBound()``:
    /// the coarse monotonic and wall clocks (updated once per kernel tick, read without a
    /// hardware timer), each plus a margin of three ticks (the coarse clocks were measured to
    /// trail the precise one by between one and two ticks, a little over two when the tick
    /// interrupt came late on a loaded machine) and its measured
    /// offset from the boot-time clock, whichever is later. A suspension stops the monotonic
    /// clock but not the wall clock, so the bound holds across one. Should both trail a
    /// precise reading (a suspension and a step back of the wall clock since the margins were
    /// measured), a caller that finds so calls ``recalibrateUpperBound()``. Every other clock
    /// gives its precise reading.
    @inline(__always)
    package func upperBoundNanoseconds() -> Int64? {
        if let system = self.system {
            return system.source._withUnsafeGuaranteedRef { $0.upperBound() } &- system.origin
        }
        return self.nanoseconds()
    }

    /// Cheap bounds of the time elapsed now, in whole nanoseconds, for the system's continuous
    /// clock on Linux (see ``SystemClockSource/bounds()``); `nil` for every other clock, whose
    /// caller reads ``nanoseconds()`` instead.
    @inline(__always)
    package func coarseBoundsNanoseconds() -> (lower: Int64, upper: Int64)? {
        guard let system = self.system else { return nil }
        let (lower, upper) = system.source._withUnsafeGuaranteedRef { $0.bounds() }
        return (lower &- system.origin, upper &- system.origin)
    }

    /// The time elapsed on this clock when the process's system clocks
    /// (`SystemClockSource.system`) read `boot` on their boot-time clock, in nanoseconds;
    /// `nil` unless this clock reads them (the system's continuous clock on Linux). For a
    /// caller that reads the system clock once, before a lock, for many clocks.
    package func elapsed(atSystemBoot boot: Int64) -> Duration? {
        #if canImport(Glibc)
            guard let system = self.system, self.sourceOwner === SystemClockSource.system else { return nil }
            return Duration(attoseconds: Int128(boot &- system.origin) &* 1_000_000_000)
        #else
            return nil
        #endif
    }

    /// Whether ``coarseBoundsNanoseconds()`` gives bounds: the system's continuous clock on Linux.
    package var hasCoarseBounds: Bool {
        self.system != nil
    }

    /// Measures again the margins that make ``upperBoundNanoseconds()`` an upper bound, after
    /// a caller found it below a precise reading.
    package func recalibrateUpperBound() {
        self.sourceOwner?.recalibrate()
    }

    /// A token for the margins ``upperBoundNanoseconds()`` adds from now on, for a caller that
    /// will later ask ``upperBoundsHeld(below:sinceMargin:)`` about the bounds it reads from
    /// now on; `nil` for every clock other than the system's continuous clock on Linux, whose
    /// bound is its precise reading.
    package func upperBoundMargin() -> Int64? {
        self.sourceOwner?.marginToken()
    }

    /// Whether every reading of ``upperBoundNanoseconds()`` taken since `token` was read (with
    /// ``upperBoundMargin()``) and below `deadline` was taken before `deadline` on the precise
    /// clock; see ``SystemClockSource/upperBoundsHeld(below:since:)``. Always `true` for a
    /// clock whose bound is its precise reading. The caller calls this after the last such
    /// reading can have been taken.
    package func upperBoundsHeld(below deadline: Int64, sinceMargin token: Int64) -> Bool {
        guard let system = self.system else { return true }
        let (sum, overflow) = deadline.addingReportingOverflow(system.origin)
        let absolute = overflow ? (deadline > 0 ? Int64.max : Int64.min) : sum
        return system.source._withUnsafeGuaranteedRef { $0.upperBoundsHeld(below: absolute, since: token) }
    }
}
