/// The operation every overhead row calls, and the helpers that keep the
/// optimizer from deleting the work being measured.
enum Workload {
    /// One step of a 64-bit linear congruential generator: a tiny piece of real work.
    ///
    /// It is `nonisolated(nonsending)`, so it runs on whatever executor its caller
    /// is on: awaiting it directly from the main actor never leaves the main actor.
    /// That makes the direct call the honest baseline for both callers.
    ///
    /// Each call's input is the previous call's result, so calls can be neither
    /// skipped nor batched, and `@inline(never)` keeps the call a real call. It can
    /// throw (for the input 0, which the sequence reaches once in 2^64 steps), so
    /// the compiler must keep the error path of every caller.
    @inline(never)
    nonisolated(nonsending) static func operation(_ input: Int) async throws -> Int {
        if input == 0 { throw WorkloadError() }
        return input &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    }

    /// The same step as a plain nonisolated `async` function: the operation users of
    /// other libraries usually measure against.
    ///
    /// It is `@concurrent`, so awaiting it from an actor leaves the actor for the global
    /// executor and comes back; from a nonisolated task it costs about what
    /// ``operation(_:)`` costs. It gives the second, plain baseline printed beside the
    /// strict one.
    @inline(never)
    @concurrent static func plainOperation(_ input: Int) async throws -> Int {
        if input == 0 { throw WorkloadError() }
        return input &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    }

    /// The first input of a loop, hidden from the optimizer.
    @inline(never)
    @_optimize(none)
    static func seed(_ value: Int) -> Int {
        value
    }
}

/// The error ``Workload/operation(_:)`` throws for its one forbidden input, and
/// the error failing comparator fixtures use.
struct WorkloadError: Error {}

/// Consumes a value so that the optimizer must compute it.
@inline(never)
@_optimize(none)
func blackHole<T>(_ value: T) {}
