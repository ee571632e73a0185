import Foundation
import ResilienceTesting
import Testing

@testable import Resilience

/// What a time limit keeps of the stops of the `RetryPolicy` calls nested in its attempt at their
/// own deadlines (`NestedDeadlineStops`): the latest few, each found for its own failure, and
/// nothing of the app's released while the limit holds its lock.
@Suite("The stops at their deadlines a limit keeps", .timeLimit(.minutes(5)))
struct NestedDeadlineStopsRecordTests {
    struct OwnError: Error {}
    struct SiblingError: Error {}
    /// A failure that is a value of its own, boxed anew for each.
    struct Numbered: Error { let number: Int }

    static func stop(_ error: any Error = OwnError()) -> NestedDeadlineStop {
        NestedDeadlineStop(error: error, end: TimeLimitEnd(clock: ElapsedClock(TestClock()), deadline: .seconds(3)))
    }

    @Test func theRecordKeepsTheLatestStopsUpToItsCapacity() {
        var record = NestedDeadlineStops()
        let stops = (0...NestedDeadlineStops.capacity).map { _ in Self.stop() }
        for stop in stops.dropLast() { #expect(record.add(stop) == nil) }
        #expect(record.add(stops.last!) === stops.first)  // the oldest makes room
        let taken = record.takeAll()
        #expect(taken.count == NestedDeadlineStops.capacity)
        #expect(zip(taken, stops.dropFirst()).allSatisfy { $0 === $1 })
        #expect(record.takeAll().isEmpty)
    }

    /// Each stop is found for its own failure, whichever told the limit last; the limit asks once.
    @Test func eachStopIsFoundForItsOwnFailure() {
        let failures: [any Error] = [Numbered(number: 0), SiblingError(), Numbered(number: 0)]
        for asked in failures.indices {
            let signal = TimeLimitSignal()
            let stops = failures.map { Self.stop($0) }
            for stop in stops { signal.noteDeadlineStop(stop) }
            let found = signal.takeDeadlineStops(of: failures[asked])
            #expect(found.count == 1 && found.first === stops[asked].end, "failure \(asked)")
            #expect(signal.takeDeadlineStops(of: failures[asked]).isEmpty, "failure \(asked)")
        }
    }

    /// Past its capacity the limit keeps the latest stops: the oldest is not found, and the limit
    /// decides as if no policy had told it of that one.
    @Test func theOldestStopPastTheCapacityIsNotFound() {
        let failures: [any Error] = (0...NestedDeadlineStops.capacity).map { Numbered(number: $0) }
        for asked in [0, 1, NestedDeadlineStops.capacity] {
            let signal = TimeLimitSignal()
            for failure in failures { signal.noteDeadlineStop(Self.stop(failure)) }
            #expect(signal.takeDeadlineStops(of: failures[asked]).count == (asked == 0 ? 0 : 1), "failure \(asked)")
        }
    }

    /// One failure several policies stopped with (a policy around a policy, which passes the inner
    /// one's failure on): the limit reads every stop of it.
    @Test func everyStopOfOneFailureIsFound() {
        let failure: any Error = OwnError()
        let signal = TimeLimitSignal()
        let first = Self.stop(failure)
        let second = Self.stop(failure)
        signal.noteDeadlineStop(first)
        signal.noteDeadlineStop(Self.stop(SiblingError()))
        signal.noteDeadlineStop(second)
        let found = signal.takeDeadlineStops(of: failure)
        #expect(found.count == 2 && found.first === first.end && found.last === second.end)
    }

    /// A failure of the app's that is a class instance, whose `deinit` is the app's code.
    final class Tattletale: Error, Sendable {
        let released: @Sendable () -> Void
        init(released: @escaping @Sendable () -> Void) { self.released = released }
        deinit { self.released() }
    }

    /// The limit releases what it drops, a stop past its capacity or one taken for no failure of
    /// the attempt's, after letting go of its lock: releasing may run the app's code.
    @Test func theAppsFailuresAreReleasedOutsideTheLock() throws {
        let heldAtRelease = Recorder<Bool>()
        for dropped in ["past the capacity", "taken"] {
            let signal = TimeLimitSignal()
            signal.noteDeadlineStop(
                Self.stop(Tattletale { heldAtRelease.record(signal.deadlineStopRecord?.isHeld ?? true) }))
            if dropped == "taken" {
                #expect(signal.takeDeadlineStops(of: OwnError()).isEmpty)
            } else {
                for _ in 0..<NestedDeadlineStops.capacity { signal.noteDeadlineStop(Self.stop()) }
            }
            #expect(heldAtRelease.values.last == false, "\(dropped): \(heldAtRelease.values)")
        }
        #expect(heldAtRelease.values.count == 2)
    }
}
