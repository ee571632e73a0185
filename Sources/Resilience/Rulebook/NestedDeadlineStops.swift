/// A ``RetryPolicy`` that stopped at its own deadline with `error`, the failure it waited on,
/// after the clock passed that deadline (perhaps with an enclosing limit's, in one move): `end`
/// says when its deadline was, on its clock, and when it stopped (see
/// `TimeLimitSignal.noteDeadlineStop(_:)`).
///
/// It holds `error`, so that no other failure made meanwhile can sit at that error's address and
/// pass for it: a limit knows the stop by the identity of the failure it holds.
final class NestedDeadlineStop: Sendable {
    let error: any Error
    let end: TimeLimitEnd

    init(error: any Error, end: TimeLimitEnd) {
        self.error = error
        self.end = end
    }
}

/// The stops at their own deadlines that the ``RetryPolicy`` calls nested in one time limit's
/// attempt told that limit of (`TimeLimitSignal.noteDeadlineStop(_:)`), oldest first, at most
/// ``capacity`` of them.
///
/// More than one policy may stop so in one attempt: siblings (`async let`, a task group), one
/// policy after another whose first failure the operation keeps, a policy in a task that outlived
/// an attempt nested in the limit. The limit reads the stops of the failure its own attempt ends
/// with, whichever policy told it last (see `TimeLimitSignal.takeDeadlineStops(of:)`).
///
/// Bounded, so that a loop of nested calls stopping at their deadlines keeps a limit's memory in
/// check: past ``capacity``, the oldest stop makes room for the new one. A limit whose attempt
/// ends with the failure of a stop dropped so decides as if no policy had told it of that one,
/// as it did before policies told their limits of their stops: a limit that fired reports its own
/// time-out and keeps the failure as the operation's late error; one whose timer had not fired
/// passes the failure on. The failure that ends an attempt is most often the last one a policy in
/// it stopped with, which is kept.
///
/// A plain value, kept under the limit's lock: it compares nothing and releases nothing of the
/// app's. What it drops, or hands out, it returns, for the caller to release once it has let go
/// of the lock: releasing a stop may release the app's failure, and run its `deinit`.
struct NestedDeadlineStops {
    /// How many stops a limit keeps.
    static let capacity = 8

    private var stops: [NestedDeadlineStop] = []

    /// Adds `stop`, the latest; returns the oldest stop, dropped to make room for it when the
    /// record is full, for the caller to release after unlocking.
    mutating func add(_ stop: NestedDeadlineStop) -> NestedDeadlineStop? {
        var dropped: NestedDeadlineStop?
        if self.stops.isEmpty {
            self.stops.reserveCapacity(Self.capacity)
        } else if self.stops.count >= Self.capacity {
            dropped = self.stops.removeFirst()
        }
        self.stops.append(stop)
        return dropped
    }

    /// Takes every stop out, oldest first, and leaves none: for the caller to read, and release,
    /// after unlocking.
    mutating func takeAll() -> [NestedDeadlineStop] {
        var taken: [NestedDeadlineStop] = []
        swap(&taken, &self.stops)
        return taken
    }
}
