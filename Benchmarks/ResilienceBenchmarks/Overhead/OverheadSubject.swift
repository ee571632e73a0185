/// One way of calling ``Workload/operation(_:)`` whose cost the overhead suite measures.
///
/// A subject writes the call twice, once per caller, so that each body is
/// compiled in the isolation it is measured in: a closure written inside a
/// `@MainActor` method is main-actor isolated, exactly as in an app's view model.
/// Both bodies must do the same thing. A call returns the operation's result (or
/// its input, when the mechanism rejected the call) so that the next call depends
/// on it.
protocol OverheadSubject: Sendable {
    /// One call from a task that is not isolated to any actor.
    func call(_ input: Int) async -> Int

    /// One call from the main actor.
    @MainActor func callFromMainActor(_ input: Int) async -> Int
}

/// The baseline: awaiting the operation directly, with nothing around it.
struct DirectCall: OverheadSubject {
    func call(_ input: Int) async -> Int {
        (try? await Workload.operation(input)) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await Workload.operation(input)) ?? input
    }
}

/// The plain baseline: awaiting ``Workload/plainOperation(_:)``, a plain nonisolated
/// `async` function, directly.
struct PlainDirectCall: OverheadSubject {
    func call(_ input: Int) async -> Int {
        (try? await Workload.plainOperation(input)) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        (try? await Workload.plainOperation(input)) ?? input
    }
}

/// A control that allocates one object per call, used to check that the allocation counter works.
struct AllocatingControl: OverheadSubject {
    private final class Box {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    func call(_ input: Int) async -> Int {
        let box = Box(input)
        blackHole(box)
        return (try? await Workload.operation(box.value)) ?? input
    }

    @MainActor func callFromMainActor(_ input: Int) async -> Int {
        let box = Box(input)
        blackHole(box)
        return (try? await Workload.operation(box.value)) ?? input
    }
}
