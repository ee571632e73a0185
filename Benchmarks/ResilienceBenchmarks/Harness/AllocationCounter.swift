import MallocCounter

/// Heap allocations counted by the malloc-interposing shim in `Benchmarks/MallocCounter`.
///
/// Counting is process-wide (every thread), and off except between ``start()``
/// and ``stop(since:)``, so timing loops pay nothing for it. Where the shim cannot interpose the
/// allocator (non-glibc systems, sanitizer builds) ``isSupported`` is false and
/// callers report allocations as unavailable rather than as zero.
enum AllocationCounter {
    /// What the counters moved by while counting was on.
    struct Delta: Sendable {
        /// Blocks handed out by malloc, calloc, realloc and the aligned variants.
        var allocations: Int
        /// Usable bytes handed out minus usable bytes given back.
        var liveBytes: Int
    }

    /// Whether this build can count allocations at all.
    static var isSupported: Bool {
        mc_is_supported() != 0
    }

    /// Starts counting; pair with ``stop()`` around a timed region that must not include setup.
    static func start() -> mc_counters {
        let before = mc_read()
        mc_start()
        return before
    }

    /// Stops counting and returns the change since `before`.
    static func stop(since before: mc_counters) -> Delta {
        mc_stop()
        let after = mc_read()
        return Delta(
            allocations: Int(after.allocations &- before.allocations),
            liveBytes: Int(after.liveBytes &- before.liveBytes))
    }
}
